// The invariants a schedule must keep whatever faults it went through, checked against the
// histories the scheduler wrote and the ledger of what really ran on the simulated workers:
//  - every history's sequences run 1, 2, 3, ... with no gap; each invocation is dispatched once
//    and completed at most once, a task's next invocation only after the previous one ended,
//    and nothing follows workflowFinalized;
//  - every acknowledged workflow closes as designed: SUCCESS unless a task fails by design, or
//    ran out of attempts that faults on the worker side used up;
//  - every attempt used up has a cause on the worker side: its designed failure, a timeout, or
//    the loss of the worker process it ran on (or, if it never ran, the process that held its
//    shard when it was dispatched): a scheduler restart never uses one up by itself;
//  - an invocation that provably never started keeps its attempt, and one that ran is never
//    called never-started;
//  - no two invocations of one task ran at the same time on the workers;
//  - where the network was clean, no worker's lease ran out unless the scheduler was down for
//    all of it but a few heartbeat intervals: a scheduler restart alone kills no task.
// Every attempt has a start-to-close timer, which a scheduler restart arms afresh from the
// revival: a designed timeout may then not fire.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "actors/worker/health_machine.hpp"
#include "storage/history_store.hpp"
#include "test/sim/sim_ledger.hpp"
#include "test/sim/sim_workload.hpp"

namespace troupe::sim {

struct Findings {
  /// Broken invariants, one per string, each naming the workflow, task, invocation and times.
  std::vector<std::string> problems;
  /// Departures from the design that are known and reported apart (see the test file): a
  /// designed timeout that a scheduler restart re-armed from the revival.
  std::vector<std::string> known;
  /// What the histories show happened, for coverage: failovers by kind, retries by cause.
  std::map<std::string, size_t> counts;
};

/// `clean_network`: nothing but crashes and held commits disturbed the schedule, so no worker
/// may lose its lease unless the scheduler was down for most of it (`timeouts`).
Findings check_schedule(const Workload& workload, storage::HistoryStore& store, const Ledger& ledger,
                        bool clean_network, const actors::HealthTimeouts& timeouts);

}  // namespace troupe::sim
