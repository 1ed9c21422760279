// due_timers: the task actor's timer rules (see effects_of and timer_applies in task_actor.cpp)
// restated over recorded times instead of the moments the timers were armed.
#include "actors/task/task_deadlines.hpp"

#include <algorithm>

namespace troupe::actors {

bool may_passivate(const TaskModel& model) {
  if (model.kill_requested) return false;
  switch (model.state) {
    case TaskState::DISPATCHED:
    case TaskState::RUNNING:
    case TaskState::DELAY_EXECUTION:
    case TaskState::PAUSED:
      return true;
    default:
      return false;
  }
}

std::vector<DueTimer> due_timers(const TaskModel& model, const TimeoutsSpec& timeouts, int64_t now_us) {
  std::vector<DueTimer> due;
  if (!may_passivate(model)) return due;
  if (model.state == TaskState::PAUSED) return due;  // paused: every clock stands still
  if (timeouts.schedule_to_close) {
    due.push_back({TimerKind::SCHEDULE_TO_CLOSE, now_us + (*timeouts.schedule_to_close - model.elapsed(now_us)).count()});
  }
  if (model.state == TaskState::DELAY_EXECUTION) {
    due.push_back({TimerKind::BACKOFF, model.delay_until_us});
    return due;
  }
  // On an executor. A handed-off invocation waits for its token, within its startToClose; it has
  // nothing to heartbeat.
  if (timeouts.start_to_close) {
    due.push_back({TimerKind::START_TO_CLOSE, model.dispatched_us + timeouts.start_to_close->count()});
  }
  if (timeouts.heartbeat && model.state == TaskState::RUNNING && !model.awaiting_completion) {
    due.push_back({TimerKind::HEARTBEAT, model.heartbeat_us + timeouts.heartbeat->count()});
  }
  return due;
}

int64_t next_due_us(const TaskModel& model, const TimeoutsSpec& timeouts, int64_t now_us) {
  int64_t next = 0;
  for (const auto& timer : due_timers(model, timeouts, now_us)) {
    if (next == 0 || timer.at_us < next) next = timer.at_us;
  }
  return next;
}

}  // namespace troupe::actors
