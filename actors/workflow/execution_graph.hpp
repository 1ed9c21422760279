// The execution graph: what this run of a workflow executes and how far it got. The logical
// graph is the definition (WorkflowSpec); a run executes all of it, or with run-from=T only T
// and its descendants (the others count as done by an earlier run). Plain code.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "schema/definition.hpp"

namespace troupe::actors {

enum class NodeState : uint8_t {
  OUTSIDE,    ///< not part of this run (run-from); counts as succeeded for its dependents
  WAITING,    ///< some dependency has not succeeded yet
  READY,      ///< every dependency succeeded; not started
  ACTIVE,     ///< a task instance is working on it
  PAUSED,
  SUCCEEDED,  ///< succeeded or forced to
  FAILED,
  KILLED,
  BLOCKED,    ///< it will not run in this run: an upstream task failed or was killed, or (in
              ///< a rerun) it did not finish in an earlier run and the rerun leaves it out
};

/// How a task instance ended, as the workflow sees it.
enum class TaskOutcome : uint8_t { SUCCEEDED, FAILED, KILLED, PAUSED };

/// What the graph says the workflow should do next (EVALUATE).
enum class GraphVerdict : uint8_t {
  IN_PROGRESS,  ///< tasks are active or ready
  SUCCEEDED,    ///< every task of the run succeeded
  FAILED,       ///< a task failed or was killed and nothing else can run
  QUIESCENT,    ///< nothing active, but paused tasks remain (a pause completed)
};

class ExecutionGraph {
 public:
  /// `run_from`: the task whose sub-DAG to run; nullopt runs the whole DAG.
  ExecutionGraph(const WorkflowSpec& spec, std::optional<uint32_t> run_from);

  NodeState state(uint32_t task) const { return nodes_[task]; }
  size_t size() const { return nodes_.size(); }
  /// Whether no task depends on `task`: its result is one of the workflow's outputs.
  bool is_final(uint32_t task) const { return dependents_[task].empty(); }

  /// READY tasks in topological order.
  std::vector<uint32_t> ready() const;
  /// ACTIVE tasks.
  std::vector<uint32_t> active() const;
  /// PAUSED tasks.
  std::vector<uint32_t> paused() const;

  /// A READY or PAUSED task got a task instance. Returns false if it was in neither state.
  bool start(uint32_t task);
  /// An ACTIVE task ended (or a PAUSED one was forced to succeed, or killed by its session).
  /// Successors become READY, or
  /// BLOCKED after a failure or kill. Returns false if the task was in neither state.
  bool finish(uint32_t task, TaskOutcome outcome);

  /// An operator's retry of a FAILED or KILLED task: it waits again (READY, as its dependencies
  /// succeeded), and the descendants it alone blocked wait for it. False in any other state.
  bool retry(uint32_t task);
  /// An operator forces a FAILED or KILLED task to success: its descendants run as after a
  /// success (those it alone blocked wait again, its dependents whose dependencies all
  /// succeeded are READY). False in any other state.
  bool force(uint32_t task);

  /// The verdict when nothing new is started (a pausing or stopping workflow asks this too).
  GraphVerdict verdict() const;

  /// The tasks a rerun resets: `from` and its descendants, or with nullopt every task that did
  /// not succeed. Indexed by task.
  std::vector<bool> rerun_set(std::optional<uint32_t> from) const;
  /// A dependency that keeps a rerun of `reset` from running: {task in reset, its dependency
  /// outside reset that did not succeed}. nullopt when every task of the rerun can run.
  std::optional<std::pair<uint32_t, uint32_t>> unmet_dependency(const std::vector<bool>& reset) const;
  /// Reopens a finished graph for a rerun of `reset` (which unmet_dependency accepted): those
  /// tasks wait again, READY once their dependencies succeeded. The others keep their outcome;
  /// one that never finished (left waiting, ready or paused when the run stopped) is BLOCKED,
  /// as the rerun does not run it.
  void rerun(const std::vector<bool>& reset);

  /// A session recreated with rerunAll runs `tasks` again (each ended: succeeded, failed or
  /// killed): each waits
  /// again, READY once its dependencies succeeded; what they blocked waits for them, and a
  /// READY task whose dependencies no longer all succeeded waits again too.
  void restart(const std::vector<uint32_t>& tasks);

 private:
  void promote_dependents(uint32_t task);
  void block_descendants(uint32_t task);
  /// BLOCKED descendants of `task` none of whose dependencies failed, was killed or is blocked
  /// wait again (READY if their dependencies succeeded).
  void unblock_descendants(uint32_t task);
  std::vector<bool> descendants_of(uint32_t task) const;
  bool dependencies_succeeded(uint32_t task) const;

  const WorkflowSpec* spec_;  // owned by the caller (WorkflowModel shares it); outlives the graph
  std::vector<NodeState> nodes_;
  std::vector<std::vector<uint32_t>> dependents_;
};

}  // namespace troupe::actors
