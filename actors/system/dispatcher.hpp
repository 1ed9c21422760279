// The scheduler's executor: where task actors send their invocations when workers run them.
// Routes a task's enqueue to the matching actor of its task list (spawned on first use) and
// its run and cancel to the worker actor of the shard that granted the slot; registers
// workers (Bistro's rules for a shard id already held).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/typed_actor.hpp>

#include "actors/matching/matching_actor.hpp"
#include "actors/worker/worker_actor.hpp"

namespace troupe::actors {

struct RegistrationOutcome {
  worker_actor worker;      ///< where the worker's session sends heartbeats and reports
  HealthTimeouts timeouts;  ///< the worker applies the same
  bool start_clean = false; ///< it replaced an earlier instance of its shard
};

using dispatcher_actor = executor_actor::extend<
    // from RPC: a worker registers (info, link); the reply is the outcome or why it was refused
    caf::reacts_to<register_atom, WorkerInfo, std::shared_ptr<WorkerLink>, Reply<RegistrationOutcome>>>;

struct DispatcherOptions {
  HealthTimeouts timeouts;
  /// A new instance may replace an UNHEALTHY one of the same shard (not only a MUST_DIE one).
  bool replace_unhealthy = false;
  /// Global limits per task list; lists not named are unlimited.
  std::map<std::string, MatchingLimits> task_lists;
  /// Per-worker rate limits by shard id (tasks/s); absent: unlimited.
  std::map<std::string, double> worker_rates;
  Duration cancel_grace = std::chrono::seconds(10);
};

dispatcher_actor spawn_dispatcher(caf::actor_system& system, DispatcherOptions options);

}  // namespace troupe::actors
