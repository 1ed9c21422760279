// The scheduler's actor for one worker shard: Bistro's health machine, the invocations the
// worker was given (running and unsure-if-running), the notify sequence, and the RPC line to
// it (WorkerLink). Reports from the worker are checked against what it was given, forwarded
// to their task actors, and acknowledged only once the task's event is durable.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/caf_types.hpp"
#include "actors/matching/matching_actor.hpp"
#include "actors/system/actor_probe.hpp"
#include "actors/worker/failure_streak.hpp"
#include "actors/worker/health_machine.hpp"
#include "actors/worker/worker_link.hpp"
#include "actors/worker/worker_orders.hpp"
#include "actors/worker/worker_view.hpp"

namespace troupe {
class NodeLog;
}  // namespace troupe

namespace troupe::actors {

class WorkerBook;

/// A callback travelling in a message: the way RPC threads (which are not actors) get answers.
template <class T>
struct Reply {
  std::function<void(Result<T>)> deliver;
};

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, Reply<T>&) {
  return f(caf::meta::type_name("Reply"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkerInfo& x) {
  return f(caf::meta::type_name("WorkerInfo"), x.shard_id, x.hostname, x.pid, x.instance_id, x.worker_id,
           x.task_lists, x.resource_id, x.max_concurrent_sessions, x.registrations);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Fence& x) {
  return f(caf::meta::type_name("Fence"), x.epoch, x.sequence);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, std::shared_ptr<WorkerLink>&) {
  return f(caf::meta::type_name("WorkerLink"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkerOrder& x) {
  storage::EnumByte<WorkerOrderKind> kind{x.kind};
  return f(caf::meta::type_name("WorkerOrder"), x.shard_id, kind.byte, x.immediate, x.deadline_us,
           x.exit_when_drained);
}

}  // namespace troupe::actors

// Local messages only (between the scheduler's actors), never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::WorkerView)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<troupe::actors::WorkerView>)

namespace troupe::actors {

/// What a drain does to the sessions a worker holds (Deadline Cloud ends a stopping worker's
/// sessions): nothing while it is not drained; they move elsewhere once their running action
/// ended (an eventual drain); or they move now, a running envEnter cancelled (an immediate
/// drain, an eventual one past its deadline, or a DRAINED worker).
enum class SessionDrain : uint8_t { NONE, AFTER_RUNNING_ACTION, NOW };

/// The worker actor's own timers besides the health timer.
enum class WorkerTimer : uint8_t { DRAIN_DEADLINE, QUARANTINE_OVER };

using worker_actor = caf::typed_actor<
    // from the dispatcher: run this granted invocation on the worker
    caf::reacts_to<run_atom, Invocation, task_port>,
    // from the dispatcher: cancel an invocation (id, executor, grace in microseconds)
    caf::reacts_to<cancel_atom, std::string, std::string, int64_t>,
    // from the dispatcher: a revived task's invocation this worker ran before the scheduler
    // restarted: kept if the worker still runs it, else reported LOST
    caf::reacts_to<adopt_atom, Invocation, task_port>,
    // from the dispatcher: answers once the invocation is over for this worker (see
    // executor_actor's settled_atom); at once if it does not hold it
    caf::replies_to<settled_atom, std::string, std::string>::with<bool>,
    // from the dispatcher, for a task that passivates: reports on the invocation go to `to`
    caf::replies_to<park_atom, std::string, std::string, task_port>::with<bool>,
    // its own timer: the recovery window may have closed; invocations it runs that nobody
    // adopted go
    caf::reacts_to<wake_atom>,
    // from the dispatcher: the recovery window now closes in this many microseconds (<= 0: now)
    caf::reacts_to<recovered_atom, int64_t>,
    // from RPC: the worker's heartbeat; the reply is its HealthState as the scheduler sees it
    caf::reacts_to<heartbeat_atom, Reply<HealthState>>,
    // from RPC: the worker is shutting down (why, the grace its tasks get in microseconds): it
    // takes no new tasks from now on
    caf::reacts_to<stop_atom, std::string, int64_t>,
    // from RPC: the worker delivered every outcome and exits: nothing of it runs any more
    caf::reacts_to<finished_atom>,
    // from RPC: STARTED or HEARTBEAT; the reply says whether cancellation was requested
    caf::reacts_to<report_atom, TaskReport, Reply<bool>>,
    // from RPC: an invocation ended; the reply comes once its outcome is durable
    caf::reacts_to<update_atom, TaskReport, Reply<bool>>,
    // from the link's callbacks: runTask's answer carried the invocation's outcome, which the
    // worker keeps until acknowledged once durable
    caf::reacts_to<update_atom, TaskReport>,
    // its own: acknowledges the outcomes that became durable since the last time, in one call
    caf::reacts_to<acknowledge_atom>,
    // from RPC: the same instance connected again over a new link
    caf::reacts_to<register_atom, std::shared_ptr<WorkerLink>>,
    // from the dispatcher: the instance's health and id
    caf::replies_to<describe_atom>::with<uint8_t /* HealthState */, std::string /* instance id */>,
    // from the dispatcher: replaced by a new instance (true: what the old one left was killed,
    // so its invocations fail over at once) or told to die (false: they wait for its lease)
    caf::reacts_to<kill_atom, std::string /* reason */, bool /* replaced */>,
    // from the link's callbacks: getRunningTasks answered (ok, ids, error)
    caf::reacts_to<associate_atom, uint64_t /* link epoch */, bool, std::vector<std::string> /* held */,
                   std::vector<std::string> /* of them, ended */, std::vector<std::string> /* open sessions */,
                   std::string>,
    // from the link's callbacks: runTask answered (id, what it said as a Sent in worker_actor.cpp,
    // error); not sent for an answer that carried the invocation's outcome, which settles it
    caf::reacts_to<sent_atom, std::string, uint8_t, std::string>,
    // from the link's callbacks: notifyIfTasksNotRunning answered (ok, the ids it asked
    // about, the ids not running)
    caf::reacts_to<notify_atom, bool, std::vector<std::string>, std::vector<std::string>>,
    // its own health timer
    caf::reacts_to<timeout_atom, uint64_t /* generation */>,
    // from the dispatcher: an operator's drain, undrain or forgive; the answer is the worker as
    // operators see it after it
    caf::replies_to<operate_atom, WorkerOrder>::with<WorkerView>,
    // from the dispatcher: the worker as operators see it
    caf::replies_to<view_atom>::with<WorkerView>,
    // its own standing timers (a WorkerTimer, generation)
    caf::reacts_to<wake_atom, uint8_t, uint64_t>,
    // from the store's thread: the write an operator's answer waits for is over (ticket, and
    // why it failed: none if it is durable)
    caf::reacts_to<persisted_atom, uint64_t, caf::error>,
    // from the dispatcher, for a session actor: open the session on the worker; the answer is
    // envEnter's outcome once it ended (SUCCEEDED when it has none). UNAVAILABLE when the call
    // failed with the connection (the worker may hold the session: opening again is safe)
    caf::replies_to<open_atom, SessionOpen>::with<TaskReport>,
    // from the dispatcher, for a session actor: close the session on the worker; the answer is
    // whether envExit ran, and its outcome
    caf::replies_to<close_atom, std::string /* session */>::with<bool, TaskReport>,
    // from the dispatcher, for a session actor: stop a session's envEnter or envExit (its
    // invocation id) if it runs now; it ends CANCELED. The worker ignores one that does not run
    caf::reacts_to<cancel_atom, session_atom, std::string>,
    // from the link's callbacks: openSession or closeSession answered (call, ran, outcome, error)
    caf::reacts_to<session_atom, uint64_t, bool, TaskReport, caf::error>,
    // from the dispatcher: how many session slots of the worker sessions hold now (a drained
    // worker keeps none: it is DRAINED once the last one left)
    caf::reacts_to<session_atom, uint32_t>>::extend_with<probe_port>;

struct WorkerSetup {
  WorkerInfo info;
  std::shared_ptr<WorkerLink> link;
  HealthTimeouts timeouts;
  /// The scheduler incarnation's fence counter, shared by every worker actor (nullptr: one of
  /// its own, epoch 0).
  std::shared_ptr<FenceCounter> fences;
  /// The matching actor of each of the worker's task lists.
  std::map<std::string, matching_actor> matchers;
  /// Per-worker dispatch rate (tasks/s); 0: unlimited.
  double rate = 0;
  /// Until then (the scheduler's recovery window), an invocation the worker runs that no task
  /// has claimed is kept for a revived task to adopt; after it, such an invocation is
  /// cancelled (the worker was told to start clean).
  caf::actor_clock::time_point orphans_kept_until{};
  /// Whether an invocation's workflow is closed (so no task will ever take it back); empty:
  /// never known. What the worker runs of a closed workflow is cancelled at once, not kept
  /// until the recovery window closes: its task ended while the scheduler was restarting.
  std::function<bool(const std::string& invocation_id)> workflow_closed;
  /// Where the instance's health changes are journaled and the shard's standing is kept
  /// (nullptr: nowhere, as in tests that do not look; standing then starts ACTIVE).
  std::shared_ptr<WorkerBook> book;
  /// When failures quarantine the worker.
  QuarantinePolicy quarantine;
  /// How long an interrupted invocation gets between SIGTERM and SIGKILL (an immediate drain).
  Duration kill_grace = std::chrono::seconds(10);
  /// Told whether the worker takes new sessions now (its health and standing let it take
  /// tasks), each time that may have changed; empty: nobody listens.
  std::function<void(bool accepts)> sessions_accepting;
  /// Told how a drain treats the sessions the worker holds (SessionDrain), each time that
  /// changes; empty: nobody listens.
  std::function<void(SessionDrain)> sessions_draining;
  /// Told the sessions the worker said it holds open, each time it says what it runs; empty:
  /// nobody listens.
  std::function<void(std::vector<std::string>)> sessions_found;
  /// The wall clock, microseconds since the epoch: drain deadlines and quarantine ends are
  /// kept in the worker's record and outlive this process. Empty: the system clock.
  std::function<int64_t()> now_us;
  /// Where the actor takes a seat while it lives, for the admin shell (nullptr: nowhere).
  std::shared_ptr<ActorRoster> roster;
  /// The node's log: the worker's status changes, quarantines, failovers (nullptr: nowhere).
  std::shared_ptr<NodeLog> log;
};

worker_actor spawn_worker(caf::actor_system& system, WorkerSetup setup);

}  // namespace troupe::actors
