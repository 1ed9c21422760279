// Replay: a workflow's models rebuilt from its stored history, by applying each event to the
// model of the actor that wrote it, exactly as the live actors did.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "actors/task/task_model.hpp"
#include "actors/workflow/workflow_model.hpp"
#include "schema/workflow_status.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

struct ReplayedWorkflow {
  WorkflowModel workflow;
  std::map<std::string, TaskModel> tasks;  ///< by task name
};

/// What describe shows of a replayed workflow (every task of its definition included).
WorkflowStatus snapshot(const ReplayedWorkflow& replayed);

/// Applies `history` (in sequence order) to fresh models. CORRUPTION naming the sequence if an
/// event does not decode or does not apply: a history troupe could not have written.
/// `definitions`, if given, supplies (and shares) the parsed definition.
Result<ReplayedWorkflow> replay(const std::string& workflow_id,
                                const std::vector<storage::StoredEvent>& history,
                                DefinitionCache* definitions = nullptr);

/// Reads the whole history of `workflow_id` from `store` and replays it.
Result<ReplayedWorkflow> replay(storage::HistoryStore& store, const std::string& workflow_id,
                                DefinitionCache* definitions = nullptr);

}  // namespace troupe::actors
