// Replay: a workflow's models rebuilt from its stored history, by applying each event to the
// model of the actor that wrote it, exactly as the live actors did.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "actors/matching/wait_board.hpp"
#include "actors/session/session_model.hpp"
#include "actors/task/task_model.hpp"
#include "actors/workflow/workflow_model.hpp"
#include "schema/workflow_status.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

struct ReplayedWorkflow {
  WorkflowModel workflow;
  std::map<std::string, TaskModel> tasks;  ///< by task name
  /// By session name: its latest instance (a rerun starts a new one).
  std::map<std::string, SessionModel> sessions;
};

/// What describe shows of a replayed workflow (every task of its definition included). A task
/// with no instance is WAITING, or UPSTREAM_FAILED when the execution graph says it will not
/// run in this run (a task it depends on failed or was killed) or the workflow failed. A task
/// waiting in its task list gets the reason `waits` holds for that list (none without a board).
WorkflowStatus snapshot(const ReplayedWorkflow& replayed, const WaitBoard* waits = nullptr);

/// `state` as the client API's code.
WorkflowStateCode state_code(WorkflowState state);
TaskStateCode state_code(TaskState state);

/// The results of the workflow's final tasks (those no other task depends on) that succeeded,
/// in definition order.
std::vector<TaskOutput> final_outputs(const ReplayedWorkflow& replayed);

/// Applies `history` (in sequence order) to fresh models. CORRUPTION naming the sequence if an
/// event does not decode or does not apply: a history troupe could not have written.
/// `definitions`, if given, supplies (and shares) the parsed definition.
Result<ReplayedWorkflow> replay(const std::string& workflow_id,
                                const std::vector<storage::StoredEvent>& history,
                                DefinitionCache* definitions = nullptr);

/// Applies the next event of a history to models replayed so far (start from a
/// ReplayedWorkflow whose workflow.id is set): a watcher folds a live history this way, event
/// by event. CORRUPTION as replay() says.
Result<void> apply(ReplayedWorkflow& replayed, const storage::StoredEvent& stored);

/// Reads the whole history of `workflow_id` from `store` and replays it.
Result<ReplayedWorkflow> replay(storage::HistoryStore& store, const std::string& workflow_id,
                                DefinitionCache* definitions = nullptr);

}  // namespace troupe::actors
