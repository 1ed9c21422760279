// The task state table. Reading guide: START queues the task (DISPATCHING); a slot makes it
// DISPATCHED (at once, with no DISPATCHING, when one was free) and the executor RUNNING;
// the attempt ends in SUCCESS, in FAILURE, or in DELAY_EXECUTION when it will be retried
// (DISPATCH queues it again). An asyncCompletion invocation that HANDED_OFF stays RUNNING,
// under its startToClose, until its token ends it. PAUSE and KILL stop a
// task that is not on an executor at once; one that is gets a cancellation and stays until
// the executor confirms (KILLED, PAUSED) or the kill's grace period runs out. An operator's FORCE
// (skip) ends a task that is not on an executor; an UPDATE of its options is recorded in every
// state but the successful ones and applies from the next dispatch: a task waiting in its task
// list leaves it and joins the new one, an attempt on an executor keeps what it was sent with.
#include "actors/task/task_machine.hpp"

namespace troupe::actors {
namespace {

using S = TaskState;
using E = TaskEvent;
using A = TaskAction;
using R = Row<S, E, A>;

/// Rows shared by DISPATCHED and RUNNING: the attempt is on an executor.
void on_executor(std::vector<R>& rows, S s) {
  rows.push_back({s, E::SUCCEEDED, S::SUCCESS, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}});
  rows.push_back({s, E::FAILED, S::FAILURE,
                  {A::PERSIST, A::CANCEL_INVOCATION, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}});
  rows.push_back({s, E::TIMEOUT, S::FAILURE,
                  {A::PERSIST, A::CANCEL_INVOCATION, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}});
  rows.push_back({s, E::RETRY, S::DELAY_EXECUTION,
                  {A::PERSIST, A::CANCEL_INVOCATION, A::STOP_ATTEMPT_TIMERS, A::START_BACKOFF_TIMER}});
  rows.push_back({s, E::KILL, s, {A::PERSIST, A::CANCEL_INVOCATION, A::STOP_ATTEMPT_TIMERS, A::START_KILL_TIMER}});
  rows.push_back({s, E::KILLED, S::KILLED, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}});
  rows.push_back({s, E::PAUSED, S::PAUSED, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}});
  rows.push_back({s, E::FAILOVER, S::FAILOVER, {A::PERSIST, A::STOP_ATTEMPT_TIMERS}});
  // A running attempt finishes; the pause is recorded and taken when the attempt ends without
  // success (instead of a retry running it again).
  rows.push_back({s, E::PAUSE, s, {A::PERSIST}});
  // Kept for the next attempt: this one runs on with the options it was sent with.
  rows.push_back({s, E::UPDATE, s, {A::PERSIST}});
  // The invocation ended on its worker and left the task to its token: nothing heartbeats any
  // more, but the attempt is still bounded by its startToClose, which runs on from the dispatch.
  rows.push_back({s, E::HANDED_OFF, S::RUNNING, {A::PERSIST, A::STOP_HEARTBEAT_TIMER}});
}

