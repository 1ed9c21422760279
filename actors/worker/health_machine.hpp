// A worker's health (Facebook Bistro's model) as a plain table, plus the timeout rule that the
// scheduler and the worker both apply with the same timeouts. Health is soft state and is not
// persisted: after a scheduler restart every worker starts NEW again and must re-associate.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "actors/state_table.hpp"
#include "schema/duration.hpp"

namespace troupe::actors {

/// One worker instance's health. The scheduler's worker actor (one per shard id) starts an
/// instance in NEW when a worker registers; the registration counts as its first HEARTBEAT.
enum class HealthState : uint8_t {
  NEW,        ///< registered; its running tasks are not known yet, so it gets no tasks
  HEALTHY,    ///< associated and heartbeating: it gets tasks
  UNHEALTHY,  ///< heartbeats are late: it keeps its tasks but gets no new ones
  MUST_DIE,   ///< lost, replaced or told to die; terminal for this instance. Until its lease
              ///< runs out (or a new instance replaces it) its invocations may still run there
  STOPPING,   ///< shutting down (a signal): it keeps its tasks for their grace and gets no new
              ///< ones; it says STOPPED once every outcome is delivered
};

enum class HealthEvent : uint8_t {
  ASSOCIATED,      ///< getRunningTasks answered: the worker's running tasks are known
  HEARTBEAT,       ///< a heartbeat (or the registration) arrived
  HEARTBEAT_LATE,  ///< no heartbeat for `unhealthy_after` (see health_timeout_event)
  HEARTBEAT_LOST,  ///< no heartbeat for `must_die_after` (see health_timeout_event)
  REPLACED,        ///< a new worker instance with the same shard id registered
  SUICIDE,         ///< the worker asked to die, or an operator or the scheduler decided it must
  LEASE_EXPIRED,   ///< a MUST_DIE instance's lease ran out: the worker side has killed its tasks
  STOP_REQUESTED,  ///< the worker is shutting down (WorkerSession.stopping)
  STOPPED,         ///< the worker delivered every outcome and exits (WorkerSession.stopped)
};

/// What the scheduler's worker actor does for a transition, in this order. Nothing is persisted:
/// the task actors persist what follows from FAIL_OVER_INVOCATIONS.
enum class HealthAction : uint8_t {
  ARM_HEALTH_TIMER,       ///< (re)arm the one health timer: delay from until_health_timeout
  QUERY_RUNNING_TASKS,    ///< call getRunningTasks unless one is in flight; the answer: ASSOCIATED
  RECONCILE,              ///< confirm the invocations it reports running; fail over the rest
  ACCEPT_TASKS,           ///< offer its slots to its task lists (CreditPool add_worker/set_slots)
  STOP_ASSIGNING,         ///< withdraw its free slots from its task lists; running tasks carry on
  REQUEST_SUICIDE,        ///< call requestSuicide on the instance (best effort, not awaited)
  FAIL_OVER_INVOCATIONS,  ///< send FAILOVER to the task of every invocation it held or may hold
  STOP_HEALTH_TIMER,      ///< disarm the health timer; the instance is done
  LEAVE_TASK_LISTS,       ///< give up its place (and slots) in its task lists for good
};

struct HealthMachineTraits {
  using State = HealthState;
  using Event = HealthEvent;
  using Action = HealthAction;
  static constexpr size_t states = 5;
  static constexpr size_t events = 9;
  static std::string_view name(HealthState s);
  static std::string_view name(HealthEvent e);
  static std::string_view name(HealthAction a);
};

using HealthTransition = Transition<HealthState, HealthAction>;

struct HealthMachine {
  static const StateTable<HealthMachineTraits>& table();

  /// The transition for `event` in `state`; NOT_ALLOWED_IN_STATE if there is none. Every event
  /// is defined in MUST_DIE, as ignored.
  static Result<HealthTransition> transition(HealthState state, HealthEvent event) {
    return table().transition(state, event);
  }

  /// Only a HEALTHY worker gets new tasks, and a worker starts new tasks only while it sees
  /// itself HEALTHY.
  static bool accepts_tasks(HealthState state) { return state == HealthState::HEALTHY; }
  /// MUST_DIE: the worker side kills its tasks and exits.
  static bool is_terminal(HealthState state) { return state == HealthState::MUST_DIE; }
  /// Going away (dying or shutting down): an invocation granted to it before it withdrew its
  /// slots is not sent; it never started.
  static bool is_leaving(HealthState state) { return is_terminal(state) || state == HealthState::STOPPING; }
};

/// The heartbeat timeouts, the same on scheduler and workers (the cluster config carries them).
/// With the defaults a dead worker is detected within 3 heartbeat intervals.
struct HealthTimeouts {
  /// How often a worker heartbeats. Default: 1s
  Duration heartbeat_interval = std::chrono::seconds(1);
  /// A HEALTHY worker without a heartbeat this long becomes UNHEALTHY: no new tasks. Shorter
  /// reacts faster to a stalled worker but takes it out on a brief network hiccup. Default: 2s
  Duration unhealthy_after = std::chrono::seconds(2);
  /// A worker without a heartbeat this long must die: it gets no new tasks and is told to exit.
  /// Default: 3s
  Duration must_die_after = std::chrono::seconds(3);
  /// How long a worker keeps running its invocations without an acknowledged heartbeat: it
  /// rides out a scheduler restart (or a network cut) that is shorter, and kills them when it
  /// runs out. The scheduler fails a lost worker's invocations over only once the lease has run
  /// out since the last heartbeat it received (or a new instance of the shard replaced it), so
  /// no two attempts of a task run at once. Longer survives longer outages; shorter retries a
  /// lost worker's tasks sooner. Default: 30s
  Duration lease = std::chrono::seconds(30);

  /// INVALID_ARGUMENT unless 0 < heartbeat_interval < unhealthy_after < must_die_after <= lease.
  Result<void> validate() const;
};

/// The health that `since_last_heartbeat` without a heartbeat implies for a worker in `current`:
///   MUST_DIE stays MUST_DIE; since >= must_die_after gives MUST_DIE; NEW stays NEW (only
///   ASSOCIATED ends it); since >= unhealthy_after gives UNHEALTHY; otherwise HEALTHY (a fresh
///   heartbeat is what brings UNHEALTHY back).
/// The scheduler measures `since` from the last heartbeat it received. The worker measures it
/// from the sending time of its last acknowledged heartbeat, which is earlier, so on equal clock
/// rates a cut-off worker reaches MUST_DIE (and kills its tasks) no later than the scheduler does
/// (and fails them over). A negative `since` counts as 0.
HealthState health_after(HealthState current, Duration since_last_heartbeat,
                         const HealthTimeouts& timeouts);

/// The event the health timer feeds the machine: HEARTBEAT_LATE when health_after turns HEALTHY
/// into UNHEALTHY, HEARTBEAT_LOST when it gives MUST_DIE from any other state, LEASE_EXPIRED in
/// MUST_DIE once the lease has run out; empty otherwise.
std::optional<HealthEvent> health_timeout_event(HealthState current, Duration since_last_heartbeat,
                                                const HealthTimeouts& timeouts);

/// How much longer, without a heartbeat, until health_timeout_event gives an event: the delay of
/// the health timer. 0 if it gives one already; in MUST_DIE, until the lease runs out.
std::optional<Duration> until_health_timeout(HealthState current, Duration since_last_heartbeat,
                                             const HealthTimeouts& timeouts);

}  // namespace troupe::actors
