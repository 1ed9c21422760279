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
//  - no two invocations of one task ran at the same time on the workers.
#pragma once

#include <string>
#include <vector>

#include "storage/history_store.hpp"
#include "test/sim/sim_ledger.hpp"
#include "test/sim/sim_workload.hpp"

namespace troupe::sim {

/// One problem per string, each naming the workflow, task, invocation and times involved.
std::vector<std::string> check_schedule(const Workload& workload, storage::HistoryStore& store, const Ledger& ledger);

}  // namespace troupe::sim
