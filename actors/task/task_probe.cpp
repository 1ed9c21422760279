#include "actors/task/task_probe.hpp"

#include "actors/system/probe_text.hpp"
#include "actors/task/task_deadlines.hpp"
#include "actors/task/task_machine.hpp"

namespace troupe::actors {
namespace {

const char* timer_name(TimerKind kind) {
  switch (kind) {
    case TimerKind::SCHEDULE_TO_START: return "scheduleToStart timeout";
    case TimerKind::START_TO_CLOSE: return "startToClose timeout";
    case TimerKind::SCHEDULE_TO_CLOSE: return "scheduleToClose timeout";
    case TimerKind::HEARTBEAT: return "heartbeat timeout";
    case TimerKind::BACKOFF: return "retry backoff ends";
    case TimerKind::KILL_GRACE: return "kill grace ends";
  }
  return "timer";
}

/// Why a task in `model`'s state does not move on by itself; empty when it ended.
std::string waits_for(const TaskModel& model, const TaskSpec& task, const TaskActorFacts& facts) {
  if (auto unwritten = waiting_for_durability(facts.unwritten); !unwritten.empty()) return unwritten;
  if (facts.frozen) return "its workflow to finish passivating";
  if (model.kill_requested && TaskMachine::is_on_executor(model.state)) {
    return "worker '" + model.executor + "' to confirm invocation " + model.invocation_id + " was killed";
  }
  switch (model.state) {
    case TaskState::SUBMITTED:
      if (facts.settling) {
        return "its last attempt's invocation " + model.previous_invocation + " to be over on '" +
               model.previous_executor + "' before the next starts";
      }
      return "its turn to be dispatched";
    case TaskState::DELAY_EXECUTION:
      return "its retry backoff to end at " + probe_time(model.delay_until_us);
    case TaskState::DISPATCHING:
      if (!facts.session.empty()) {
        return "a worker slot in task list '" + task.task_list + "', on the worker that holds its session '" +
               facts.session + "'";
      }
      return "a worker slot in task list '" + task.task_list + "'";
    case TaskState::DISPATCHED:
      return "worker '" + model.executor + "' to start invocation " + model.invocation_id;
    case TaskState::RUNNING:
      if (model.awaiting_completion) return "completeTask or failTask with its token (asyncCompletion)";
      return "invocation " + model.invocation_id + " to end on worker '" + model.executor + "'";
    case TaskState::PAUSED:
      return "its workflow to resume";
    case TaskState::FAILOVER:
      return "a decision on its lost invocation " + model.invocation_id;
    default:
      return {};
  }
}

}  // namespace

ActorProbe probe_task(const TaskModel& model, const TaskSpec& task, const TaskActorFacts& facts, int64_t now_us) {
  ActorProbe p;
  p.kind = "task";
  p.state = std::string(TaskMachineTraits::name(model.state));
  p.field("attempt", std::to_string(model.attempt));
  p.field("task list", task.task_list);
  if (!facts.session.empty()) p.field("session", facts.session);
  if (!model.invocation_id.empty()) p.field("invocation", model.invocation_id);
  if (!model.executor.empty()) p.field("worker", model.executor);
  p.field("dispatches", std::to_string(model.dispatches));
  if (model.started_us) p.field("started", probe_time(model.started_us));
  if (model.heartbeat_us) p.field("last heartbeat", probe_time(model.heartbeat_us));
  if (!model.progress.empty()) p.field("progress", model.progress);
  if (!model.failure_reason.empty()) p.field("last failure", model.failure_message());
  if (model.kill_requested) p.field("kill", model.kill_reason.empty() ? "requested" : model.kill_reason);
  if (facts.unwritten) p.field("unwritten effects", std::to_string(facts.unwritten));
  for (const auto& due : due_timers(model, task.timeouts, now_us)) p.timers.push_back({timer_name(due.kind), due.at_us});
  p.waits_for = waits_for(model, task, facts);
  return p;
}

}  // namespace troupe::actors