std::vector<R> rows() {
  std::vector<R> rows = {
      {S::SUBMITTED, E::START, S::DISPATCHING, {A::PERSIST, A::START_TASK_TIMER, A::ENQUEUE}},
      // Started, or dispatched again after a backoff, when a slot was free at once: the task
      // never waited in its task list.
      {S::SUBMITTED, E::DISPATCHED, S::DISPATCHED, {A::PERSIST, A::START_TASK_TIMER, A::SEND}},
      {S::SUBMITTED, E::PAUSE, S::PAUSED, {A::PERSIST, A::NOTIFY_WORKFLOW}},
      {S::SUBMITTED, E::KILL, S::KILLED, {A::PERSIST, A::NOTIFY_WORKFLOW}},
      {S::SUBMITTED, E::FORCE, S::FORCED_SUCCESS, {A::PERSIST, A::NOTIFY_WORKFLOW}},
      {S::SUBMITTED, E::UPDATE, S::SUBMITTED, {A::PERSIST}},

      {S::DELAY_EXECUTION, E::DISPATCH, S::DISPATCHING, {A::PERSIST, A::ENQUEUE}},
      {S::DELAY_EXECUTION, E::DISPATCHED, S::DISPATCHED, {A::PERSIST, A::SEND}},
      {S::DELAY_EXECUTION, E::TIMEOUT, S::FAILURE, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::DELAY_EXECUTION, E::PAUSE, S::PAUSED, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::DELAY_EXECUTION, E::KILL, S::KILLED, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::DELAY_EXECUTION, E::FORCE, S::FORCED_SUCCESS, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      // The backoff already decided stands; the task-wide timer follows the new options.
      {S::DELAY_EXECUTION, E::UPDATE, S::DELAY_EXECUTION, {A::PERSIST, A::REARM_TASK_TIMER}},

      {S::DISPATCHING, E::DISPATCHED, S::DISPATCHED, {A::PERSIST, A::STOP_ATTEMPT_TIMERS, A::SEND}},
      {S::DISPATCHING, E::TIMEOUT, S::FAILURE,
       {A::PERSIST, A::WITHDRAW, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::DISPATCHING, E::RETRY, S::DELAY_EXECUTION,
       {A::PERSIST, A::WITHDRAW, A::STOP_ATTEMPT_TIMERS, A::START_BACKOFF_TIMER}},
      {S::DISPATCHING, E::FAILED, S::FAILURE,
       {A::PERSIST, A::WITHDRAW, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::DISPATCHING, E::PAUSE, S::PAUSED,
       {A::PERSIST, A::WITHDRAW, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::DISPATCHING, E::KILL, S::KILLED,
       {A::PERSIST, A::WITHDRAW, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::DISPATCHING, E::FORCE, S::FORCED_SUCCESS,
       {A::PERSIST, A::WITHDRAW, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      // Waits again where the new options say (a new arrival there), its wait timed afresh.
      {S::DISPATCHING, E::UPDATE, S::DISPATCHING, {A::PERSIST, A::WITHDRAW, A::REARM_TASK_TIMER, A::REJOIN}},

      {S::DISPATCHED, E::RUNNING, S::RUNNING, {A::PERSIST, A::WATCH_HEARTBEAT}},
      {S::DISPATCHED, E::HEARTBEAT, S::RUNNING, {A::PERSIST, A::RECORD_PROGRESS, A::WATCH_HEARTBEAT}},

      {S::RUNNING, E::RUNNING, S::RUNNING, {}, true, "already running"},
      {S::RUNNING, E::HEARTBEAT, S::RUNNING, {A::PERSIST, A::RECORD_PROGRESS, A::WATCH_HEARTBEAT}},

      {S::PAUSED, E::START, S::DISPATCHING, {A::PERSIST, A::START_TASK_TIMER, A::ENQUEUE}},
      {S::PAUSED, E::DISPATCHED, S::DISPATCHED, {A::PERSIST, A::START_TASK_TIMER, A::SEND}},
      {S::PAUSED, E::PAUSE, S::PAUSED, {}, true, "already paused"},
      {S::PAUSED, E::KILL, S::KILLED, {A::PERSIST, A::NOTIFY_WORKFLOW}},
      {S::PAUSED, E::FORCE, S::FORCED_SUCCESS, {A::PERSIST, A::NOTIFY_WORKFLOW}},
      {S::PAUSED, E::UPDATE, S::PAUSED, {A::PERSIST}},

      {S::FAILOVER, E::RETRY, S::DELAY_EXECUTION, {A::PERSIST, A::START_BACKOFF_TIMER}},
      {S::FAILOVER, E::FAILED, S::FAILURE, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::FAILOVER, E::TIMEOUT, S::FAILURE, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::FAILOVER, E::KILL, S::KILLED, {A::PERSIST, A::STOP_ALL_TIMERS, A::NOTIFY_WORKFLOW}},
      {S::FAILOVER, E::UPDATE, S::FAILOVER, {A::PERSIST, A::REARM_TASK_TIMER}},

      // A finished task has no actor: its workflow records these for it, and tells nobody (the
      // workflow itself acts on them). An update applies to a retry or a rerun.
      {S::KILLED, E::KILL, S::KILLED, {}, true, "already killed"},
      {S::KILLED, E::FORCE, S::FORCED_SUCCESS, {A::PERSIST, A::NOTIFY_WORKFLOW}},
      {S::KILLED, E::UPDATE, S::KILLED, {A::PERSIST}},
      {S::FAILURE, E::FORCE, S::FORCED_SUCCESS, {A::PERSIST, A::NOTIFY_WORKFLOW}},
      {S::FAILURE, E::UPDATE, S::FAILURE, {A::PERSIST}},
      // For the instance a rerun schedules next (its workflow refuses one for a task that
      // succeeded in this run).
      {S::SUCCESS, E::UPDATE, S::SUCCESS, {A::PERSIST}},
      {S::FORCED_SUCCESS, E::UPDATE, S::FORCED_SUCCESS, {A::PERSIST}},
  };
  on_executor(rows, S::DISPATCHED);
  on_executor(rows, S::RUNNING);
  return rows;
}

}  // namespace

std::string_view TaskMachineTraits::name(TaskState s) {
  switch (s) {
    case S::SUBMITTED: return "SUBMITTED";
    case S::DELAY_EXECUTION: return "DELAY_EXECUTION";
    case S::DISPATCHING: return "DISPATCHING";
    case S::DISPATCHED: return "DISPATCHED";
    case S::RUNNING: return "RUNNING";
    case S::PAUSED: return "PAUSED";
    case S::KILLED: return "KILLED";
    case S::FAILURE: return "FAILURE";
    case S::SUCCESS: return "SUCCESS";
    case S::FORCED_SUCCESS: return "FORCED_SUCCESS";
    case S::FAILOVER: return "FAILOVER";
  }
  return "?";
}

std::string_view TaskMachineTraits::name(TaskEvent e) {
  switch (e) {
    case E::START: return "START";
    case E::DISPATCH: return "DISPATCH";
    case E::DISPATCHED: return "DISPATCHED";
    case E::RUNNING: return "RUNNING";
    case E::HEARTBEAT: return "HEARTBEAT";
    case E::TIMEOUT: return "TIMEOUT";
    case E::RETRY: return "RETRY";
    case E::PAUSE: return "PAUSE";
    case E::PAUSED: return "PAUSED";
    case E::KILL: return "KILL";
    case E::KILLED: return "KILLED";
    case E::SUCCEEDED: return "SUCCEEDED";
    case E::FAILED: return "FAILED";
    case E::FAILOVER: return "FAILOVER";
    case E::FORCE: return "FORCE";
    case E::UPDATE: return "UPDATE";
    case E::HANDED_OFF: return "HANDED_OFF";
  }
  return "?";
}

std::string_view TaskMachineTraits::name(TaskAction a) {
  switch (a) {
    case A::PERSIST: return "persist";
    case A::START_TASK_TIMER: return "start scheduleToClose";
    case A::ENQUEUE: return "enqueue";
    case A::WITHDRAW: return "withdraw";
    case A::SEND: return "send to executor";
    case A::WATCH_HEARTBEAT: return "watch heartbeat";
    case A::RECORD_PROGRESS: return "record progress";
    case A::CANCEL_INVOCATION: return "cancel invocation";
    case A::START_KILL_TIMER: return "start kill grace";
    case A::START_BACKOFF_TIMER: return "start backoff";
    case A::STOP_ATTEMPT_TIMERS: return "stop attempt timers";
    case A::STOP_ALL_TIMERS: return "stop all timers";
    case A::NOTIFY_WORKFLOW: return "notify workflow";
    case A::REARM_TASK_TIMER: return "re-arm scheduleToClose";
    case A::REJOIN: return "rejoin task list";
    case A::STOP_HEARTBEAT_TIMER: return "stop heartbeat timer";
  }
  return "?";
}

const StateTable<TaskMachineTraits>& TaskMachine::table() {
  static const StateTable<TaskMachineTraits> instance(rows());
  return instance;
}

bool TaskMachine::is_terminal(TaskState s) {
  return s == S::KILLED || s == S::FAILURE || s == S::SUCCESS || s == S::FORCED_SUCCESS;
}

bool TaskMachine::is_success(TaskState s) { return s == S::SUCCESS || s == S::FORCED_SUCCESS; }

bool TaskMachine::is_on_executor(TaskState s) { return s == S::DISPATCHED || s == S::RUNNING; }

}  // namespace troupe::actors
