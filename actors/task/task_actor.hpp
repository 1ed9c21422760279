// The task actor: one per task instance, alive until the task reaches a terminal state. Its
// mailbox serialises everything that happens to the task; each event is persisted before
// anything it causes is visible outside (persist, then act).
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/system/actor_probe.hpp"
#include "actors/task/task_model.hpp"
#include "actors/wiring.hpp"
#include "schema/definition.hpp"

namespace troupe::actors {

using task_actor = task_port::extend_with<persisted_port, probe_port>::extend<
    // from the workflow: start (or start again after a pause); pause; kill
    caf::reacts_to<start_atom>, caf::reacts_to<pause_atom>, caf::reacts_to<kill_atom, bool /* immediate: no grace */>,
    // from the workflow: a kill of a session's task (its session will run nothing more of it,
    // or the workflow stops); why, for people. An attempt that never started ends NEVER_ATTEMPTED
    caf::reacts_to<kill_atom, session_atom, bool /* immediate */, std::string>,
    // from the workflow, once after reviving from history: carry on from the replayed state
    // (an invocation that was on an executor is failed over, as the executor is gone)
    caf::reacts_to<recover_atom>,
    // from the workflow, once after reviving from passivation: arm the timers the history leaves
    caf::reacts_to<awaken_atom>,
    // from the workflow: give up this actor if nothing of the task runs here. Replies when its
    // next timer is due (0: none) once its executor sends reports to `router` (the directory);
    // NOT_ALLOWED_IN_STATE when busy. Then the task waits for its end or a thaw
    caf::replies_to<passivate_atom, task_port /* router */>::with<int64_t>,
    // from the workflow: passivation was called off; carry on
    caf::reacts_to<thaw_atom>,
    // from the task itself: a timer of `kind` (TimerKind) and generation fired
    caf::reacts_to<timeout_atom, uint8_t, uint64_t>,
    // from the workflow, for completeTask/failTask: ends a handed-off invocation with the
    // report (SUCCEEDED or FAILED); replies once durable. NOT_FOUND when the report names an
    // invocation that is not the current one, NOT_ALLOWED_IN_STATE before it handed off
    caf::replies_to<complete_atom, TaskReport>::with<bool>,
    // from the workflow, for an operator's skipTask: FORCED_SUCCESS with the reason; replies
    // the state once durable. NOT_ALLOWED_IN_STATE while an attempt is on an executor
    caf::replies_to<skip_atom, std::string /* reason */>::with<std::string>,
    // from the workflow, for an operator's updateTask: the options from the next dispatch on;
    // replies the task's state once durable. INVALID_ARGUMENT listing what is wrong with them
    caf::replies_to<options_atom, TaskOptionsPatch>::with<std::string>,
    // from anyone: the task's canonical state (TaskModel::canonical)
    caf::replies_to<describe_atom>::with<std::string>>;

/// Everything a task actor starts from.
struct TaskSetup {
  std::string workflow_id;
  std::shared_ptr<const WorkflowSpec> spec;
  uint32_t index = 0;
  TaskModel model;  ///< with taskScheduled applied (or a replayed history)
  task_owner_port owner;
  std::shared_ptr<const Wiring> wiring;  ///< shared by every actor of the system
  /// The workflow's input (JSON), shared by the workflow and all its tasks; null reads as {}.
  std::shared_ptr<const std::string> workflow_input;
};

/// Spawns a task actor from another actor (its workflow) or from the system (tests, replay).
task_actor spawn_task(caf::local_actor* parent, TaskSetup setup);
task_actor spawn_task(caf::actor_system& system, TaskSetup setup);

}  // namespace troupe::actors
