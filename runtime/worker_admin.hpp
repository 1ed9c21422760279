// ClientService's worker methods (workers, drainWorker, undrainWorker, forgiveWorker): what the
// dispatcher answers about workers, put on the wire. Kept apart from scheduler_rpc.cpp, which
// serves workflows.
#pragma once

#include <vector>

#include "actors/worker/worker_view.hpp"
#include "schema/gateway.capnp.h"
#include "storage/history_store.hpp"

namespace troupe::runtime {

/// Fills `out` with `view`, and with `journal` (entries of the worker's journal) if given.
void fill_worker_summary(schema::WorkerSummary::Builder out, const actors::WorkerView& view,
                         const std::vector<storage::StoredEvent>* journal = nullptr);

}  // namespace troupe::runtime
