// When a task's timers are due, computed from its model alone. A task actor that passivates
// tells its workflow the earliest of them (the directory wakes the workflow then), and one
// revived from passivation arms each for the time that is left, so a timeout fires when it
// would have fired had the actor never gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "actors/task/task_model.hpp"
#include "schema/definition.hpp"

namespace troupe::actors {

enum class TimerKind : uint8_t {
  SCHEDULE_TO_START,
  START_TO_CLOSE,
  SCHEDULE_TO_CLOSE,
  HEARTBEAT,
  BACKOFF,
  KILL_GRACE,
};
constexpr size_t timer_kinds = 6;

struct DueTimer {
  TimerKind kind;
  int64_t at_us;  ///< microseconds since the Unix epoch; may be in the past
};

/// The timers a live task actor in `model`'s state holds, each due when its history says:
/// startToClose from the dispatch, heartbeat from the last start or heartbeat, scheduleToClose
/// after the time run so far, the backoff at its end. Only for the states a task may passivate
/// in (on an executor without a kill, waiting out a backoff, paused); empty for the others.
std::vector<DueTimer> due_timers(const TaskModel& model, const TimeoutsSpec& timeouts, int64_t now_us);

/// The earliest of due_timers(), or 0 when none is due.
int64_t next_due_us(const TaskModel& model, const TimeoutsSpec& timeouts, int64_t now_us);

/// Whether a task in `model`'s state may give up its actor: nothing of it runs in the scheduler
/// (it waits on an executor, a backoff, a resume or a completion token) and no kill is under way.
bool may_passivate(const TaskModel& model);

}  // namespace troupe::actors
