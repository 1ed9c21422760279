// The task instance's state machine, as a plain table. Retry decisions (whether a failure or
// timeout is retried, and after how long) are made by RetryPolicy before an event reaches the
// machine: a retried failure arrives as RETRY, a final one as FAILED or TIMEOUT.
#pragma once

#include <string_view>

#include "actors/state_table.hpp"

namespace troupe::actors {

enum class TaskState : uint8_t {
  SUBMITTED,        ///< created and durable, not started
  DELAY_EXECUTION,  ///< waiting out a retry backoff
  DISPATCHING,      ///< in its task list, waiting for a worker slot
  DISPATCHED,       ///< sent to an executor, not yet confirmed running
  RUNNING,
  PAUSED,
  KILLED,
  FAILURE,
  SUCCESS,
  FORCED_SUCCESS,   ///< marked succeeded by an operator (skipTask) while not on an executor
  FAILOVER,         ///< its executor was lost; about to retry or fail
};

enum class TaskEvent : uint8_t {
  START,       ///< begin, or begin again after a pause
  DISPATCH,    ///< the retry backoff is over
  DISPATCHED,  ///< a slot was found: the invocation is durable and about to be sent
  RUNNING,     ///< the executor started the invocation
  HEARTBEAT,   ///< the running invocation reported progress
  TIMEOUT,     ///< a timeout fired and will not be retried
  RETRY,       ///< a failure or timeout will be retried after a backoff
  PAUSE,
  PAUSED,      ///< the executor paused the invocation
  KILL,
  KILLED,      ///< the executor confirmed the kill, or the kill's grace period ran out
  SUCCEEDED,   ///< the current invocation succeeded
  FAILED,      ///< failed for good (non-retryable, or out of attempts)
  FAILOVER,    ///< the invocation's executor was lost
  FORCE,       ///< an operator marks the task succeeded (skipTask); never while on an executor
  UPDATE,      ///< an operator changed the task's options (updateTask) for its next dispatch
  HANDED_OFF,  ///< an asyncCompletion invocation handed off: its token ends it, or startToClose
};

/// What the task actor does for a transition, in this order.
enum class TaskAction : uint8_t {
  PERSIST,              ///< append the event to the history; everything else waits for it
  START_TASK_TIMER,     ///< arm scheduleToClose
  ENQUEUE,              ///< the task waits in its task list (joined before the event): arm scheduleToStart
  WITHDRAW,             ///< take the task out of its task list
  SEND,                 ///< send the invocation to its executor; arm startToClose
  WATCH_HEARTBEAT,      ///< (re)arm the heartbeat timeout
  RECORD_PROGRESS,      ///< keep the heartbeat's progress for the next attempt
  CANCEL_INVOCATION,    ///< ask the executor to cancel the invocation
  START_KILL_TIMER,     ///< arm the grace period after which KILLED is assumed
  START_BACKOFF_TIMER,  ///< arm the retry backoff; DISPATCH follows
  STOP_ATTEMPT_TIMERS,  ///< disarm scheduleToStart, startToClose and heartbeat
  STOP_ALL_TIMERS,      ///< disarm every timer
  NOTIFY_WORKFLOW,      ///< tell the workflow the task finished (or paused)
  REARM_TASK_TIMER,     ///< arm scheduleToClose again for the options now in force (none: disarm)
  REJOIN,               ///< join the (new) task list again after WITHDRAW: arm scheduleToStart;
                        ///< grants are refused from the withdrawal until then
  STOP_HEARTBEAT_TIMER, ///< disarm the heartbeat timeout (nothing is left to heartbeat)
};

struct TaskMachineTraits {
  using State = TaskState;
  using Event = TaskEvent;
  using Action = TaskAction;
  static constexpr size_t states = 11;
  static constexpr size_t events = 17;
  static std::string_view name(TaskState s);
  static std::string_view name(TaskEvent e);
  static std::string_view name(TaskAction a);
};

using TaskTransition = Transition<TaskState, TaskAction>;

struct TaskMachine {
  static const StateTable<TaskMachineTraits>& table();

  /// The transition for `event` in `state`; NOT_ALLOWED_IN_STATE if there is none.
  static Result<TaskTransition> transition(TaskState state, TaskEvent event) {
    return table().transition(state, event);
  }

  /// KILLED, FAILURE, SUCCESS and FORCED_SUCCESS.
  static bool is_terminal(TaskState state);
  /// SUCCESS and FORCED_SUCCESS: successors may run.
  static bool is_success(TaskState state);
  /// Holding a worker slot or an invocation: DISPATCHED and RUNNING.
  static bool is_on_executor(TaskState state);
};

}  // namespace troupe::actors
