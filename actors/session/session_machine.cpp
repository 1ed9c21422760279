// The session table: every (state, event) pair, a transition or an ignored pair with its reason.
#include "actors/session/session_machine.hpp"

#include <vector>

namespace troupe::actors {
namespace {

using S = SessionState;
using E = SessionEvent;
using A = SessionAction;
using R = Row<S, E, A>;

/// The rows of an over session: nothing changes it any more.
void over(std::vector<R>& rows, S state) {
  for (size_t e = 0; e < SessionMachineTraits::events; ++e) {
    rows.push_back({state, static_cast<E>(e), state, {}, true, "the session is over"});
  }
}

std::vector<R> rows() {
  std::vector<R> rows = {
      {S::WAITING, E::FIRST_TASK_READY, S::CREATING, {A::FIND_WORKER, A::ARM_CREATION_TIMER}},
      {S::WAITING, E::PLACED, S::WAITING, {}, true, "it asked for no worker"},
      {S::WAITING, E::CREATION_TIMED_OUT, S::WAITING, {}, true, "no creation is under way"},
      {S::WAITING, E::ENTERED, S::WAITING, {}, true, "it has no worker"},
      {S::WAITING, E::ENTER_FAILED, S::WAITING, {}, true, "it has no worker"},
      // Its tasks ended without it (skipped, or their upstream failed): it was never needed.
      {S::WAITING, E::TASKS_DONE, S::CLOSED, {}},
      // A task of it failed for good before it was needed (a scheduleToStart timeout, a kill).
      {S::WAITING, E::TASK_FAILED, S::FAILED, {A::NEVER_ATTEMPT_QUEUED}},
      {S::WAITING, E::CANCEL, S::CLOSED, {}},
      {S::WAITING, E::EXECUTION_TIMED_OUT, S::WAITING, {}, true, "it was never placed"},
      {S::WAITING, E::EXITED, S::WAITING, {}, true, "it has no worker"},
      {S::WAITING, E::WORKER_LOST, S::WAITING, {}, true, "it has no worker"},
      {S::WAITING, E::WORKER_BACK, S::WAITING, {}, true, "it has no worker"},
      {S::WAITING, E::RECREATE, S::WAITING, {}, true, "it has no worker"},
      {S::WAITING, E::ABANDON, S::WAITING, {}, true, "it has no worker"},
      {S::WAITING, E::WORKER_DRAINED, S::WAITING, {}, true, "it has no worker"},
      {S::WAITING, E::WORKER_DRAINED_NOW, S::WAITING, {}, true, "it has no worker"},

      {S::CREATING, E::FIRST_TASK_READY, S::CREATING, {}, true, "it is looking for a worker already"},
      {S::CREATING, E::PLACED, S::ENTERING, {A::STOP_LOOKING, A::ENTER_ON_WORKER, A::ARM_EXECUTION_TIMER}},
      {S::CREATING, E::CREATION_TIMED_OUT, S::FAILED, {A::STOP_LOOKING, A::NEVER_ATTEMPT_QUEUED, A::STOP_EXECUTION_TIMER}},
      {S::CREATING, E::ENTERED, S::CREATING, {}, true, "a report of an earlier placement"},
      {S::CREATING, E::ENTER_FAILED, S::CREATING, {}, true, "a report of an earlier placement"},
      {S::CREATING, E::TASKS_DONE, S::CLOSED, {A::STOP_LOOKING, A::STOP_EXECUTION_TIMER}},
      {S::CREATING, E::TASK_FAILED, S::FAILED, {A::STOP_LOOKING, A::NEVER_ATTEMPT_QUEUED, A::STOP_EXECUTION_TIMER}},
      {S::CREATING, E::CANCEL, S::CLOSED, {A::STOP_LOOKING, A::NEVER_ATTEMPT_QUEUED, A::STOP_EXECUTION_TIMER}},
      // Recreated after a loss: its execution timer runs from its first placement.
      {S::CREATING, E::EXECUTION_TIMED_OUT, S::FAILED, {A::STOP_LOOKING, A::NEVER_ATTEMPT_QUEUED}},
      {S::CREATING, E::EXITED, S::CREATING, {}, true, "a report of an earlier placement"},
      {S::CREATING, E::WORKER_LOST, S::CREATING, {}, true, "a loss of an earlier placement"},
      {S::CREATING, E::WORKER_BACK, S::CREATING, {}, true, "it is not waiting for its resource"},
      {S::CREATING, E::RECREATE, S::CREATING, {}, true, "it is looking for a worker already"},
      {S::CREATING, E::ABANDON, S::CREATING, {}, true, "it has no worker to give up"},
      {S::CREATING, E::WORKER_DRAINED, S::CREATING, {}, true, "a drain of an earlier placement's worker"},
      {S::CREATING, E::WORKER_DRAINED_NOW, S::CREATING, {}, true, "a drain of an earlier placement's worker"},

      {S::ENTERING, E::FIRST_TASK_READY, S::ENTERING, {}, true, "it is placed already"},
      {S::ENTERING, E::PLACED, S::ENTERING, {}, true, "it is placed already"},
      {S::ENTERING, E::CREATION_TIMED_OUT, S::ENTERING, {}, true, "it was placed in time"},
      {S::ENTERING, E::ENTERED, S::OPEN, {A::RELEASE_TASKS}},
      // envEnter ran, so envExit runs too; nothing else of the session does.
      {S::ENTERING, E::ENTER_FAILED, S::FAILING, {A::NEVER_ATTEMPT_QUEUED, A::EXIT_ON_WORKER}},
      {S::ENTERING, E::TASKS_DONE, S::CLOSING, {A::EXIT_ON_WORKER}},
      {S::ENTERING, E::TASK_FAILED, S::FAILING, {A::NEVER_ATTEMPT_QUEUED, A::EXIT_ON_WORKER}},
      {S::ENTERING, E::CANCEL, S::CLOSING, {A::STOP_CURRENT_ACTION, A::NEVER_ATTEMPT_QUEUED, A::EXIT_ON_WORKER}},
      {S::ENTERING, E::EXECUTION_TIMED_OUT, S::FAILING,
       {A::STOP_CURRENT_ACTION, A::NEVER_ATTEMPT_QUEUED, A::EXIT_ON_WORKER}},
      {S::ENTERING, E::EXITED, S::ENTERING, {}, true, "no envExit was asked for"},
      {S::ENTERING, E::WORKER_LOST, S::REESTABLISHING, {A::FREE_SLOT, A::HOLD_TASKS, A::ARM_REESTABLISH_TIMER}},
      {S::ENTERING, E::WORKER_BACK, S::ENTERING, {}, true, "its worker is not lost"},
      {S::ENTERING, E::RECREATE, S::ENTERING, {}, true, "its worker is not lost"},
      {S::ENTERING, E::ABANDON, S::ENTERING, {}, true, "its worker is not lost"},
      // envEnter ran, so envExit runs there too before the session moves.
      {S::ENTERING, E::WORKER_DRAINED, S::MOVING, {A::EXIT_ON_WORKER}},
      {S::ENTERING, E::WORKER_DRAINED_NOW, S::MOVING, {A::STOP_ENV_ENTER, A::EXIT_ON_WORKER}},

      {S::OPEN, E::FIRST_TASK_READY, S::OPEN, {}, true, "it is open already"},
      {S::OPEN, E::PLACED, S::OPEN, {}, true, "it is placed already"},
      {S::OPEN, E::CREATION_TIMED_OUT, S::OPEN, {}, true, "it was placed in time"},
      {S::OPEN, E::ENTERED, S::OPEN, {}, true, "a repeated report"},
      {S::OPEN, E::ENTER_FAILED, S::OPEN, {}, true, "envEnter succeeded already (a stale report)"},
      {S::OPEN, E::TASKS_DONE, S::CLOSING, {A::EXIT_ON_WORKER}},
      {S::OPEN, E::TASK_FAILED, S::FAILING, {A::NEVER_ATTEMPT_QUEUED, A::EXIT_ON_WORKER}},
      {S::OPEN, E::CANCEL, S::CLOSING, {A::NEVER_ATTEMPT_QUEUED, A::EXIT_ON_WORKER}},
      {S::OPEN, E::EXECUTION_TIMED_OUT, S::FAILING,
       {A::STOP_CURRENT_ACTION, A::NEVER_ATTEMPT_QUEUED, A::EXIT_ON_WORKER}},
      {S::OPEN, E::EXITED, S::OPEN, {}, true, "no envExit was asked for"},
      {S::OPEN, E::WORKER_LOST, S::REESTABLISHING, {A::FREE_SLOT, A::HOLD_TASKS, A::ARM_REESTABLISH_TIMER}},
      {S::OPEN, E::WORKER_BACK, S::OPEN, {}, true, "its worker is not lost"},
      {S::OPEN, E::RECREATE, S::OPEN, {}, true, "its worker is not lost"},
      {S::OPEN, E::ABANDON, S::OPEN, {}, true, "its worker is not lost"},
      // Its tasks queued there end without running (they run again where it moves); the drain
      // interrupts a running one only when it is immediate.
      {S::OPEN, E::WORKER_DRAINED, S::MOVING, {A::EXIT_ON_WORKER}},
      {S::OPEN, E::WORKER_DRAINED_NOW, S::MOVING, {A::EXIT_ON_WORKER}},

      {S::REESTABLISHING, E::FIRST_TASK_READY, S::REESTABLISHING, {}, true, "its tasks wait for its worker"},
      {S::REESTABLISHING, E::PLACED, S::REESTABLISHING, {}, true, "it waits for its own resource"},
      {S::REESTABLISHING, E::CREATION_TIMED_OUT, S::REESTABLISHING, {}, true, "it was placed in time"},
      {S::REESTABLISHING, E::ENTERED, S::REESTABLISHING, {}, true, "a report of the lost worker"},
      {S::REESTABLISHING, E::ENTER_FAILED, S::REESTABLISHING, {}, true, "a report of the lost worker"},
      // Its environment went with its worker: there is nothing to exit.
      {S::REESTABLISHING, E::TASKS_DONE, S::CLOSED, {A::STOP_REESTABLISH_TIMER, A::STOP_EXECUTION_TIMER}},
      {S::REESTABLISHING, E::TASK_FAILED, S::FAILED,
       {A::STOP_REESTABLISH_TIMER, A::NEVER_ATTEMPT_QUEUED, A::STOP_EXECUTION_TIMER}},
      {S::REESTABLISHING, E::CANCEL, S::CLOSED,
       {A::STOP_REESTABLISH_TIMER, A::NEVER_ATTEMPT_QUEUED, A::STOP_EXECUTION_TIMER}},
      {S::REESTABLISHING, E::EXECUTION_TIMED_OUT, S::FAILED, {A::STOP_REESTABLISH_TIMER, A::NEVER_ATTEMPT_QUEUED}},
      {S::REESTABLISHING, E::EXITED, S::REESTABLISHING, {}, true, "a report of the lost worker"},
      {S::REESTABLISHING, E::WORKER_LOST, S::REESTABLISHING, {}, true, "it is lost already"},
      // The same resource again: envEnter runs again there, in the same session directory.
      {S::REESTABLISHING, E::WORKER_BACK, S::ENTERING, {A::STOP_REESTABLISH_TIMER, A::ENTER_ON_WORKER}},
      {S::REESTABLISHING, E::RECREATE, S::CREATING,
       {A::STOP_REESTABLISH_TIMER, A::FIND_WORKER, A::ARM_CREATION_TIMER}},
      {S::REESTABLISHING, E::ABANDON, S::FAILED,
       {A::STOP_REESTABLISH_TIMER, A::NEVER_ATTEMPT_QUEUED, A::STOP_EXECUTION_TIMER}},
      {S::REESTABLISHING, E::WORKER_DRAINED, S::REESTABLISHING, {}, true, "its worker is lost already"},
      {S::REESTABLISHING, E::WORKER_DRAINED_NOW, S::REESTABLISHING, {}, true, "its worker is lost already"},

      {S::MOVING, E::FIRST_TASK_READY, S::MOVING, {}, true, "its tasks wait for its next worker"},
      {S::MOVING, E::PLACED, S::MOVING, {}, true, "it is not looking for a worker yet"},
      {S::MOVING, E::CREATION_TIMED_OUT, S::MOVING, {}, true, "it was placed in time"},
      // Drained while envEnter ran: envExit follows it whatever it did; its outcome is recorded.
      {S::MOVING, E::ENTERED, S::MOVING, {}},
      {S::MOVING, E::ENTER_FAILED, S::MOVING, {}},
      {S::MOVING, E::TASKS_DONE, S::CLOSING, {}},
      {S::MOVING, E::TASK_FAILED, S::FAILING, {A::NEVER_ATTEMPT_QUEUED}},
      {S::MOVING, E::CANCEL, S::CLOSING, {A::NEVER_ATTEMPT_QUEUED}},
      {S::MOVING, E::EXECUTION_TIMED_OUT, S::FAILING, {A::STOP_CURRENT_ACTION, A::NEVER_ATTEMPT_QUEUED}},
      // Left its drained worker: it looks for another, its tasks still held (not a recreation).
      {S::MOVING, E::EXITED, S::CREATING, {A::FREE_SLOT, A::FIND_WORKER, A::ARM_CREATION_TIMER}},
      // The drained worker went (it stopped once drained): its environment went with it.
      {S::MOVING, E::WORKER_LOST, S::CREATING, {A::FREE_SLOT, A::FIND_WORKER, A::ARM_CREATION_TIMER}},
      {S::MOVING, E::WORKER_BACK, S::MOVING, {}, true, "its worker is not lost"},
      {S::MOVING, E::RECREATE, S::MOVING, {}, true, "its worker is not lost"},
      {S::MOVING, E::ABANDON, S::MOVING, {}, true, "its worker is not lost"},
      {S::MOVING, E::WORKER_DRAINED, S::MOVING, {}, true, "it is moving already"},
      // An eventual drain's deadline passed: an envEnter still running stops.
      {S::MOVING, E::WORKER_DRAINED_NOW, S::MOVING, {A::STOP_ENV_ENTER}},

      {S::CLOSING, E::FIRST_TASK_READY, S::CLOSING, {}, true, "it is closing"},
      {S::CLOSING, E::PLACED, S::CLOSING, {}, true, "it is closing"},
      {S::CLOSING, E::CREATION_TIMED_OUT, S::CLOSING, {}, true, "it was placed in time"},
      // Closed while envEnter ran: envExit follows it whatever it did; its outcome is recorded.
      {S::CLOSING, E::ENTERED, S::CLOSING, {}},
      {S::CLOSING, E::ENTER_FAILED, S::CLOSING, {}},
      {S::CLOSING, E::TASKS_DONE, S::CLOSING, {}, true, "it is closing already"},
      {S::CLOSING, E::TASK_FAILED, S::CLOSING, {}, true, "cancelled already: the running action's end comes before envExit"},
      {S::CLOSING, E::CANCEL, S::CLOSING, {}, true, "it is closing already"},
      {S::CLOSING, E::EXECUTION_TIMED_OUT, S::CLOSING, {A::STOP_CURRENT_ACTION}},
      {S::CLOSING, E::EXITED, S::CLOSED, {A::FREE_SLOT, A::STOP_EXECUTION_TIMER}},
      // envExit went with the worker; its failure affects only itself.
      {S::CLOSING, E::WORKER_LOST, S::CLOSED, {A::FREE_SLOT, A::STOP_EXECUTION_TIMER}},
      {S::CLOSING, E::WORKER_BACK, S::CLOSING, {}, true, "its worker is not lost"},
      {S::CLOSING, E::RECREATE, S::CLOSING, {}, true, "its worker is not lost"},
      {S::CLOSING, E::ABANDON, S::CLOSING, {}, true, "its worker is not lost"},
      {S::CLOSING, E::WORKER_DRAINED, S::CLOSING, {}, true, "it is closing already: nothing of it moves"},
      {S::CLOSING, E::WORKER_DRAINED_NOW, S::CLOSING, {}, true, "it is closing already: nothing of it moves"},

      {S::FAILING, E::FIRST_TASK_READY, S::FAILING, {}, true, "it is failing"},
      {S::FAILING, E::PLACED, S::FAILING, {}, true, "it is failing"},
      {S::FAILING, E::CREATION_TIMED_OUT, S::FAILING, {}, true, "it was placed in time"},
      // Failed while envEnter ran (a task, the execution timeout): its outcome is recorded.
      {S::FAILING, E::ENTERED, S::FAILING, {}},
      {S::FAILING, E::ENTER_FAILED, S::FAILING, {}},
      {S::FAILING, E::TASKS_DONE, S::FAILING, {}, true, "it is failing already"},
      {S::FAILING, E::TASK_FAILED, S::FAILING, {}, true, "it is failing already"},
      {S::FAILING, E::CANCEL, S::FAILING, {}, true, "it is failing already: envExit comes next"},
      {S::FAILING, E::EXECUTION_TIMED_OUT, S::FAILING, {A::STOP_CURRENT_ACTION}},
      {S::FAILING, E::EXITED, S::FAILED, {A::FREE_SLOT, A::STOP_EXECUTION_TIMER}},
      {S::FAILING, E::WORKER_LOST, S::FAILED, {A::FREE_SLOT, A::STOP_EXECUTION_TIMER}},
      {S::FAILING, E::WORKER_BACK, S::FAILING, {}, true, "its worker is not lost"},
      {S::FAILING, E::RECREATE, S::FAILING, {}, true, "its worker is not lost"},
      {S::FAILING, E::ABANDON, S::FAILING, {}, true, "its worker is not lost"},
      {S::FAILING, E::WORKER_DRAINED, S::FAILING, {}, true, "it is failing already: nothing of it moves"},
      {S::FAILING, E::WORKER_DRAINED_NOW, S::FAILING, {}, true, "it is failing already: nothing of it moves"},
  };
  over(rows, S::CLOSED);
  over(rows, S::FAILED);
  return rows;
}

}  // namespace

std::string_view SessionMachineTraits::name(SessionState s) {
  switch (s) {
    case S::WAITING: return "WAITING";
    case S::CREATING: return "CREATING";
    case S::ENTERING: return "ENTERING";
    case S::OPEN: return "OPEN";
    case S::REESTABLISHING: return "REESTABLISHING";
    case S::MOVING: return "MOVING";
    case S::CLOSING: return "CLOSING";
    case S::FAILING: return "FAILING";
    case S::CLOSED: return "CLOSED";
    case S::FAILED: return "FAILED";
  }
  return "?";
}

std::string_view SessionMachineTraits::name(SessionEvent e) {
  switch (e) {
    case E::FIRST_TASK_READY: return "FIRST_TASK_READY";
    case E::PLACED: return "PLACED";
    case E::CREATION_TIMED_OUT: return "CREATION_TIMED_OUT";
    case E::ENTERED: return "ENTERED";
    case E::ENTER_FAILED: return "ENTER_FAILED";
    case E::TASKS_DONE: return "TASKS_DONE";
    case E::TASK_FAILED: return "TASK_FAILED";
    case E::CANCEL: return "CANCEL";
    case E::EXECUTION_TIMED_OUT: return "EXECUTION_TIMED_OUT";
    case E::EXITED: return "EXITED";
    case E::WORKER_LOST: return "WORKER_LOST";
    case E::WORKER_BACK: return "WORKER_BACK";
    case E::RECREATE: return "RECREATE";
    case E::ABANDON: return "ABANDON";
    case E::WORKER_DRAINED: return "WORKER_DRAINED";
    case E::WORKER_DRAINED_NOW: return "WORKER_DRAINED_NOW";
  }
  return "?";
}

std::string_view SessionMachineTraits::name(SessionAction a) {
  switch (a) {
    case A::FIND_WORKER: return "find worker";
    case A::ARM_CREATION_TIMER: return "arm creation timer";
    case A::STOP_LOOKING: return "stop looking";
    case A::ENTER_ON_WORKER: return "enter on worker";
    case A::ARM_EXECUTION_TIMER: return "arm execution timer";
    case A::RELEASE_TASKS: return "release tasks";
    case A::HOLD_TASKS: return "hold tasks";
    case A::NEVER_ATTEMPT_QUEUED: return "never attempt queued";
    case A::STOP_CURRENT_ACTION: return "stop current action";
    case A::STOP_ENV_ENTER: return "stop env enter";
    case A::EXIT_ON_WORKER: return "exit on worker";
    case A::ARM_REESTABLISH_TIMER: return "arm reestablish timer";
    case A::STOP_REESTABLISH_TIMER: return "stop reestablish timer";
    case A::FREE_SLOT: return "free slot";
    case A::STOP_EXECUTION_TIMER: return "stop execution timer";
  }
  return "?";
}

const StateTable<SessionMachineTraits>& SessionMachine::table() {
  static const StateTable<SessionMachineTraits> instance(rows());
  return instance;
}

SessionTransition SessionMachine::transition(SessionState state, SessionEvent event) {
  // The table defines every pair (the specification test checks it).
  return *table().transition(state, event);
}

std::optional<SessionState> SessionMachine::parse(std::string_view name) {
  return StateTable<SessionMachineTraits>::parse_state(name);
}

}  // namespace troupe::actors
