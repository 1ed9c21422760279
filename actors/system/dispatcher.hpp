// The scheduler's executor: where task actors send their invocations when workers run them.
// Routes a task's enqueue to the matching actor of its task list (spawned on first use) and
// its run and cancel to the worker actor of the shard that granted the slot; registers
// workers (Bistro's rules for a shard id already held). After a restart it hands the
// invocations revived tasks were running to their workers' actors as those register again.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/typed_actor.hpp>

#include "actors/matching/matching_actor.hpp"
#include "actors/session/session_host.hpp"
#include "actors/worker/worker_actor.hpp"

namespace troupe::actors {

class WorkerBook;
struct SchedulerMeters;

struct RegistrationOutcome {
  worker_actor worker;      ///< where the worker's session sends heartbeats and reports
  HealthTimeouts timeouts;  ///< the worker applies the same
  /// This scheduler knew an earlier instance of the shard (dead or replaced): whatever the
  /// worker still runs from then is not the scheduler's any more. False after a scheduler
  /// restart, when a revived task may take it back.
  bool start_clean = false;
  /// The registration's place in the fence order: above everything dispatched before it.
  Fence fence;
};

using dispatcher_actor = executor_actor::extend_with<session_host>::extend<
    // from RPC: a worker registers (info, link); the reply is the outcome or why it was refused
    caf::reacts_to<register_atom, WorkerInfo, std::shared_ptr<WorkerLink>, Reply<RegistrationOutcome>>,
    // its own timer: the recovery window closed for adoptions waiting on this shard (empty: for
    // the questions of settled_atom about shards that have not come back)
    caf::reacts_to<timeout_atom, std::string /* shard */>,
    // from the node: the open workflows are revived (how many). None: the recovery window
    // closes now; some: it stays open for `recovery_window` from now, for their tasks to
    // adopt what their workers run
    caf::reacts_to<recovered_atom, uint64_t>,
    // from RPC: an operator's drain, undrain or forgive of a worker, live or not; the answer is
    // the worker after it, once that is durable. NOT_FOUND for a shard that never registered
    caf::replies_to<operate_atom, WorkerOrder>::with<WorkerView>,
    // from RPC: every worker that ever registered (empty shard) or one, as operators see them
    caf::replies_to<view_atom, std::string /* shard */>::with<std::vector<WorkerView>>,
    // from the store's thread: the write an operator's answer waits for is over (ticket, and
    // why it failed: none if it is durable)
    caf::reacts_to<persisted_atom, uint64_t, caf::error>,
    // from a worker actor: whether its worker takes new sessions now (shard, instance, accepts)
    caf::reacts_to<accept_atom, std::string, std::string, bool>,
    // from a worker actor: what a drain does to the sessions its worker holds (shard, instance,
    // a SessionDrain): the session actors placed there hear it
    caf::reacts_to<drain_atom, std::string, std::string, uint8_t>,
    // from a worker actor: the sessions its worker says it holds open (shard, instance, keys),
    // before it takes new ones: they keep their slots there until claimed, or are closed there
    caf::reacts_to<claim_atom, std::string, std::string, std::vector<std::string>>,
    // its own timer: the recovery window may have closed; the sessions workers hold that no
    // session claimed are closed there
    caf::reacts_to<wake_atom>>::extend_with<probe_port>;

struct DispatcherOptions {
  HealthTimeouts timeouts;
  /// The scheduler incarnation's fence counter (nullptr: epoch 0, as in tests).
  std::shared_ptr<FenceCounter> fences;
  /// See WorkerSetup::workflow_closed.
  std::function<bool(const std::string& invocation_id)> workflow_closed;
  /// A new instance may replace an UNHEALTHY one of the same shard (not only a MUST_DIE one).
  bool replace_unhealthy = false;
  /// Global limits per task list; lists not named are unlimited.
  std::map<std::string, MatchingLimits> task_lists;
  /// Per-worker rate limits by shard id (tasks/s); absent: unlimited.
  std::map<std::string, double> worker_rates;
  /// After a restart, how long the scheduler waits for the workers that ran its revived
  /// invocations to register again: an invocation whose shard has not come back by then fails
  /// over, and an invocation a worker runs that no revived task claims is cancelled only after
  /// it (its task may not have been revived yet). It counts from the start, and again from
  /// the end of the revival if that found open workflows; it closes at once if it found none.
  Duration recovery_window = std::chrono::seconds(10);
  /// Where every accepted registration is recorded durably, and its worker actor journals
  /// health changes (nullptr: nowhere, as in tests that do not look).
  std::shared_ptr<WorkerBook> book;
  /// When failures quarantine a worker.
  QuarantinePolicy quarantine;
  /// How long an invocation a drain interrupts gets between SIGTERM and SIGKILL.
  Duration kill_grace = std::chrono::seconds(10);
  /// The wall clock in µs since the Unix epoch, for drain deadlines and quarantines (empty:
  /// the system's; a test passes its own).
  std::function<int64_t()> now_us;
  /// Where the matching actors post why their task lists' tasks wait, which describe reads
  /// (nullptr: nowhere, as in tests that do not look).
  std::shared_ptr<WaitBoard> waits;
  /// Where it, its matching actors and its worker actors take seats while they live, for the
  /// admin shell (nullptr: nowhere).
  std::shared_ptr<ActorRoster> roster;
  /// Where the matching actors set their queue depths (SchedulerMeters::queue_depths); nullptr:
  /// nowhere.
  std::shared_ptr<SchedulerMeters> meters;
  /// The node's log, which it and its worker actors tell of registrations, workers' status
  /// changes and failovers (nullptr: nowhere).
  std::shared_ptr<NodeLog> log;
};

dispatcher_actor spawn_dispatcher(caf::actor_system& system, DispatcherOptions options);

}  // namespace troupe::actors
