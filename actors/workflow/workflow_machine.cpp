// The workflow state table. Reading guide: a workflow runs while RUNNING; PAUSE and STOP pass
// through READY_* states that wait for active tasks; the actor itself raises the
// "quiescent" events (PAUSED, STOPPED, SUCCEED, FAILED) after EVALUATE finds them due. An
// operator's RETRY_TASK and SKIP_TASK change the graph (a failed task waits again, or counts as
// succeeded): a running workflow starts what became ready, a pausing or paused one keeps it for
// its resume, and a FAILED one reopens, as Airflow reopens a DAG run whose task is cleared; a
// stopping or stopped one refuses them (a stop was asked for: rerun it). UPDATE_TASK changes no
// graph and no state.
#include "actors/workflow/workflow_machine.hpp"

namespace troupe::actors {
namespace {

using S = WorkflowState;
using E = WorkflowEvent;
using A = WorkflowAction;
using R = Row<S, E, A>;

std::vector<R> rows() {
  return {
      {S::SUBMITTED, E::START, S::RUNNING, {A::PERSIST, A::START_READY_TASKS, A::EVALUATE}},
      {S::SUBMITTED, E::STOP, S::STOPPED, {A::PERSIST, A::REPLY}},
      {S::SUBMITTED, E::FAILOVER, S::FAILOVER, {A::PERSIST}},

      {S::RUNNING, E::TASK_FINISHED, S::RUNNING, {A::PERSIST, A::START_READY_TASKS, A::EVALUATE}},
      {S::RUNNING, E::PAUSE, S::READY_PAUSE, {A::PERSIST, A::REPLY, A::PAUSE_WAITING_TASKS, A::EVALUATE}},
      // Also raised by EVALUATE when a task paused after the workflow had resumed.
      {S::RUNNING, E::RESUME, S::RUNNING,
       {A::PERSIST, A::REPLY, A::RESUME_PAUSED_TASKS, A::START_READY_TASKS, A::EVALUATE}},
      {S::RUNNING, E::STOP, S::READY_STOP, {A::PERSIST, A::REPLY, A::KILL_ACTIVE_TASKS, A::EVALUATE}},
      {S::RUNNING, E::SUCCEED, S::SUCCESS, {A::PERSIST}},
      {S::RUNNING, E::FAILED, S::FAILED, {A::PERSIST}},
      {S::RUNNING, E::FAILOVER, S::FAILOVER, {A::PERSIST}},
      {S::RUNNING, E::RETRY_TASK, S::RUNNING, {A::PERSIST, A::REPLY, A::START_READY_TASKS, A::EVALUATE}},
      {S::RUNNING, E::SKIP_TASK, S::RUNNING, {A::PERSIST, A::REPLY, A::START_READY_TASKS, A::EVALUATE}},
      {S::RUNNING, E::UPDATE_TASK, S::RUNNING, {A::PERSIST, A::REPLY}},
      {S::RUNNING, E::RERUN_SESSION, S::RUNNING, {A::PERSIST, A::START_READY_TASKS, A::EVALUATE}},

      {S::READY_PAUSE, E::TASK_FINISHED, S::READY_PAUSE, {A::PERSIST, A::EVALUATE}},
      {S::READY_PAUSE, E::PAUSE, S::READY_PAUSE, {A::REPLY}, true, "already pausing"},
      {S::READY_PAUSE, E::PAUSED, S::PAUSED, {A::PERSIST}},
      {S::READY_PAUSE, E::RESUME, S::RUNNING,
       {A::PERSIST, A::REPLY, A::RESUME_PAUSED_TASKS, A::START_READY_TASKS, A::EVALUATE}},
      {S::READY_PAUSE, E::STOP, S::READY_STOP, {A::PERSIST, A::REPLY, A::KILL_ACTIVE_TASKS, A::EVALUATE}},
      {S::READY_PAUSE, E::SUCCEED, S::SUCCESS, {A::PERSIST}},
      {S::READY_PAUSE, E::FAILED, S::FAILED, {A::PERSIST}},
      {S::READY_PAUSE, E::FAILOVER, S::FAILOVER, {A::PERSIST}},
      {S::READY_PAUSE, E::RETRY_TASK, S::READY_PAUSE, {A::PERSIST, A::REPLY, A::EVALUATE}},
      {S::READY_PAUSE, E::SKIP_TASK, S::READY_PAUSE, {A::PERSIST, A::REPLY, A::EVALUATE}},
      {S::READY_PAUSE, E::UPDATE_TASK, S::READY_PAUSE, {A::PERSIST, A::REPLY}},
      {S::READY_PAUSE, E::RERUN_SESSION, S::READY_PAUSE, {A::PERSIST, A::EVALUATE}},

      {S::PAUSED, E::PAUSE, S::PAUSED, {A::REPLY}, true, "already paused"},
      {S::PAUSED, E::RESUME, S::RUNNING,
       {A::PERSIST, A::REPLY, A::RESUME_PAUSED_TASKS, A::START_READY_TASKS, A::EVALUATE}},
      {S::PAUSED, E::STOP, S::READY_STOP, {A::PERSIST, A::REPLY, A::KILL_ACTIVE_TASKS, A::EVALUATE}},
      {S::PAUSED, E::FAILOVER, S::FAILOVER, {A::PERSIST}},
      // What an operator retries or unblocks waits for the resume; a paused task forced to
      // success finishes, and may leave nothing to run.
      {S::PAUSED, E::RETRY_TASK, S::PAUSED, {A::PERSIST, A::REPLY}},
      {S::PAUSED, E::SKIP_TASK, S::PAUSED, {A::PERSIST, A::REPLY, A::EVALUATE}},
      {S::PAUSED, E::UPDATE_TASK, S::PAUSED, {A::PERSIST, A::REPLY}},
      // What of the session runs again waits for the resume.
      {S::PAUSED, E::RERUN_SESSION, S::PAUSED, {A::PERSIST}},
      {S::PAUSED, E::TASK_FINISHED, S::PAUSED, {A::PERSIST, A::EVALUATE}},
      {S::PAUSED, E::SUCCEED, S::SUCCESS, {A::PERSIST}},
      {S::PAUSED, E::FAILED, S::FAILED, {A::PERSIST}},

      {S::READY_STOP, E::TASK_FINISHED, S::READY_STOP, {A::PERSIST, A::EVALUATE}},
      {S::READY_STOP, E::STOP, S::READY_STOP, {A::REPLY}, true, "already stopping"},
      {S::READY_STOP, E::STOPPED, S::STOPPED, {A::PERSIST}},
      {S::READY_STOP, E::FAILOVER, S::FAILOVER, {A::PERSIST}},

      {S::STOPPED, E::STOP, S::STOPPED, {A::REPLY}, true, "already stopped"},
      {S::STOPPED, E::FINALIZE, S::STOPPED, {A::PERSIST, A::CLOSE}},
      {S::SUCCESS, E::FINALIZE, S::SUCCESS, {A::PERSIST, A::CLOSE}},
      {S::FAILED, E::FINALIZE, S::FAILED, {A::PERSIST, A::CLOSE}},

      // A rerun reopens a closed workflow (the model refuses one not yet finalized): the tasks
      // it resets start as on a first run.
      {S::STOPPED, E::RERUN, S::RUNNING, {A::PERSIST, A::REPLY, A::START_READY_TASKS, A::EVALUATE}},
      {S::SUCCESS, E::RERUN, S::RUNNING, {A::PERSIST, A::REPLY, A::START_READY_TASKS, A::EVALUATE}},
      {S::FAILED, E::RERUN, S::RUNNING, {A::PERSIST, A::REPLY, A::START_READY_TASKS, A::EVALUATE}},

      // An operator mends the failure a workflow ended with: it reopens (the model refuses one
      // not yet finalized, as for a rerun) and carries on from there.
      {S::FAILED, E::RETRY_TASK, S::RUNNING, {A::PERSIST, A::REPLY, A::START_READY_TASKS, A::EVALUATE}},
      {S::FAILED, E::SKIP_TASK, S::RUNNING, {A::PERSIST, A::REPLY, A::START_READY_TASKS, A::EVALUATE}},
      // Recorded on a finished workflow's task, for a retry or a rerun to use.
      {S::FAILED, E::UPDATE_TASK, S::FAILED, {A::PERSIST, A::REPLY}},
      {S::STOPPED, E::UPDATE_TASK, S::STOPPED, {A::PERSIST, A::REPLY}},
      {S::SUCCESS, E::UPDATE_TASK, S::SUCCESS, {A::PERSIST, A::REPLY}},

      // Revived after a scheduler restart: carry on, or honour a pause or stop that the
      // history shows was requested.
      {S::FAILOVER, E::START, S::RUNNING, {A::PERSIST, A::START_READY_TASKS, A::EVALUATE}},
      {S::FAILOVER, E::PAUSE, S::READY_PAUSE, {A::PERSIST, A::PAUSE_WAITING_TASKS, A::EVALUATE}},
      {S::FAILOVER, E::STOP, S::READY_STOP, {A::PERSIST, A::KILL_ACTIVE_TASKS, A::EVALUATE}},
      {S::FAILOVER, E::TASK_FINISHED, S::FAILOVER, {A::PERSIST}},
  };
}

}  // namespace

std::string_view WorkflowMachineTraits::name(WorkflowState s) {
  switch (s) {
    case S::SUBMITTED: return "SUBMITTED";
    case S::RUNNING: return "RUNNING";
    case S::READY_PAUSE: return "READY_PAUSE";
    case S::PAUSED: return "PAUSED";
    case S::READY_STOP: return "READY_STOP";
    case S::STOPPED: return "STOPPED";
    case S::SUCCESS: return "SUCCESS";
    case S::FAILED: return "FAILED";
    case S::FAILOVER: return "FAILOVER";
  }
  return "?";
}

std::string_view WorkflowMachineTraits::name(WorkflowEvent e) {
  switch (e) {
    case E::START: return "START";
    case E::TASK_FINISHED: return "TASK_FINISHED";
    case E::PAUSE: return "PAUSE";
    case E::PAUSED: return "PAUSED";
    case E::RESUME: return "RESUME";
    case E::STOP: return "STOP";
    case E::STOPPED: return "STOPPED";
    case E::SUCCEED: return "SUCCEED";
    case E::FAILED: return "FAILED";
    case E::FINALIZE: return "FINALIZE";
    case E::FAILOVER: return "FAILOVER";
    case E::RERUN: return "RERUN";
    case E::RETRY_TASK: return "RETRY_TASK";
    case E::SKIP_TASK: return "SKIP_TASK";
    case E::UPDATE_TASK: return "UPDATE_TASK";
    case E::RERUN_SESSION: return "RERUN_SESSION";
  }
  return "?";
}

std::string_view WorkflowMachineTraits::name(WorkflowAction a) {
  switch (a) {
    case A::PERSIST: return "persist";
    case A::START_READY_TASKS: return "start ready tasks";
    case A::PAUSE_WAITING_TASKS: return "pause waiting tasks";
    case A::RESUME_PAUSED_TASKS: return "resume paused tasks";
    case A::KILL_ACTIVE_TASKS: return "kill active tasks";
    case A::EVALUATE: return "evaluate";
    case A::REPLY: return "reply";
    case A::CLOSE: return "close";
  }
  return "?";
}

const StateTable<WorkflowMachineTraits>& WorkflowMachine::table() {
  static const StateTable<WorkflowMachineTraits> instance(rows());
  return instance;
}

bool WorkflowMachine::is_terminal(WorkflowState state) {
  return state == S::SUCCESS || state == S::FAILED || state == S::STOPPED;
}

}  // namespace troupe::actors
