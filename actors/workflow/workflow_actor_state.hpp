// The workflow actor's state and the functions its files share: workflow_actor.cpp (the
// workflow's table, its tasks, clients' requests) and workflow_sessions.cpp (its sessions'
// actors). Included by those two files only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/session/session_actor.hpp"
#include "actors/system/actor_roster.hpp"
#include "actors/system/replay.hpp"
#include "actors/task/task_actor.hpp"
#include "actors/workflow/workflow_actor.hpp"

namespace troupe::actors {

struct WorkflowActorState {
  static inline const char* name = "workflow";
  WorkflowModel model;
  WorkflowSetup setup;
  std::map<uint32_t, task_actor> tasks;  // live task actors by task index
  /// Live session actors by session index: the workflow does not close while one lives (its
  /// envExit runs after its tasks, before the workflow's end).
  std::map<uint32_t, session_actor> sessions;
  /// Sessions that will run none of their tasks in this run (they failed, or their tasks were
  /// stopped): a task of one that becomes ready ends at once, killed, without running.
  std::set<uint32_t> stopped_sessions;
  /// Tasks killed for a session's rerun (rerunAll): their end is no failure to tell the session.
  std::set<uint32_t> rerun_kills;
  /// Why the first session that failed failed: the workflow's failure, before its tasks'.
  std::string session_failure;
  /// The models of tasks without actors, by task index, as replay has them: those of the
  /// history this actor was revived from, those that ended here without success, and those an
  /// operator's update or skip reached before they were scheduled. The next instance of a task
  /// starts from its model (invocation ids count on, an operator's options and retry carry
  /// over), and the workflow records an operator's action for a task that has no actor.
  std::map<uint32_t, TaskModel> dormant;
  /// A finished workflow adopted to answer a rerun; it ends if the rerun is refused.
  bool adopted_closed = false;
  std::vector<caf::typed_response_promise<WorkflowOutcome>> waiters;
  /// The results of final tasks (no other task depends on them) that succeeded, by task index:
  /// from their reports, or from the replayed history. Kept as long as the graph says succeeded.
  std::map<uint32_t, std::string> outputs;
  /// Client requests not answered yet (answered by effects once durable, or by fail_stop).
  /// Shared with the effects that answer them, so that an answered one reads as such.
  std::vector<std::shared_ptr<caf::typed_response_promise<std::string>>> replies;
  /// Kills accepted and not answered yet: a kill answers with the state it ends in (STOPPED)
  /// once that is durable, which follows at once since its tasks' kills need no worker.
  std::vector<std::shared_ptr<caf::typed_response_promise<std::string>>> kills;
  /// Operators' task commands not answered yet, likewise.
  std::vector<std::shared_ptr<caf::typed_response_promise<TaskCommandOutcome>>> command_replies;
  EffectPipeline pipeline;
  /// A passivation under way: the tasks asked, the answers still awaited.
  struct Passivation {
    caf::typed_response_promise<int64_t> promise;
    size_t waiting = 0;
    int64_t due_us = 0;    ///< the earliest task timer, 0: none
    uint64_t applied = 0;  ///< the model's events when it began: any new one calls it off
    uint64_t round = 0;
  };
  std::optional<Passivation> passivating;
  uint64_t passivation_rounds = 0;
  /// Requests passed on to a task actor and not answered yet (complete, a routed update). A
  /// task tells the workflow it ended before its own event is durable, so the workflow can
  /// close before the task answers; it then ends only once every such answer has been passed
  /// back.
  uint32_t asks = 0;
  bool quit_after_asks = false;
  /// The actor has decided to end (its workflow closed, or it passivated): a command that waited
  /// for its pending effects is bounced, so that the directory asks the actor it finds now.
  bool ending = false;
  RosterSeat seat;
};

namespace workflow_detail {

using Self = workflow_actor::stateful_pointer<WorkflowActorState>;

// --- workflow_sessions.cpp ---

/// A task of session `index` is ready: the session's actor (spawned now if it has none) looks
/// for a worker, unless it has one.
void session_needed(Self self, uint32_t index);
/// Tells a task of `session` that the session will run nothing more of it: it is killed, and ends
/// NEVER_ATTEMPTED if it has not run.
void never_attempt(Self self, const task_actor& task, uint32_t session);
/// Kills the still-active tasks of session `index`, which will not run them.
void kill_session_tasks(Self self, uint32_t index);
/// Whether every task of session `index` is over in this run (ended, or blocked behind one
/// that failed): its worker has nothing more to run.
bool session_tasks_over(const WorkflowActorState& st, uint32_t index);
/// A task ended in `state`: its session hears whether it failed for good (not when a rerun of
/// the session killed it), and every live session whose tasks are all over hears so.
void tell_sessions(Self self, uint32_t index, TaskState state, const TaskModel* ended, bool rerun_kill);
/// What a rerun of session `index` (recreated with rerunAll) runs again: its tasks that
/// succeeded (not those an operator skipped), and its tasks active after one of them (`ending`:
/// killed first, they wait for their dependencies again). No tasks: nothing to rerun.
struct SessionRerunPlan {
  std::vector<uint32_t> tasks;
  std::vector<uint32_t> ending;
};
SessionRerunPlan plan_session_rerun(const WorkflowActorState& st, uint32_t index);
/// Kills `task` of session `index` for the session's rerun: it runs again once the rerun's
/// tasks wait again.
void end_for_rerun(Self self, const task_actor& task, uint32_t task_index, uint32_t index);
/// The sessions a revived workflow had (see workflow_sessions.cpp); returns what tells them to
/// carry on, once the revival is durable.
std::function<void()> revive_sessions(Self self, const ReplayedWorkflow& replayed);

}  // namespace workflow_detail
}  // namespace troupe::actors
