// What a workflow's history says of where its tasks ran: each invocation (one attempt on one
// worker) with its worker, whether it ran and ended, and where its log is when its outcome
// says. `troupe logs` finds the worker to read an attempt's log from with it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "schema/history.capnp.h"
#include "schema/result.hpp"

namespace troupe::runtime {

/// One invocation of a task: one attempt sent to one worker.
struct TaskRun {
  std::string invocation_id;
  uint32_t attempt = 0;
  std::string worker;          ///< the shard it was dispatched to
  bool started = false;        ///< its worker said it started it, or how it ended
  bool never_started = false;  ///< provably never ran: it never reached its worker, or its worker
                               ///< ended it before it started
  bool ended = false;          ///< the history records its end (an outcome, a kill, a timeout, a failover)
  /// Its log file on its worker, when its outcome names it (a shell task's result or failure);
  /// empty otherwise.
  std::string log_path;

  friend bool operator==(const TaskRun&, const TaskRun&) = default;
};

class TaskRuns {
 public:
  /// Folds the next event of the workflow's history, in sequence order. Events that say nothing
  /// of a task's invocations are passed over. CORRUPTION for a stored event with a malformed
  /// Text field; what it had folded before stays.
  Result<void> add(schema::HistoryEvent::Reader event);

  /// Every invocation of `task`, in dispatch order; empty when it was never dispatched.
  const std::vector<TaskRun>& of(std::string_view task) const;

  /// The last attempt of `task` that may have run (it was dispatched and is not known never to
  /// have started); 0: none.
  uint32_t last_attempt(std::string_view task) const;

  /// The invocations of attempt `attempt` of `task` that may have run, in dispatch order: more
  /// than one when the attempt moved (its worker was lost or drained before it ended).
  std::vector<TaskRun> runs_of_attempt(std::string_view task, uint32_t attempt) const;

  /// Whether `task` runs a handler, which writes no log (the definition, once its submission was
  /// folded, says).
  bool runs_handler(std::string_view task) const { return handler_tasks_.count(std::string(task)) > 0; }

 private:
  void fold(schema::HistoryEvent::Reader event);
  TaskRun* find(std::string_view invocation_id);

  std::map<std::string, std::vector<TaskRun>, std::less<>> runs_;  ///< by task name
  std::map<std::string, std::pair<std::string, size_t>, std::less<>> index_;  ///< invocation id -> (task, position)
  std::set<std::string> handler_tasks_;
};

/// The log path a shell task's outcome names: the "log" of its result ({"exitCode":0,"log":
/// "PATH"}) or the end of its failure's details ("...; log: PATH"); empty when it names none.
std::string log_path_in_result(std::string_view result_json);
std::string log_path_in_failure(std::string_view details);

}  // namespace troupe::runtime
