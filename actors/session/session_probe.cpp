#include "actors/session/session_probe.hpp"

#include "actors/session/session_machine.hpp"
#include "actors/session/session_timers.hpp"
#include "actors/system/probe_text.hpp"

namespace troupe::actors {
namespace {

const char* timer_name(SessionTimer timer) {
  switch (timer) {
    case SessionTimer::CREATION: return "creationTimeout";
    case SessionTimer::EXECUTION: return "executionTimeout";
    case SessionTimer::REESTABLISH: return "re-establishment window ends";
  }
  return "timer";
}

std::string waits_for(const SessionModel& model, size_t unwritten) {
  if (auto pending = waiting_for_durability(unwritten); !pending.empty()) return pending;
  switch (model.state) {
    case SessionState::WAITING: return "one of its tasks to be ready";
    case SessionState::CREATING: return "a worker with a free session slot that serves its task lists";
    case SessionState::ENTERING: return "envEnter to end on worker '" + model.worker + "'";
    case SessionState::OPEN: return "";
    case SessionState::REESTABLISHING:
      return "worker '" + model.worker + "' (its resource) to come back: " + model.lost_reason;
    case SessionState::MOVING: return "envExit on drained worker '" + model.worker + "', then another worker";
    case SessionState::CLOSING: return "envExit to end on worker '" + model.worker + "'";
    case SessionState::FAILING: return "envExit to end on worker '" + model.worker + "' before it fails";
    default: return {};
  }
}

}  // namespace

ActorProbe probe_session(const SessionModel& model, const SessionSpec& spec, size_t unwritten) {
  ActorProbe p;
  p.kind = "session";
  p.state = std::string(SessionMachineTraits::name(model.state));
  p.field("attempt", std::to_string(model.attempt));
  if (!model.worker.empty()) p.field("worker", model.worker);
  if (!model.resource.empty()) p.field("resource", model.resource);
  p.field("tasks", std::to_string(spec.tasks.size()));
  if (model.moves) p.field("moves", std::to_string(model.moves));
  if (model.reestablished) p.field("re-established", std::to_string(model.reestablished));
  if (!model.enter_failure.empty()) p.field("envEnter failure", model.enter_failure);
  if (!model.failure_reason.empty()) p.field("failure", model.failure_message());
  if (unwritten) p.field("unwritten effects", std::to_string(unwritten));
  for (const auto& due : session_timers(model, spec)) p.timers.push_back({timer_name(due.timer), due.at_us});
  p.waits_for = waits_for(model, unwritten);
  return p;
}

}  // namespace troupe::actors
