// Applying a session's history events through its table.
#include "actors/session/session_model.hpp"

namespace troupe::actors {
namespace {

using Body = schema::EventBody;

std::string message_of(schema::Failure::Reader f) {
  std::string out = to_string(f.getReason());
  if (f.getDetails().size() > 0) out += ": " + to_string(f.getDetails());
  return out;
}

}  // namespace

std::optional<SessionEvent> session_event_of(schema::EventBody::Reader body) {
  switch (body.which()) {
    case Body::SESSION_CREATING:
      return body.getSessionCreating().getAttempt() <= 1 ? SessionEvent::FIRST_TASK_READY : SessionEvent::RECREATE;
    case Body::SESSION_OPENED:
      return body.getSessionOpened().getReestablished() ? SessionEvent::WORKER_BACK : SessionEvent::PLACED;
    case Body::SESSION_FAILED: return SessionEvent::ABANDON;
    case Body::SESSION_ENTERED: return SessionEvent::ENTERED;
    case Body::SESSION_ENTER_FAILED: return SessionEvent::ENTER_FAILED;
    case Body::SESSION_TASKS_DONE: return SessionEvent::TASKS_DONE;
    case Body::SESSION_TASK_FAILED: return SessionEvent::TASK_FAILED;
    case Body::SESSION_CANCELLED: return SessionEvent::CANCEL;
    case Body::SESSION_TIMED_OUT:
      return body.getSessionTimedOut().getKind() == schema::SessionTimeoutKind::CREATION
                 ? SessionEvent::CREATION_TIMED_OUT
                 : SessionEvent::EXECUTION_TIMED_OUT;
    case Body::SESSION_EXITED: return SessionEvent::EXITED;
    case Body::SESSION_WORKER_LOST: return SessionEvent::WORKER_LOST;
    case Body::SESSION_WORKER_DRAINED:
      return body.getSessionWorkerDrained().getImmediate() ? SessionEvent::WORKER_DRAINED_NOW
                                                           : SessionEvent::WORKER_DRAINED;
    default: return std::nullopt;
  }
}

Result<void> SessionModel::apply(const EventView& event) {
  const auto body = event.body;
  auto session_event = session_event_of(body);
  if (!session_event) return fail(Errc::INVALID_ARGUMENT, "session '" + name + "' was given a non-session event");
  const SessionTransition t = SessionMachine::transition(state, *session_event);
  if (t.ignored) {
    return fail(Errc::NOT_ALLOWED_IN_STATE, "session '" + name + "' recorded " +
                                                std::string(SessionMachineTraits::name(*session_event)) + " in state " +
                                                std::string(SessionMachineTraits::name(state)) +
                                                ", which takes no such event (" + std::string(t.note) + ")");
  }
  const int64_t now = event.timestamp_us;
  // The first cause of a failure is the one kept; a cause that does not fail the session (a
  // timeout while it closes, envEnter failing once it was cancelled) is not one.
  auto failed = [&](std::string reason, std::string details) {
    if (!failure_reason.empty() || (t.to != SessionState::FAILING && t.to != SessionState::FAILED)) return;
    failure_reason = std::move(reason);
    failure_details = std::move(details);
  };
  switch (body.which()) {
    case Body::SESSION_CREATING: {
      auto c = body.getSessionCreating();
      attempt = c.getAttempt() == 0 ? 1 : c.getAttempt();
      creation_timeout_us = c.getCreationTimeoutUs();
      creation_deadline_us = creation_timeout_us > 0 ? now + creation_timeout_us : 0;
      lost_us = 0;
      break;
    }
    case Body::SESSION_OPENED: {
      auto o = body.getSessionOpened();
      worker = to_string(o.getWorkerShard());
      instance = to_string(o.getInstanceId());
      resource = to_string(o.getResourceId());
      if (o.getRecreateToken().size() > 0) recreate_token = to_string(o.getRecreateToken());
      if (o.getReestablished()) ++reestablished;
      // Its env actions' outcomes are its placement's: those of an earlier one (a worker it was
      // drained off or lost) do not describe this one.
      entered = false;  // envEnter runs on it (again)
      enter_failure.clear();
      exit_succeeded.reset();
      exit_failure.clear();
      if (first_placed_us == 0) first_placed_us = now;
      creation_deadline_us = 0;
      lost_us = 0;
      break;
    }
    case Body::SESSION_ENTERED:
      entered = true;
      break;
    case Body::SESSION_ENTER_FAILED:
      enter_failure = message_of(body.getSessionEnterFailed());
      failed("EnvEnterFailed", enter_failure);
      break;
    case Body::SESSION_TASK_FAILED: {
      auto f = body.getSessionTaskFailed();
      failed("TaskFailed", "task '" + to_string(f.getTaskName()) + "' failed: " + message_of(f.getFailure()));
      break;
    }
    case Body::SESSION_TIMED_OUT:
      if (*session_event == SessionEvent::CREATION_TIMED_OUT) {
        failed("Timeout:creation", "no worker with a free session slot took it within its creationTimeout");
      } else {
        execution_timed_out = true;
        failed("Timeout:execution", "it stayed open longer than its executionTimeout");
      }
      creation_deadline_us = 0;
      break;
    case Body::SESSION_EXITED: {
      auto x = body.getSessionExited();
      exit_succeeded = x.getSucceeded();
      exit_failure = x.getSucceeded() ? std::string() : message_of(x.getFailure());
      break;
    }
    case Body::SESSION_WORKER_LOST: {
      auto l = body.getSessionWorkerLost();
      lost_us = now;
      lost_reason = "worker " + to_string(l.getWorkerShard()) + " " + to_string(l.getReason());
      // While closing, the loss closes it; while failing, the failure has its cause already;
      // otherwise what follows (WORKER_BACK, RECREATE, ABANDON) decides.
      break;
    }
    case Body::SESSION_FAILED: {
      auto f = body.getSessionFailed();
      failed(to_string(f.getReason()), to_string(f.getDetails()).empty() ? lost_reason : to_string(f.getDetails()));
      break;
    }
    default: break;  // SESSION_TASKS_DONE, SESSION_CANCELLED: the state says it all
  }
  if (state == SessionState::MOVING && t.to == SessionState::CREATING) {
    // Off its drained worker: the next placement is a new attempt, which recreates nothing.
    ++attempt;
    ++moves;
    creation_deadline_us = creation_timeout_us > 0 ? now + creation_timeout_us : 0;
    lost_us = 0;
  }
  if (SessionMachine::is_terminal(t.to)) {
    ended_us = now;
    creation_deadline_us = 0;
  }
  state = t.to;
  ++applied;
  return ok();
}

std::string SessionModel::failure_message() const {
  if (failure_details.empty()) return failure_reason;
  return failure_reason + ": " + failure_details;
}

std::string SessionModel::canonical() const {
  std::string out;
  auto field = [&](const char* key, const std::string& value) { canonical_field(out, key, value); };
  field("name", name);
  field("state", std::string(SessionMachineTraits::name(state)));
  field("attempt", std::to_string(attempt));
  field("moves", std::to_string(moves));
  field("worker", worker);
  field("instance", instance);
  field("resource", resource);
  field("recreate_token", recreate_token);
  field("creation_deadline_us", std::to_string(creation_deadline_us));
  field("creation_timeout_us", std::to_string(creation_timeout_us));
  field("first_placed_us", std::to_string(first_placed_us));
  field("execution_timed_out", execution_timed_out ? "1" : "0");
  field("lost_us", std::to_string(lost_us));
  field("lost_reason", lost_reason);
  field("reestablished", std::to_string(reestablished));
  field("entered", entered ? "1" : "0");
  field("enter_failure", enter_failure);
  field("exit_succeeded", exit_succeeded ? (*exit_succeeded ? "1" : "0") : "-");
  field("exit_failure", exit_failure);
  field("failure_reason", failure_reason);
  field("failure_details", failure_details);
  field("ended_us", std::to_string(ended_us));
  field("applied", std::to_string(applied));
  return out;
}

}  // namespace troupe::actors
