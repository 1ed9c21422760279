// The workflow actor: one per workflow instance. It owns the execution graph and the
// workflow state machine, creates a task actor for each task as it becomes ready, and turns
// their outcomes into the workflow's. Like the task actor, it persists before it acts.
#pragma once

#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/session/session_actor.hpp"
#include "actors/wiring.hpp"
#include "actors/workflow/workflow_model.hpp"
#include "schema/workflow_status.hpp"

namespace troupe {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskOutput& x) {
  return f(caf::meta::type_name("TaskOutput"), x.task, x.result_json);
}

}  // namespace troupe

namespace troupe::actors {

/// How a workflow ended.
struct WorkflowOutcome {
  std::string state;           ///< SUCCESS, FAILED or STOPPED
  std::string failure_reason;  ///< for FAILED: which task failed and why
  std::vector<TaskOutput> outputs;  ///< the results of its final tasks that succeeded, in definition order
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkflowOutcome& x) {
  return f(caf::meta::type_name("WorkflowOutcome"), x.state, x.failure_reason, x.outputs);
}

/// An operator's action on one task of a workflow (retryTask, skipTask, updateTask).
enum class TaskCommandKind : uint8_t { RETRY, SKIP, UPDATE };

struct TaskCommand {
  TaskCommandKind kind = TaskCommandKind::RETRY;
  std::string task;
  std::string reason;        ///< SKIP: recorded with the forced success
  TaskOptionsPatch options;  ///< UPDATE
};

/// What a TaskCommand led to, once durable.
struct TaskCommandOutcome {
  std::string workflow_state;  ///< e.g. RUNNING, also for a FAILED workflow a retry reopened
  std::string task_state;      ///< a TaskState, or WAITING while the task is not scheduled
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskCommand& x) {
  storage::EnumByte<TaskCommandKind> kind{x.kind};
  return f(caf::meta::type_name("TaskCommand"), kind.byte, x.task, x.reason, x.options);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskCommandOutcome& x) {
  return f(caf::meta::type_name("TaskCommandOutcome"), x.workflow_state, x.task_state);
}

using workflow_actor = task_owner_port::extend_with<persisted_port, session_owner_port, probe_port>::extend<
    // from the submitter: persist the submission and start; replies the state once durable
    caf::replies_to<start_atom>::with<std::string>,
    // from clients: replies the state the request led to, once durable; NOT_ALLOWED_IN_STATE
    // when the request does not apply ("PAUSE is not allowed in state SUCCESS")
    caf::replies_to<pause_atom>::with<std::string>,
    caf::replies_to<resume_atom>::with<std::string>,
    caf::replies_to<stop_atom>::with<std::string>,
    // a stop without grace: active invocations are cancelled at once and their tasks count as
    // KILLED without waiting for the confirmation
    caf::replies_to<kill_atom>::with<std::string>,
    // from clients (completeTask/failTask): passes the report to the named task; replies once
    // durable. NOT_FOUND when the task is not active
    caf::replies_to<complete_atom, std::string /* task */, TaskReport>::with<bool>,
    // from clients: reopens the finished workflow and runs the task (empty: every task that
    // did not succeed) and its descendants again; replies RUNNING once durable.
    // NOT_ALLOWED_IN_STATE before the workflow finished, INVALID_ARGUMENT as rerun_plan says
    caf::replies_to<rerun_atom, std::string>::with<std::string>,
    // from clients: an operator's retry, skip or update of one task (see gateway.capnp); replies
    // once durable. INVALID_ARGUMENT for an unknown task, a kind out of range or options that
    // break a definition's rules; NOT_ALLOWED_IN_STATE saying why and what to do instead
    caf::replies_to<operate_atom, TaskCommand>::with<TaskCommandOutcome>,
    // from clients: replies when the workflow has finished (at once if it has)
    caf::replies_to<result_atom>::with<WorkflowOutcome>,
    // from anyone: the workflow's canonical state (WorkflowModel::canonical)
    caf::replies_to<describe_atom>::with<std::string>,
    // from the directory: give up this actor and its tasks' if nothing of the workflow runs in
    // the scheduler (every task waits on an executor, a backoff, a resume or a token; nothing
    // waits to be written; nobody waits for its result here). Replies when the earliest task
    // timer is due (0: none) as it ends; NOT_ALLOWED_IN_STATE when busy. Reports on its tasks'
    // invocations go to `router` (the directory) from then on
    caf::replies_to<passivate_atom, task_port /* router */>::with<int64_t>,
    // from the directory: an executor's report on one of this workflow's invocations, for the
    // task that holds it. Replies as the task's update_atom; true at once if no task holds it
    caf::replies_to<update_atom, TaskReport>::with<bool>>;

/// Who hears that a workflow closed (the directory): id, outcome, and whether the actor ends.
using close_listener = caf::typed_actor<caf::reacts_to<closed_atom, std::string, WorkflowOutcome, bool>>;

struct ReplayedWorkflow;

struct WorkflowSetup {
  std::string id;
  std::string definition_json;  ///< checked by the caller with parse_definition
  std::string input;
  std::string run_from;         ///< empty: the whole DAG
  std::shared_ptr<const Wiring> wiring;  ///< shared by every actor of the system
  /// Set when reviving an open workflow from its history (then the fields above are unused):
  /// the actor records FAILOVER, reconciles tasks that finished unnoticed, recovers its live
  /// tasks, and returns to the state the history shows (running, pausing or stopping).
  std::shared_ptr<const ReplayedWorkflow> replayed;
  /// With `replayed`: a finished workflow adopted as it is (no failover), to be sent a rerun.
  bool closed = false;
  /// With `replayed`: a workflow that passivated, woken by something that happened to it.
  /// Nothing was lost, so nothing is recorded: its tasks get actors again and arm their timers.
  bool awakened = false;
  /// Told closed_atom(id, outcome, ending) once the workflow's close is durable (the directory,
  /// which holds clients waiting for results); `ending` is false when a rerun accepted meanwhile
  /// keeps it going. Empty: nobody.
  close_listener closed_to{};
};

/// The directory spawns workflows unlinked (a link costs the directory a scan of all its links
/// each time a workflow ends or passivates) and ends them itself when it goes.
workflow_actor spawn_workflow(caf::actor_system& system, WorkflowSetup setup);

}  // namespace troupe::actors
