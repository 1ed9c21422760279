// A worker's standing: whether the scheduler may give it work, as operators and its own record
// of failures decide (Deadline Cloud's service-initiated drains, quarantine after repeated
// failures), as a plain table. Health (health_machine.hpp) says whether the worker can be
// reached; standing says whether it should be used. A worker gets new tasks only while both
// allow it. Standing belongs to the shard, not to one process: it is kept in the worker's
// durable record, so a drained worker that restarts, or a scheduler that restarts, keeps it.
#pragma once

#include <optional>
#include <string_view>

#include "actors/state_table.hpp"
#include "actors/worker/health_machine.hpp"

namespace troupe::actors {

enum class Standing : uint8_t {
  ACTIVE,       ///< takes tasks (while healthy)
  DRAINING,     ///< an operator drains it: no new tasks; what runs finishes (or is interrupted)
  DRAINED,      ///< drained and idle: it runs nothing until undrained, or it stops if asked to
  QUARANTINED,  ///< its attempts kept failing: no new tasks until the backoff ends or it is forgiven
};

enum class StandingEvent : uint8_t {
  DRAIN,            ///< `troupe worker drain`: running tasks finish
  DRAIN_NOW,        ///< `troupe worker drain --immediate`, or an eventual drain's deadline passed
  UNDRAIN,          ///< `troupe worker undrain`
  IDLE,             ///< it runs nothing now (asked for by CHECK_IDLE, or its last invocation ended)
  FAILURE_STREAK,   ///< its attempts failed the quarantine threshold's times in a row
  QUARANTINE_OVER,  ///< the quarantine's backoff ran out
  FORGIVEN,         ///< `troupe worker forgive`
};

/// What the worker actor does for a standing transition, in this order. The worker's durable
/// record takes every change of standing; that is not an action of its own.
enum class StandingAction : uint8_t {
  STOP_ASSIGNING,          ///< withdraw its free slots from its task lists; running tasks carry on
  ACCEPT_TASKS,            ///< offer its slots to its task lists, if its health allows
  INTERRUPT_RUNNING,       ///< stop what it runs (kill_grace) and have it run elsewhere, attempt kept
  ARM_DRAIN_DEADLINE,      ///< an eventual drain with a deadline: DRAIN_NOW when it passes
  CHECK_IDLE,              ///< IDLE at once if it runs nothing
  END_DRAIN,               ///< drained: ask the worker process to stop if the drain said so
  ARM_QUARANTINE_TIMER,    ///< QUARANTINE_OVER after the backoff, which doubles each time
  CLEAR_FAILURES,          ///< forget the failure streak and the backoff
};

struct StandingMachineTraits {
  using State = Standing;
  using Event = StandingEvent;
  using Action = StandingAction;
  static constexpr size_t states = 4;
  static constexpr size_t events = 7;
  static std::string_view name(Standing s);
  static std::string_view name(StandingEvent e);
  static std::string_view name(StandingAction a);
};

using StandingTransition = Transition<Standing, StandingAction>;

struct StandingMachine {
  static const StateTable<StandingMachineTraits>& table();

  /// Every pair is defined: a transition or an ignored pair, never a rejection.
  static StandingTransition transition(Standing state, StandingEvent event);

  static bool accepts_tasks(Standing state) { return state == Standing::ACTIVE; }
  static std::optional<Standing> parse(std::string_view name);
};

/// A worker's status as Deadline Cloud names it, from its health and its standing:
///   STARTED (takes tasks), NOT_RESPONDING (heartbeats late or lost), STOPPING (shutting down on
///   a signal), STOPPED (said it stopped, or no process holds the shard), DRAINING, DRAINED,
///   QUARANTINED. `said_stopped`: the instance ended with its word that it stopped, rather than
///   by silence or replacement.
std::string_view worker_status(HealthState health, Standing standing, bool said_stopped);

}  // namespace troupe::actors
