// The order of one session's actions on its worker.
#include "actors/agent/session_runner.hpp"

#include <algorithm>

namespace troupe::actors {

SessionStep SessionRunner::open() {
  SessionStep step;
  if (opened_ || closed_) return step;
  opened_ = true;
  if (has_env_enter_) {
    running_ = SessionActionRef{SessionActionKind::ENV_ENTER, {}};
    step.start = running_;
  } else {
    entered_ = true;
    next(step);
  }
  return step;
}

SessionStep SessionRunner::add_task(std::string invocation_id) {
  SessionStep step;
  if (closed_ || (stopped_ && !running_)) {
    step.report.push_back({{SessionActionKind::TASK, std::move(invocation_id)}, SessionActionOutcome::NEVER_ATTEMPTED});
    step.closed = closed_;
    return step;
  }
  // Behind what runs: envEnter, a task, or (when it stopped) the action whose end decides.
  queued_.push_back(std::move(invocation_id));
  if (opened_ && !running_) next(step);
  return step;
}

SessionStep SessionRunner::ended(const SessionActionRef& action, SessionActionOutcome outcome) {
  SessionStep step;
  if (!running_ || *running_ != action || outcome == SessionActionOutcome::NEVER_ATTEMPTED) return step;
  running_.reset();
  step.report.push_back({action, outcome});
  switch (action.kind) {
    case SessionActionKind::ENV_ENTER:
      if (outcome == SessionActionOutcome::SUCCEEDED) {
        entered_ = true;
      } else {
        stopped_ = true;  // its tasks never run; envExit still does
        closing_ = true;
      }
      break;
    case SessionActionKind::TASK:
      // Whether that was its last attempt is the scheduler's to say.
      if (outcome != SessionActionOutcome::SUCCEEDED) held_ = true;
      break;
    case SessionActionKind::ENV_EXIT:
      closed_ = true;  // whatever its outcome: a failed envExit affects only itself
      never_attempt_queued(step);
      step.closed = true;
      return step;
  }
  next(step);
  return step;
}

bool SessionRunner::withdraw(const std::string& invocation_id) {
  auto it = std::find(queued_.begin(), queued_.end(), invocation_id);
  if (it == queued_.end()) return false;
  queued_.erase(it);
  return true;
}

SessionStep SessionRunner::proceed() {
  SessionStep step;
  held_ = false;
  if (opened_ && !running_) next(step);
  return step;
}

SessionStep SessionRunner::close() {
  SessionStep step;
  if (closed_) {
    step.closed = true;
    return step;
  }
  closing_ = true;
  stopped_ = true;
  if (!opened_) {
    // Never opened here: nothing was entered, so nothing is exited.
    closed_ = true;
    never_attempt_queued(step);
    step.closed = true;
    return step;
  }
  if (!running_) next(step);  // otherwise when the running action ends
  return step;
}

void SessionRunner::next(SessionStep& step) {
  if (closed_ || running_) return;
  if (closing_) {
    never_attempt_queued(step);
    if (has_env_exit_ && !exit_started_) {
      exit_started_ = true;
      running_ = SessionActionRef{SessionActionKind::ENV_EXIT, {}};
      step.start = running_;
    } else {
      closed_ = true;
      step.closed = true;
    }
    return;
  }
  if (entered_ && !held_ && !queued_.empty()) {
    running_ = SessionActionRef{SessionActionKind::TASK, std::move(queued_.front())};
    queued_.pop_front();
    step.start = running_;
  }
}

void SessionRunner::never_attempt_queued(SessionStep& step) {
  for (auto& id : queued_) {
    step.report.push_back({{SessionActionKind::TASK, std::move(id)}, SessionActionOutcome::NEVER_ATTEMPTED});
  }
  queued_.clear();
}

}  // namespace troupe::actors
