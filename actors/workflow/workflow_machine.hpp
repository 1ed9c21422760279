// The workflow instance's state machine (DolphinScheduler DSIP-61), as a plain table.
#pragma once

#include <string_view>

#include "actors/state_table.hpp"

namespace troupe::actors {

enum class WorkflowState : uint8_t {
  SUBMITTED,    ///< accepted and durable, not started
  RUNNING,
  READY_PAUSE,  ///< pause requested: nothing new is dispatched; waits for active tasks
  PAUSED,
  READY_STOP,   ///< stop requested: active tasks are being killed
  STOPPED,
  SUCCESS,
  FAILED,
  FAILOVER,     ///< revived after a scheduler restart, waiting to be re-adopted
};

enum class WorkflowEvent : uint8_t {
  START,          ///< begin (or, from FAILOVER, carry on)
  TASK_FINISHED,  ///< a task reached a terminal state or paused
  PAUSE,
  PAUSED,         ///< raised by the actor: pausing and no task is active
  RESUME,
  STOP,
  STOPPED,        ///< raised by the actor: stopping and no task is active
  SUCCEED,        ///< raised by the actor: every chain succeeded
  FAILED,         ///< raised by the actor: a chain failed and nothing else can run
  FINALIZE,       ///< close the history of a finished workflow
  FAILOVER,       ///< the scheduler restarted; the workflow is revived from its history
  RERUN,          ///< a client reopens a finished, closed workflow to run tasks again
  RETRY_TASK,     ///< an operator retries a failed or killed task (reopens a FAILED workflow)
  SKIP_TASK,      ///< an operator forces a task to success, now or when it would be scheduled
  UPDATE_TASK,    ///< an operator changes a task's options (recorded by the task, or for it)
  RERUN_SESSION,  ///< a session recreated with rerunAll: what of it succeeded runs again
};

/// What the workflow actor does for a transition, in this order.
enum class WorkflowAction : uint8_t {
  PERSIST,            ///< append the event to the history; everything else waits for it
  START_READY_TASKS,  ///< spawn tasks whose dependencies are met (not while pausing/stopping)
  PAUSE_WAITING_TASKS,  ///< pause tasks not yet on a worker; running ones finish
  RESUME_PAUSED_TASKS,  ///< start the tasks that were paused
  KILL_ACTIVE_TASKS,  ///< kill every task that has not finished
  EVALUATE,           ///< check the graph: raise SUCCEED, FAILED, PAUSED or STOPPED when due
  REPLY,              ///< answer the request that caused the event
  CLOSE,              ///< mark the workflow closed in the store
};

struct WorkflowMachineTraits {
  using State = WorkflowState;
  using Event = WorkflowEvent;
  using Action = WorkflowAction;
  static constexpr size_t states = 9;
  static constexpr size_t events = 16;
  static std::string_view name(WorkflowState s);
  static std::string_view name(WorkflowEvent e);
  static std::string_view name(WorkflowAction a);
};

using WorkflowTransition = Transition<WorkflowState, WorkflowAction>;

struct WorkflowMachine {
  /// The table (built once).
  static const StateTable<WorkflowMachineTraits>& table();

  /// The transition for `event` in `state`; NOT_ALLOWED_IN_STATE if there is none.
  static Result<WorkflowTransition> transition(WorkflowState state, WorkflowEvent event) {
    return table().transition(state, event);
  }

  /// SUCCESS, FAILED and STOPPED.
  static bool is_terminal(WorkflowState state);
};

}  // namespace troupe::actors
