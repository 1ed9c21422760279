// A session's timers from its model and definition.
#include "actors/session/session_timers.hpp"

#include <algorithm>
#include <chrono>

namespace troupe::actors {
namespace {

int64_t us(Duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); }

}  // namespace

std::vector<SessionDue> session_timers(const SessionModel& model, const SessionSpec& spec) {
  std::vector<SessionDue> due;
  if (SessionMachine::is_terminal(model.state)) return due;
  if (model.state == SessionState::CREATING && model.creation_deadline_us > 0) {
    due.push_back({SessionTimer::CREATION, model.creation_deadline_us});
  }
  if (spec.execution_timeout && model.first_placed_us > 0 && !model.execution_timed_out) {
    due.push_back({SessionTimer::EXECUTION, model.first_placed_us + us(*spec.execution_timeout)});
  }
  if (model.state == SessionState::REESTABLISHING) {
    // Only a resource can come back: a worker that declared none is waited for no time.
    const int64_t window = model.resource.empty() ? 0 : us(spec.reestablish_within);
    due.push_back({SessionTimer::REESTABLISH, model.lost_us + window});
  }
  return due;
}

SessionEvent after_window(const SessionModel& model, const SessionSpec& spec) {
  // Attempts past the first are recreations, or moves off a drained worker (which count none).
  const uint32_t placements_after_first = model.attempt > 0 ? model.attempt - 1 : 0;
  const uint32_t recreations = placements_after_first - std::min(placements_after_first, model.moves);
  if (spec.on_failure == SessionFailurePolicy::RECREATE && recreations < spec.max_recreates) {
    return SessionEvent::RECREATE;
  }
  return SessionEvent::ABANDON;
}

}  // namespace troupe::actors
