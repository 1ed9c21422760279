// A workflow instance's state, changed only by applying its history events: the workflow's
// own events, and taskScheduled, which the workflow writes when it creates a task instance.
// Live operation and replay apply the same events and reach the same canonical().
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/history_events.hpp"
#include "actors/task/task_machine.hpp"
#include "actors/workflow/execution_graph.hpp"
#include "actors/workflow/workflow_machine.hpp"
#include "schema/definition.hpp"
#include "schema/definition_cache.hpp"

namespace troupe::actors {

struct WorkflowModel {
  std::string id;
  WorkflowState state = WorkflowState::SUBMITTED;
  std::shared_ptr<const WorkflowSpec> spec;  ///< immutable once submitted; shared with tasks
  std::shared_ptr<const std::string> definition_json;  ///< shared by instances of one definition
  /// The workflow's input (JSON), shared with its task actors, which hand it to every task.
  std::shared_ptr<const std::string> input;
  std::string run_from;
  std::optional<ExecutionGraph> graph;
  std::string failure_reason;
  /// The first task failure, "task 'x' failed: reason": becomes the workflow's failure reason.
  std::string first_task_failure;
  int32_t first_failed_task = -1;  ///< the index of the task first_task_failure names; -1: none
  uint32_t reruns = 0;             ///< how many times the closed workflow was reopened
  /// Tasks an operator retried that wait to be scheduled: their next instance continues the
  /// failed one's attempts (taskScheduled.continuesAttempts).
  std::set<uint32_t> retried;
  /// Tasks an operator skipped before they were scheduled, with the reason: recorded
  /// FORCED_SUCCESS when they would be.
  std::map<uint32_t, std::string> skips;
  /// Tasks that failed and still count as failed, in the order they failed, with the detail:
  /// when the first is retried or skipped, the next names the workflow's failure.
  std::vector<std::pair<uint32_t, std::string>> failures;
  /// A session recreated with rerunAll (workflowSessionRerun): the tasks of it that run again,
  /// once those still ending (active ones after a succeeded one, killed first) have ended.
  struct SessionRerun {
    std::vector<uint32_t> tasks;
    std::set<uint32_t> killed;  ///< the active ones it ends: their next instance continues their attempts
    std::set<uint32_t> ending;  ///< of those, the ones not yet ended
  };
  std::map<uint32_t, SessionRerun> session_reruns;  ///< by session index, until their tasks wait again
  /// The last recreation (session attempt) each session's rerun was recorded for: a rerun asked
  /// again after a restart is refused.
  std::map<uint32_t, uint32_t> rerun_attempts;
  /// Tasks that ended forced to success (an operator's skip): a session's rerun leaves them be.
  std::set<uint32_t> forced;
  int64_t submitted_us = 0;  ///< when the submission was recorded
  bool finalized = false;
  bool stop_immediate = false;  ///< a kill: active tasks are cancelled without grace (sticky)
  uint64_t applied = 0;
  /// Where submitted definitions are parsed (shared across workflows); nullptr parses each.
  /// Not part of the state.
  DefinitionCache* definitions = nullptr;

  /// Applies one event. Errors as TaskModel::apply; INVALID_ARGUMENT also for a submitted
  /// definition that does not parse or names an unknown run-from task.
  Result<void> apply(const EventView& event);

  /// The tasks a rerun from task `from` (empty: every task that did not succeed) would reset,
  /// indexed by task. NOT_ALLOWED_IN_STATE unless the workflow finished and was finalized;
  /// INVALID_ARGUMENT, saying what to do instead, for an unknown task, nothing to rerun, or a
  /// task of the rerun depending on one outside it that did not succeed.
  Result<std::vector<bool>> rerun_plan(std::string_view from) const;

  /// The node of task `name` for an operator's RETRY_TASK, SKIP_TASK or UPDATE_TASK:
  /// INVALID_ARGUMENT for a task the definition lacks; NOT_ALLOWED_IN_STATE, saying why and what
  /// to do instead, when the task's state or the workflow's refuses the operation.
  Result<uint32_t> task_for(WorkflowEvent operation, std::string_view name) const;

  /// Every field, the graph's node states included, in a fixed order.
  std::string canonical() const;

  /// The machine event a workflow body stands for; nullopt for other bodies.
  static std::optional<WorkflowEvent> event_of(schema::EventBody::Which body);

  /// How a task's final state reads to the workflow.
  static TaskOutcome outcome_of(TaskState state);

 private:
  /// Task `task` no longer counts as failed: the next failure, if any, names the workflow's.
  void forget_failure(uint32_t task);
  /// The session rerun's tasks wait again in the graph (its killed ones as retries).
  void restart_session(uint32_t session);
  Result<void> apply_session_rerun(schema::SessionRerun::Reader rerun);
};

}  // namespace troupe::actors
