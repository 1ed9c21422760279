// A session's life on the scheduler, as a plain table: the tasks of a session run on one worker
// (Cadence's sessions), between the session's envEnter and envExit actions (Deadline Cloud's
// session actions). The session actor feeds it events (a placement, an action's outcome, a
// timer, its worker's loss) and carries out the actions it returns; it records the events in
// the workflow's history, so a revived session replays to the same state.
//
// A worker's loss is always WORKER_LOST first: the session holds its tasks and arms the
// re-establishment window (zero when the session has no resource to wait for). The actor then
// sends WORKER_BACK (the same resource registered again within the window), or, when the window
// is over, RECREATE (the definition's onFailure recreates it and attempts are left) or ABANDON.
// PLACED and WORKER_BACK come with the worker's session slot taken already (placement takes it);
// FREE_SLOT gives it back whenever the session leaves a state that holds a worker.
//
// A drained worker keeps no session (Deadline Cloud ends a stopping worker's sessions): its
// sessions hear WORKER_DRAINED (an eventual drain: the running action finishes) or
// WORKER_DRAINED_NOW (an immediate one, or a deadline that passed: a running envEnter is
// cancelled, and the drain interrupts a running task), run envExit there and look for another
// worker. A move is no recreation: it takes none of onFailure's recreations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "actors/state_table.hpp"

namespace troupe::actors {

enum class SessionState : uint8_t {
  WAITING,         ///< none of its tasks is ready yet: it holds no worker
  CREATING,        ///< looking for a worker with a free session slot (and its resource), for creationTimeout
  ENTERING,        ///< placed on a worker, which runs envEnter before anything else
  OPEN,            ///< its tasks run on its worker, in their DAG order
  REESTABLISHING,  ///< its worker was lost: its tasks wait for the same resource to come back
  MOVING,          ///< its worker is drained: envExit runs there after the running action, then it moves
  CLOSING,         ///< its work is over (or cancelled): envExit runs after the running action
  FAILING,         ///< it failed: envExit runs after the running action, then FAILED
  CLOSED,          ///< over: its tasks ran (or were cancelled) and envExit ran where envEnter had
  FAILED,          ///< over: creation timed out, envEnter or a task failed, it timed out, or it lost its worker
};

enum class SessionEvent : uint8_t {
  FIRST_TASK_READY,     ///< one of its tasks may run now: the session is needed
  PLACED,               ///< a worker with a free session slot (and its resource) took it
  CREATION_TIMED_OUT,   ///< no worker took it within creationTimeout
  ENTERED,              ///< envEnter succeeded on its worker (or it has none)
  ENTER_FAILED,         ///< envEnter failed, was cancelled or interrupted (recorded even once closing)
  TASKS_DONE,           ///< every one of its tasks has ended, none of them failed
  TASK_FAILED,          ///< one of its tasks failed for good (its retries are spent), or was killed,
                        ///< whether it ran or not (a scheduleToStart timeout fails a waiting task)
  CANCEL,               ///< its workflow stops
  EXECUTION_TIMED_OUT,  ///< executionTimeout passed since it was first placed
  EXITED,               ///< envExit ended, whatever its outcome (a failed envExit affects only itself)
  WORKER_LOST,          ///< its worker was declared dead, stopped, or replaced
  WORKER_BACK,          ///< its resource registered again within the re-establishment window
  RECREATE,             ///< the window is over and onFailure recreates it elsewhere, attempts left
  ABANDON,              ///< the window is over and it may not be recreated
  WORKER_DRAINED,       ///< an operator drains its worker: it moves once the running action ended
  WORKER_DRAINED_NOW,   ///< its worker's drain is immediate (or its deadline passed): envEnter stops too
};

/// What the session actor does for a transition, in this order.
enum class SessionAction : uint8_t {
  FIND_WORKER,              ///< ask for a worker with a free session slot (and its resource)
  ARM_CREATION_TIMER,       ///< CREATION_TIMED_OUT after creationTimeout
  STOP_LOOKING,             ///< withdraw the request for a worker and its creation timer
  ENTER_ON_WORKER,          ///< open it on its worker, whose session runner runs envEnter first
  ARM_EXECUTION_TIMER,      ///< EXECUTION_TIMED_OUT at its first placement + executionTimeout (armed once)
  RELEASE_TASKS,            ///< its ready tasks dispatch to its worker, in their DAG order
  HOLD_TASKS,               ///< its tasks wait: none dispatches until it is placed and entered again
  NEVER_ATTEMPT_QUEUED,     ///< its tasks that have not started end NEVER_ATTEMPTED, recorded only
                            ///< after the final status of the action running now (Deadline's rule)
  STOP_CURRENT_ACTION,      ///< cancel the action its worker runs now
  STOP_ENV_ENTER,           ///< cancel its envEnter if its worker runs it now (its tasks are the drain's)
  EXIT_ON_WORKER,           ///< envExit runs after the running action's final status, then it closes there
  ARM_REESTABLISH_TIMER,    ///< the window for its resource to come back (zero: decide at once)
  STOP_REESTABLISH_TIMER,   ///< the window is over: its resource came back, or it moves on
  FREE_SLOT,                ///< the session slot it held is free again (the worker's, if it lives)
  STOP_EXECUTION_TIMER,     ///< it is over
};

struct SessionMachineTraits {
  using State = SessionState;
  using Event = SessionEvent;
  using Action = SessionAction;
  static constexpr size_t states = 10;
  static constexpr size_t events = 16;
  static std::string_view name(SessionState s);
  static std::string_view name(SessionEvent e);
  static std::string_view name(SessionAction a);
};

using SessionTransition = Transition<SessionState, SessionAction>;

struct SessionMachine {
  static const StateTable<SessionMachineTraits>& table();

  /// Every pair is defined: a transition or an ignored pair, never a rejection.
  static SessionTransition transition(SessionState state, SessionEvent event);

  static bool is_terminal(SessionState state) {
    return state == SessionState::CLOSED || state == SessionState::FAILED;
  }
  /// Whether its tasks may dispatch (to its worker) in `state`.
  static bool runs_tasks(SessionState state) { return state == SessionState::OPEN; }
  /// Whether it holds a worker's session slot in `state`.
  static bool holds_worker(SessionState state) {
    return state == SessionState::ENTERING || state == SessionState::OPEN || state == SessionState::MOVING ||
           state == SessionState::CLOSING || state == SessionState::FAILING;
  }
  static std::optional<SessionState> parse(std::string_view name);
};

}  // namespace troupe::actors
