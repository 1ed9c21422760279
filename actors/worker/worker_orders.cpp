// Operators' orders to a worker as the standing table takes them.
#include "actors/worker/worker_orders.hpp"

namespace troupe::actors {

Result<StandingEvent> event_of(const WorkerOrder& order) {
  switch (order.kind) {
    case WorkerOrderKind::DRAIN: return order.immediate ? StandingEvent::DRAIN_NOW : StandingEvent::DRAIN;
    case WorkerOrderKind::UNDRAIN: return StandingEvent::UNDRAIN;
    case WorkerOrderKind::FORGIVE: return StandingEvent::FORGIVEN;
  }
  return fail(Errc::INVALID_ARGUMENT, "order " + std::to_string(static_cast<int>(order.kind)) +
                                          " for worker '" + order.shard_id +
                                          "' is none this scheduler knows (drain, undrain, forgive)");
}

Result<void> admissible(Standing standing, const WorkerOrder& order) {
  if (order.kind == WorkerOrderKind::UNDRAIN && standing == Standing::QUARANTINED) {
    return fail(Errc::NOT_ALLOWED_IN_STATE, "worker '" + order.shard_id +
                                                "' is QUARANTINED, not drained: `troupe worker forgive " +
                                                order.shard_id + "` ends a quarantine");
  }
  return ok();
}

void apply_to_drain(storage::WorkerDrainRecord& drain, Standing from, const WorkerOrder& order, int64_t now_us) {
  switch (order.kind) {
    case WorkerOrderKind::DRAIN:
      if (from == Standing::DRAINED) {
        drain.exit_when_drained = drain.exit_when_drained || order.exit_when_drained;
      } else if (from == Standing::DRAINING) {
        drain.immediate = order.immediate;
        drain.deadline_us = order.deadline_us;
        drain.exit_when_drained = drain.exit_when_drained || order.exit_when_drained;
      } else {
        drain = {order.immediate, order.deadline_us, order.exit_when_drained, now_us};
      }
      break;
    case WorkerOrderKind::UNDRAIN:
      if (from == Standing::DRAINING || from == Standing::DRAINED) drain = {};
      break;
    case WorkerOrderKind::FORGIVE: break;
  }
}

Result<void> apply_offline(storage::WorkerRecord& record, const WorkerOrder& order, int64_t now_us, bool may_run) {
  auto event = event_of(order);
  if (!event) return event.error();
  Standing standing = StandingMachine::parse(record.standing).value_or(Standing::ACTIVE);
  if (auto taken = admissible(standing, order); !taken) return taken.error();
  apply_to_drain(record.drain, standing, order, now_us);
  // No process to stop (its next start stays up, drained), unless one may still come back.
  if (!may_run) record.drain.exit_when_drained = false;
  const auto t = StandingMachine::transition(standing, *event);
  if (!t.ignored) {
    standing = t.to;
    // It runs nothing: a drain is over at once.
    if (t.actions.contains(StandingAction::CHECK_IDLE) && !may_run) {
      standing = StandingMachine::transition(standing, StandingEvent::IDLE).to;
    }
    if (t.actions.contains(StandingAction::CLEAR_FAILURES)) {
      record.failures.clear();
      record.quarantines = 0;
    }
  }
  record.standing = std::string(StandingMachineTraits::name(standing));
  if (standing != Standing::QUARANTINED) record.quarantined_until_us = 0;
  if (standing != Standing::DRAINING && standing != Standing::DRAINED) record.drain = {};
  return ok();
}

}  // namespace troupe::actors
