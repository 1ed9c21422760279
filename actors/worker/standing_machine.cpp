// The standing table. Reading guide: a drain withdraws the worker's slots and waits until it
// runs nothing (IDLE) to call it DRAINED; an immediate drain (or an eventual one whose deadline
// passed) interrupts what runs first, which then runs elsewhere without using an attempt.
// Undrain offers the slots again. A failure streak quarantines an ACTIVE worker for a backoff
// that doubles with each quarantine until an attempt succeeds there or an operator forgives it.
// A drain outranks a quarantine: a worker being drained gets no tasks either way, and undrain
// makes it ACTIVE. The quarantine's count is kept: the next failure after it ends quarantines
// again, for twice as long.
#include "actors/worker/standing_machine.hpp"

namespace troupe::actors {
namespace {

using S = Standing;
using E = StandingEvent;
using A = StandingAction;
using R = Row<S, E, A>;

std::vector<R> rows() {
  return {
      {S::ACTIVE, E::DRAIN, S::DRAINING, {A::STOP_ASSIGNING, A::ARM_DRAIN_DEADLINE, A::CHECK_IDLE}},
      {S::ACTIVE, E::DRAIN_NOW, S::DRAINING, {A::STOP_ASSIGNING, A::INTERRUPT_RUNNING, A::CHECK_IDLE}},
      {S::ACTIVE, E::UNDRAIN, S::ACTIVE, {}, true, "not drained"},
      {S::ACTIVE, E::IDLE, S::ACTIVE, {}, true, "nothing waits for it"},
      {S::ACTIVE, E::FAILURE_STREAK, S::QUARANTINED, {A::STOP_ASSIGNING, A::ARM_QUARANTINE_TIMER}},
      {S::ACTIVE, E::QUARANTINE_OVER, S::ACTIVE, {}, true, "a timer of a quarantine already over"},
      {S::ACTIVE, E::FORGIVEN, S::ACTIVE, {A::CLEAR_FAILURES}},

      {S::DRAINING, E::DRAIN, S::DRAINING, {A::ARM_DRAIN_DEADLINE, A::CHECK_IDLE}},
      {S::DRAINING, E::DRAIN_NOW, S::DRAINING, {A::INTERRUPT_RUNNING, A::CHECK_IDLE}},
      {S::DRAINING, E::UNDRAIN, S::ACTIVE, {A::ACCEPT_TASKS}},
      {S::DRAINING, E::IDLE, S::DRAINED, {A::END_DRAIN}},
      {S::DRAINING, E::FAILURE_STREAK, S::DRAINING, {}, true, "a draining worker gets no new tasks anyway"},
      {S::DRAINING, E::QUARANTINE_OVER, S::DRAINING, {}, true, "the drain replaced the quarantine"},
      {S::DRAINING, E::FORGIVEN, S::DRAINING, {A::CLEAR_FAILURES}},

      // Asked again (perhaps now to stop the process): the drain is over already.
      {S::DRAINED, E::DRAIN, S::DRAINED, {A::END_DRAIN}},
      {S::DRAINED, E::DRAIN_NOW, S::DRAINED, {A::END_DRAIN}},
      {S::DRAINED, E::UNDRAIN, S::ACTIVE, {A::ACCEPT_TASKS}},
      {S::DRAINED, E::IDLE, S::DRAINED, {}, true, "already drained"},
      {S::DRAINED, E::FAILURE_STREAK, S::DRAINED, {}, true, "a drained worker gets no tasks anyway"},
      {S::DRAINED, E::QUARANTINE_OVER, S::DRAINED, {}, true, "the drain replaced the quarantine"},
      {S::DRAINED, E::FORGIVEN, S::DRAINED, {A::CLEAR_FAILURES}},

      {S::QUARANTINED, E::DRAIN, S::DRAINING, {A::ARM_DRAIN_DEADLINE, A::CHECK_IDLE}},
      {S::QUARANTINED, E::DRAIN_NOW, S::DRAINING, {A::INTERRUPT_RUNNING, A::CHECK_IDLE}},
      {S::QUARANTINED, E::UNDRAIN, S::QUARANTINED, {}, true, "not drained; `forgive` ends a quarantine"},
      {S::QUARANTINED, E::IDLE, S::QUARANTINED, {}, true, "a quarantine ends by time or forgiveness"},
      {S::QUARANTINED, E::FAILURE_STREAK, S::QUARANTINED, {}, true, "already quarantined"},
      {S::QUARANTINED, E::QUARANTINE_OVER, S::ACTIVE, {A::ACCEPT_TASKS}},
      {S::QUARANTINED, E::FORGIVEN, S::ACTIVE, {A::CLEAR_FAILURES, A::ACCEPT_TASKS}},
  };
}

}  // namespace

std::string_view StandingMachineTraits::name(Standing s) {
  switch (s) {
    case S::ACTIVE: return "ACTIVE";
    case S::DRAINING: return "DRAINING";
    case S::DRAINED: return "DRAINED";
    case S::QUARANTINED: return "QUARANTINED";
  }
  return "?";
}

std::string_view StandingMachineTraits::name(StandingEvent e) {
  switch (e) {
    case E::DRAIN: return "DRAIN";
    case E::DRAIN_NOW: return "DRAIN_NOW";
    case E::UNDRAIN: return "UNDRAIN";
    case E::IDLE: return "IDLE";
    case E::FAILURE_STREAK: return "FAILURE_STREAK";
    case E::QUARANTINE_OVER: return "QUARANTINE_OVER";
    case E::FORGIVEN: return "FORGIVEN";
  }
  return "?";
}

std::string_view StandingMachineTraits::name(StandingAction a) {
  switch (a) {
    case A::STOP_ASSIGNING: return "stop assigning";
    case A::ACCEPT_TASKS: return "accept tasks";
    case A::INTERRUPT_RUNNING: return "interrupt running";
    case A::ARM_DRAIN_DEADLINE: return "arm drain deadline";
    case A::CHECK_IDLE: return "check idle";
    case A::END_DRAIN: return "end drain";
    case A::ARM_QUARANTINE_TIMER: return "arm quarantine timer";
    case A::CLEAR_FAILURES: return "clear failures";
  }
  return "?";
}

const StateTable<StandingMachineTraits>& StandingMachine::table() {
  static const StateTable<StandingMachineTraits> instance(rows());
  return instance;
}

StandingTransition StandingMachine::transition(Standing state, StandingEvent event) {
  // The table defines every pair (the specification test checks it).
  return *table().transition(state, event);
}

std::optional<Standing> StandingMachine::parse(std::string_view name) {
  return StateTable<StandingMachineTraits>::parse_state(name);
}

std::string_view worker_status(HealthState health, Standing standing, bool said_stopped) {
  switch (health) {
    case HealthState::UNHEALTHY: return "NOT_RESPONDING";
    case HealthState::MUST_DIE: return said_stopped ? "STOPPED" : "NOT_RESPONDING";
    case HealthState::STOPPING: return "STOPPING";
    case HealthState::NEW:
    case HealthState::HEALTHY: break;
  }
  return standing == Standing::ACTIVE ? "STARTED" : StandingMachineTraits::name(standing);
}

}  // namespace troupe::actors
