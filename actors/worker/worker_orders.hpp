// Operators' orders to a worker (troupe worker drain / undrain / forgive) as the standing table
// takes them: which event an order is, which orders a standing refuses, and what an order does
// to the drain a worker's record keeps. Plain code, shared by the live worker's actor and the
// dispatcher, which carries out orders for a worker with no live instance on its record alone.
#pragma once

#include <cstdint>
#include <string>

#include "actors/worker/standing_machine.hpp"
#include "schema/result.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

enum class WorkerOrderKind : uint8_t { DRAIN, UNDRAIN, FORGIVE };

struct WorkerOrder {
  std::string shard_id;
  WorkerOrderKind kind = WorkerOrderKind::DRAIN;
  bool immediate = false;          ///< DRAIN: interrupt what runs rather than wait for it
  int64_t deadline_us = 0;         ///< DRAIN: interrupt what still runs then (wall clock); 0: none
  bool exit_when_drained = false;  ///< DRAIN: the worker process stops once drained
};

/// The standing event `order` is; INVALID_ARGUMENT for a kind this scheduler does not know.
Result<StandingEvent> event_of(const WorkerOrder& order);

/// Whether a worker of `standing` takes `order`: NOT_ALLOWED_IN_STATE, saying what to do
/// instead, for an undrain of a quarantined worker (which is not drained). Orders that change
/// nothing because they are done already (undraining an active worker) are taken.
Result<void> admissible(Standing standing, const WorkerOrder& order);

/// The drain a worker of standing `from` keeps after `order`, given at `now_us`: a drain of a
/// worker not draining starts afresh; a drain of a draining one replaces its immediacy and
/// deadline (the operator's latest word); `--exit`, once asked for, stays until the drain ends;
/// an undrain ends the drain.
void apply_to_drain(storage::WorkerDrainRecord& drain, Standing from, const WorkerOrder& order, int64_t now_us);

/// `order` carried out on the record of a worker with no live instance. Unless it `may_run`
/// tasks a revived task could take back (right after a scheduler restart, before it registered
/// again), nothing of the scheduler's runs there, so a drain is over at once; otherwise the
/// drain waits for the worker to come back and say what it runs. Errors as event_of and
/// admissible; the record is unchanged then.
Result<void> apply_offline(storage::WorkerRecord& record, const WorkerOrder& order, int64_t now_us, bool may_run);

}  // namespace troupe::actors
