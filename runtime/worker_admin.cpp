// WorkerView -> WorkerSummary.
#include "runtime/worker_admin.hpp"

#include "actors/worker/standing_machine.hpp"
#include "storage/codec.hpp"

namespace troupe::runtime {

void fill_worker_summary(schema::WorkerSummary::Builder out, const actors::WorkerView& view,
                         const std::vector<storage::StoredEvent>* journal) {
  const auto& record = view.record;
  out.setName(view.shard_id);
  out.setWorkerId(record.worker_id);
  out.setStatus(view.status);
  out.setHealth(view.health);
  out.setStanding(record.standing.empty() ? std::string(actors::StandingMachineTraits::name(actors::Standing::ACTIVE))
                                          : record.standing);
  out.setLive(view.live);
  out.setHostname(record.hostname);
  out.setPid(record.pid);
  out.setResourceId(record.resource_id);
  auto lists = out.initTaskLists(static_cast<unsigned>(view.task_lists.size()));
  for (unsigned i = 0; i < lists.size(); ++i) {
    lists[i].setName(view.task_lists[i].name);
    lists[i].setSlots(view.task_lists[i].slots);
    lists[i].setUsed(view.task_lists[i].used);
  }
  auto running = out.initRunning(static_cast<unsigned>(view.running.size()));
  for (unsigned i = 0; i < running.size(); ++i) running.set(i, view.running[i]);
  out.setLastHeartbeatAgeMs(view.last_heartbeat_age_us < 0 ? -1 : view.last_heartbeat_age_us / 1000);
  storage::write_worker_drain(out.initDrain(), record.drain);
  out.setQuarantinedUntilUs(record.quarantined_until_us);
  out.setQuarantines(record.quarantines);
  storage::write_worker_failures(out.initFailures(static_cast<unsigned>(record.failures.size())), record.failures);
  out.setFirstRegisteredUs(record.first_registered_us);
  out.setLastRegisteredUs(record.last_registered_us);
  out.setRegistrations(record.registrations);
  auto recent = out.initRecent(static_cast<unsigned>(view.recent.size()));
  for (unsigned i = 0; i < recent.size(); ++i) {
    const auto& r = view.recent[i];
    recent[i].setInvocationId(r.invocation_id);
    recent[i].setTask(r.task);
    recent[i].setAttempt(r.attempt);
    recent[i].setOutcome(r.outcome);
    recent[i].setEndedUs(r.ended_us);
  }
  if (journal) {
    auto entries = out.initJournal(static_cast<unsigned>(journal->size()));
    for (unsigned i = 0; i < entries.size(); ++i) {
      // A damaged entry is left empty rather than fail the whole answer.
      if (auto decoded = storage::DecodedEvent::decode((*journal)[i].packed)) {
        entries.setWithCaveats(i, decoded->get());
      }
    }
  }
}

}  // namespace troupe::runtime
