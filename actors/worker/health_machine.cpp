// The worker health table. Reading guide: a registered worker is NEW and is asked for its running
// tasks on each heartbeat until it answers (ASSOCIATED), which makes it HEALTHY; late heartbeats
// make it UNHEALTHY (no new tasks) and a heartbeat makes it HEALTHY again; a lost, replaced or
// suicidal worker MUST_DIE: it leaves its task lists and is told to die. Its invocations fail
// over once they are known dead: at once when a new instance replaced it (which kills what its
// predecessor left before it registers), else when its lease runs out (the worker kills its
// tasks by then). MUST_DIE ignores the rest (a heartbeat's reply tells the worker to exit).
// A worker shutting down says so (STOP_REQUESTED): STOPPING gets no new tasks whatever its
// heartbeats do, and its word that it STOPPED (every outcome delivered) fails over what is left at
// once, with no lease to wait for: nothing of it runs any more.
#include "actors/worker/health_machine.hpp"

#include <algorithm>

namespace troupe::actors {
namespace {

using S = HealthState;
using E = HealthEvent;
using A = HealthAction;
using R = Row<S, E, A>;

/// The ways out of a live state into MUST_DIE. A silent or suicidal worker's invocations wait
/// for its lease (the health timer now counts down to it); a replaced one's fail over at once.
void dying(std::vector<R>& rows, S s) {
  for (E e : {E::HEARTBEAT_LOST, E::SUICIDE}) {
    rows.push_back({s, e, S::MUST_DIE, {A::LEAVE_TASK_LISTS, A::REQUEST_SUICIDE, A::ARM_HEALTH_TIMER}});
  }
  rows.push_back({s, E::REPLACED, S::MUST_DIE,
                  {A::LEAVE_TASK_LISTS, A::REQUEST_SUICIDE, A::FAIL_OVER_INVOCATIONS, A::STOP_HEALTH_TIMER}});
  rows.push_back({s, E::LEASE_EXPIRED, s, {}, true, "a live worker holds no running-out lease"});
  rows.push_back({s, E::STOPPED, S::MUST_DIE, {A::LEAVE_TASK_LISTS, A::FAIL_OVER_INVOCATIONS, A::STOP_HEALTH_TIMER}});
  if (s != S::STOPPING) {
    rows.push_back({s, E::STOP_REQUESTED, S::STOPPING, {A::STOP_ASSIGNING, A::ARM_HEALTH_TIMER}});
  }
}

std::vector<R> rows() {
  std::vector<R> rows = {
      {S::NEW, E::ASSOCIATED, S::HEALTHY, {A::RECONCILE, A::ACCEPT_TASKS, A::ARM_HEALTH_TIMER}},
      {S::NEW, E::HEARTBEAT, S::NEW, {A::ARM_HEALTH_TIMER, A::QUERY_RUNNING_TASKS}},
      {S::NEW, E::HEARTBEAT_LATE, S::NEW, {}, true,
       "a NEW worker has no tasks to stop; only HEARTBEAT_LOST ends it"},
  };
  dying(rows, S::NEW);
  rows.insert(rows.end(), {
      {S::HEALTHY, E::ASSOCIATED, S::HEALTHY, {}, true, "already associated"},
      {S::HEALTHY, E::HEARTBEAT, S::HEALTHY, {A::ARM_HEALTH_TIMER}},
      {S::HEALTHY, E::HEARTBEAT_LATE, S::UNHEALTHY, {A::STOP_ASSIGNING, A::ARM_HEALTH_TIMER}},
  });
  dying(rows, S::HEALTHY);
  rows.insert(rows.end(), {
      {S::UNHEALTHY, E::ASSOCIATED, S::UNHEALTHY, {}, true, "already associated"},
      {S::UNHEALTHY, E::HEARTBEAT, S::HEALTHY, {A::ACCEPT_TASKS, A::ARM_HEALTH_TIMER}},
      {S::UNHEALTHY, E::HEARTBEAT_LATE, S::UNHEALTHY, {}, true, "already unhealthy"},
  });
  dying(rows, S::UNHEALTHY);
  rows.insert(rows.end(), {
      {S::STOPPING, E::ASSOCIATED, S::STOPPING, {}, true, "it takes no new tasks: nothing to offer"},
      {S::STOPPING, E::HEARTBEAT, S::STOPPING, {A::ARM_HEALTH_TIMER}},
      {S::STOPPING, E::HEARTBEAT_LATE, S::STOPPING, {}, true, "it gets no new tasks anyway"},
      {S::STOPPING, E::STOP_REQUESTED, S::STOPPING, {}, true, "already stopping"},
  });
  dying(rows, S::STOPPING);
  const S dead = S::MUST_DIE;
  rows.insert(rows.end(), {
      {dead, E::ASSOCIATED, dead, {}, true, "too late: it must die"},
      {dead, E::HEARTBEAT, dead, {}, true, "the heartbeat's reply tells the worker to die"},
      {dead, E::HEARTBEAT_LATE, dead, {}, true, "already must die"},
      {dead, E::HEARTBEAT_LOST, dead, {}, true, "already must die"},
      // The newcomer starts NEW, having killed what this instance left running.
      {dead, E::REPLACED, dead, {A::FAIL_OVER_INVOCATIONS, A::STOP_HEALTH_TIMER}},
      {dead, E::SUICIDE, dead, {}, true, "already must die"},
      {dead, E::LEASE_EXPIRED, dead, {A::FAIL_OVER_INVOCATIONS, A::STOP_HEALTH_TIMER}},
      {dead, E::STOP_REQUESTED, dead, {}, true, "already must die"},
      // Its word that nothing runs any more comes before its lease runs out.
      {dead, E::STOPPED, dead, {A::FAIL_OVER_INVOCATIONS, A::STOP_HEALTH_TIMER}},
  });
  return rows;
}

}  // namespace

std::string_view HealthMachineTraits::name(HealthState s) {
  switch (s) {
    case S::NEW: return "NEW";
    case S::HEALTHY: return "HEALTHY";
    case S::UNHEALTHY: return "UNHEALTHY";
    case S::MUST_DIE: return "MUST_DIE";
    case S::STOPPING: return "STOPPING";
  }
  return "?";
}

std::string_view HealthMachineTraits::name(HealthEvent e) {
  switch (e) {
    case E::ASSOCIATED: return "ASSOCIATED";
    case E::HEARTBEAT: return "HEARTBEAT";
    case E::HEARTBEAT_LATE: return "HEARTBEAT_LATE";
    case E::HEARTBEAT_LOST: return "HEARTBEAT_LOST";
    case E::REPLACED: return "REPLACED";
    case E::SUICIDE: return "SUICIDE";
    case E::LEASE_EXPIRED: return "LEASE_EXPIRED";
    case E::STOP_REQUESTED: return "STOP_REQUESTED";
    case E::STOPPED: return "STOPPED";
  }
  return "?";
}

std::string_view HealthMachineTraits::name(HealthAction a) {
  switch (a) {
    case A::ARM_HEALTH_TIMER: return "arm health timer";
    case A::QUERY_RUNNING_TASKS: return "query running tasks";
    case A::RECONCILE: return "reconcile invocations";
    case A::ACCEPT_TASKS: return "accept tasks";
    case A::STOP_ASSIGNING: return "stop assigning";
    case A::REQUEST_SUICIDE: return "request suicide";
    case A::FAIL_OVER_INVOCATIONS: return "fail over invocations";
    case A::STOP_HEALTH_TIMER: return "stop health timer";
    case A::LEAVE_TASK_LISTS: return "leave task lists";
  }
  return "?";
}

const StateTable<HealthMachineTraits>& HealthMachine::table() {
  static const StateTable<HealthMachineTraits> instance(rows());
  return instance;
}

Result<void> HealthTimeouts::validate() const {
  if (heartbeat_interval > Duration::zero() && heartbeat_interval < unhealthy_after &&
      unhealthy_after < must_die_after && must_die_after <= lease) {
    return ok();
  }
  return fail(Errc::INVALID_ARGUMENT,
              "worker health: need 0 < heartbeat interval (" + format_duration(heartbeat_interval) +
                  ") < unhealthy after (" + format_duration(unhealthy_after) +
                  ") < must die after (" + format_duration(must_die_after) + ") <= lease (" +
                  format_duration(lease) + "); e.g. 1s, 2s, 3s, 30s");
}

HealthState health_after(HealthState current, Duration since, const HealthTimeouts& timeouts) {
  since = std::max(since, Duration::zero());
  if (current == S::MUST_DIE || since >= timeouts.must_die_after) return S::MUST_DIE;
  if (current == S::NEW || current == S::STOPPING) return current;
  if (since >= timeouts.unhealthy_after) return S::UNHEALTHY;
  return S::HEALTHY;
}

std::optional<HealthEvent> health_timeout_event(HealthState current, Duration since,
                                                const HealthTimeouts& timeouts) {
  if (current == S::MUST_DIE) {
    return since >= timeouts.lease ? std::optional<HealthEvent>(E::LEASE_EXPIRED) : std::nullopt;
  }
  const HealthState after = health_after(current, since, timeouts);
  if (after == S::MUST_DIE) return E::HEARTBEAT_LOST;
  if (current == S::HEALTHY && after == S::UNHEALTHY) return E::HEARTBEAT_LATE;
  return std::nullopt;
}

std::optional<Duration> until_health_timeout(HealthState current, Duration since,
                                             const HealthTimeouts& timeouts) {
  since = std::max(since, Duration::zero());
  switch (current) {
    case S::MUST_DIE: return std::max(Duration::zero(), timeouts.lease - since);
    case S::HEALTHY: return std::max(Duration::zero(), timeouts.unhealthy_after - since);
    case S::NEW:
    case S::UNHEALTHY:
    case S::STOPPING: return std::max(Duration::zero(), timeouts.must_die_after - since);
  }
  return std::nullopt;
}

}  // namespace troupe::actors
