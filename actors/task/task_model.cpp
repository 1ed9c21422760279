// TaskModel::apply: one history event, one machine event.
#include "actors/task/task_model.hpp"

namespace troupe::actors {

using Body = schema::EventBody;

// The history stores a Loss as its FailoverKind.
static_assert(static_cast<uint16_t>(schema::FailoverKind::MAY_HAVE_STARTED) == uint8_t(Loss::MAY_HAVE_STARTED));
static_assert(static_cast<uint16_t>(schema::FailoverKind::NEVER_STARTED) == uint8_t(Loss::NEVER_STARTED));
static_assert(static_cast<uint16_t>(schema::FailoverKind::LOST_WHILE_RUNNING) == uint8_t(Loss::WHILE_RUNNING));
static_assert(static_cast<uint16_t>(schema::FailoverKind::RESULT_LOST) == uint8_t(Loss::RESULT_LOST));

std::optional<TaskEvent> TaskModel::event_of(Body::Which body, TaskState state) {
  switch (body) {
    case Body::TASK_DISPATCHING:
      return state == TaskState::DELAY_EXECUTION ? TaskEvent::DISPATCH : TaskEvent::START;
    case Body::TASK_DISPATCHED: return TaskEvent::DISPATCHED;
    case Body::TASK_RUNNING: return TaskEvent::RUNNING;
    case Body::TASK_HEARTBEAT: return TaskEvent::HEARTBEAT;
    // A hand-off is news from a running invocation, as a heartbeat is: the task stays RUNNING.
    case Body::TASK_AWAITING_COMPLETION: return TaskEvent::HEARTBEAT;
    case Body::TASK_TIMED_OUT: return TaskEvent::TIMEOUT;
    case Body::TASK_RETRY_SCHEDULED: return TaskEvent::RETRY;
    case Body::TASK_PAUSE_REQUESTED: return TaskEvent::PAUSE;
    case Body::TASK_PAUSED: return TaskEvent::PAUSED;
    case Body::TASK_KILL_REQUESTED: return TaskEvent::KILL;
    case Body::TASK_KILLED: return TaskEvent::KILLED;
    case Body::TASK_SUCCEEDED: return TaskEvent::SUCCEEDED;
    case Body::TASK_FORCED_SUCCESS: return TaskEvent::SUCCEEDED;
    case Body::TASK_FAILED: return TaskEvent::FAILED;
    case Body::TASK_FAILOVER: return TaskEvent::FAILOVER;
    default: return std::nullopt;
  }
}

Result<void> TaskModel::apply(const EventView& event) {
  const auto body = event.body;
  if (body.isTaskScheduled()) {
    if (applied != 0) {
      // Scheduled again by a rerun: a fresh instance, once the previous one ended. The count of
      // dispatches carries on, so every invocation id stays unique within the workflow.
      if (!TaskMachine::is_terminal(state) && state != TaskState::PAUSED) {
        return fail(Errc::NOT_ALLOWED_IN_STATE, "task '" + name + "' was scheduled again while " +
                                                    std::string(TaskMachineTraits::name(state)));
      }
      TaskModel fresh;
      fresh.name = std::move(name);
      fresh.dispatches = dispatches;
      *this = std::move(fresh);
    }
    input_json = to_string(body.getTaskScheduled().getInput());
    ++applied;
    return ok();
  }
  auto machine_event = event_of(body.which(), state);
  if (!machine_event) {
    return fail(Errc::INVALID_ARGUMENT, "task '" + name + "' was given a non-task event");
  }
  auto t = TaskMachine::transition(state, *machine_event);
  if (!t) return fail(t.error().code, "task '" + name + "': " + t.error().message);

  const int64_t now = event.timestamp_us;
  switch (body.which()) {
    case Body::TASK_DISPATCHING:
      if (state == TaskState::SUBMITTED || state == TaskState::PAUSED) {
        if (attempt == 0) attempt = 1;
        segment_start_us = now;
      }
      break;
    case Body::TASK_DISPATCHED: {
      if (state == TaskState::SUBMITTED || state == TaskState::PAUSED) {
        // Started with a slot free at once: this is its start too.
        if (attempt == 0) attempt = 1;
        segment_start_us = now;
      }
      auto d = body.getTaskDispatched();
      invocation_id = to_string(d.getInvocationId());
      executor = to_string(d.getWorkerShard());
      dispatch_fence = Fence{d.getSchedulerEpoch(), d.getNotifySequence()};
      previous_invocation.clear();
      previous_executor.clear();
      dispatched_us = now;
      if (started_us == 0) started_us = now;
      ++dispatches;
      awaiting_completion = false;
      break;
    }
    case Body::TASK_AWAITING_COMPLETION:
      awaiting_completion = true;
      break;
    case Body::TASK_RUNNING:
      heartbeat_us = now;
      never_started = 0;
      break;
    case Body::TASK_HEARTBEAT:
      progress = to_string(body.getTaskHeartbeat().getProgress());
      heartbeat_us = now;
      break;
    case Body::TASK_RETRY_SCHEDULED: {
      auto r = body.getTaskRetryScheduled();
      if (TaskMachine::is_on_executor(state)) {
        previous_invocation = invocation_id;
        previous_executor = executor;
      }
      if (r.getNextAttempt() != attempt) never_started = 0;
      attempt = r.getNextAttempt();
      delay_until_us = now + r.getBackoffUs();
      failure_reason = to_string(r.getCause().getReason());
      failure_details = to_string(r.getCause().getDetails());
      invocation_id.clear();
      executor.clear();
      break;
    }
    case Body::TASK_TIMED_OUT:
      failure_reason = std::string("Timeout:") +
                       (body.getTaskTimedOut().getKind() == schema::TimeoutKind::HEARTBEAT ? "heartbeat"
                        : body.getTaskTimedOut().getKind() == schema::TimeoutKind::START_TO_CLOSE
                            ? "startToClose"
                        : body.getTaskTimedOut().getKind() == schema::TimeoutKind::SCHEDULE_TO_START
                            ? "scheduleToStart"
                            : "scheduleToClose");
      invocation_id.clear();
      break;
    case Body::TASK_KILL_REQUESTED:
      kill_requested = true;
      if (body.getTaskKillRequested().getImmediate()) kill_immediate = true;
      break;
    case Body::TASK_PAUSE_REQUESTED:
      if (TaskMachine::is_on_executor(state)) pause_requested = true;
      break;
    case Body::TASK_SUCCEEDED:
      result = to_string(body.getTaskSucceeded().getResult());
      invocation_id.clear();
      break;
    case Body::TASK_FAILED: {
      auto f = body.getTaskFailed().getFailure();
      failure_reason = to_string(f.getReason());
      failure_details = to_string(f.getDetails());
      invocation_id.clear();
      break;
    }
    case Body::TASK_FAILOVER:
      failure_reason = "Failover";
      failure_details = to_string(body.getTaskFailover().getReason());
      {
        // A kind this version does not know may have started: the attempt counts.
        const auto kind = static_cast<uint16_t>(body.getTaskFailover().getKind());
        failover = kind <= static_cast<uint16_t>(Loss::RESULT_LOST) ? static_cast<Loss>(kind) : Loss::MAY_HAVE_STARTED;
      }
      if (failover == Loss::NEVER_STARTED) ++never_started;
      invocation_id.clear();
      executor.clear();
      break;
    default:
      break;
  }
  // Pausing banks the running time; finishing stops the clock.
  if ((t->to == TaskState::PAUSED || TaskMachine::is_terminal(t->to)) && segment_start_us >= 0) {
    banked_us += now - segment_start_us;
    segment_start_us = -1;
  }
  if (TaskMachine::is_terminal(t->to)) ended_us = now;
  if (t->to == TaskState::KILLED || t->to == TaskState::PAUSED) invocation_id.clear();
  if (invocation_id.empty()) awaiting_completion = false;
  if (t->to == TaskState::PAUSED || TaskMachine::is_terminal(t->to)) pause_requested = false;
  state = t->to;
  ++applied;
  return ok();
}

Duration TaskModel::elapsed(int64_t now_us) const {
  return Duration(banked_us + (segment_start_us >= 0 ? now_us - segment_start_us : 0));
}

std::string TaskModel::failure_message() const {
  if (failure_details.empty()) return failure_reason;
  return failure_reason + ": " + failure_details;
}

std::string TaskModel::canonical() const {
  std::string out;
  auto field = [&](const char* key, const std::string& value) {
    out += key;
    out += '=';
    out += std::to_string(value.size());
    out += ':';
    out += value;
    out += ';';
  };
  field("name", name);
  field("state", std::string(TaskMachineTraits::name(state)));
  field("attempt", std::to_string(attempt));
  field("invocation", invocation_id);
  field("executor", executor);
  field("input", input_json);
  field("progress", progress);
  field("result", result);
  field("failure_reason", failure_reason);
  field("failure_details", failure_details);
  field("kill_requested", kill_requested ? "1" : "0");
  field("kill_immediate", kill_immediate ? "1" : "0");
  field("awaiting_completion", awaiting_completion ? "1" : "0");
  field("pause_requested", pause_requested ? "1" : "0");
  field("delay_until", std::to_string(delay_until_us));
  field("banked", std::to_string(banked_us));
  field("segment_start", std::to_string(segment_start_us));
  field("dispatched", std::to_string(dispatched_us));
  field("heartbeat", std::to_string(heartbeat_us));
  field("dispatches", std::to_string(dispatches));
  field("fence", dispatch_fence.to_string());
  field("failover", std::string(loss_name(failover)));
  field("never_started", std::to_string(never_started));
  field("previous_invocation", previous_invocation);
  field("previous_executor", previous_executor);
  field("started", std::to_string(started_us));
  field("ended", std::to_string(ended_us));
  field("applied", std::to_string(applied));
  return out;
}

}  // namespace troupe::actors
