// A workflow and its tasks as the workflow's history records them, in plain values: what the
// scheduler's describe answers, what clients receive, what the CLI draws.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// A workflow's state, value for value gateway.capnp's WorkflowState (checked where the two
/// meet). UNKNOWN: an answer from a scheduler that did not say (read the text then).
enum class WorkflowStateCode : uint8_t {
  UNKNOWN,
  SUBMITTED,
  RUNNING,
  READY_PAUSE,
  PAUSED,
  READY_STOP,
  STOPPED,
  SUCCESS,
  FAILED,
  FAILOVER,
};

/// A task's state, value for value gateway.capnp's TaskState: the task machine's states plus
/// WAITING (not scheduled yet), UPSTREAM_FAILED (will not run in this run: a task it depends
/// on failed or was killed, or the workflow failed) and NEVER_ATTEMPTED.
enum class TaskStateCode : uint8_t {
  UNKNOWN,
  WAITING,
  UPSTREAM_FAILED,
  SUBMITTED,
  DELAY_EXECUTION,
  DISPATCHING,
  DISPATCHED,
  RUNNING,
  PAUSED,
  KILLED,
  FAILURE,
  SUCCESS,
  FORCED_SUCCESS,
  FAILOVER,
  NEVER_ATTEMPTED,  ///< killed by its session before it ran (Deadline's NEVER_ATTEMPTED)
};

inline constexpr std::array<std::string_view, 10> workflow_state_names = {
    "UNKNOWN", "SUBMITTED", "RUNNING", "READY_PAUSE", "PAUSED",
    "READY_STOP", "STOPPED", "SUCCESS", "FAILED", "FAILOVER"};
inline constexpr std::array<std::string_view, 15> task_state_names = {
    "UNKNOWN", "WAITING", "UPSTREAM_FAILED", "SUBMITTED", "DELAY_EXECUTION",
    "DISPATCHING", "DISPATCHED", "RUNNING", "PAUSED", "KILLED",
    "FAILURE", "SUCCESS", "FORCED_SUCCESS", "FAILOVER", "NEVER_ATTEMPTED"};

/// "READY_PAUSE" for READY_PAUSE.
inline std::string_view name_of(WorkflowStateCode code) {
  const auto i = static_cast<size_t>(code);
  return i < workflow_state_names.size() ? workflow_state_names[i] : workflow_state_names[0];
}
inline std::string_view name_of(TaskStateCode code) {
  const auto i = static_cast<size_t>(code);
  return i < task_state_names.size() ? task_state_names[i] : task_state_names[0];
}

/// The code a state's name stands for; UNKNOWN for any other text (OPEN, CLOSED...).
inline WorkflowStateCode workflow_state_code(std::string_view name) {
  for (size_t i = 1; i < workflow_state_names.size(); ++i) {
    if (workflow_state_names[i] == name) return static_cast<WorkflowStateCode>(i);
  }
  return WorkflowStateCode::UNKNOWN;
}
inline TaskStateCode task_state_code(std::string_view name) {
  for (size_t i = 1; i < task_state_names.size(); ++i) {
    if (task_state_names[i] == name) return static_cast<TaskStateCode>(i);
  }
  return TaskStateCode::UNKNOWN;
}

/// What a task returned.
struct TaskOutput {
  std::string task;         ///< the task's name
  std::string result_json;  ///< its result, JSON text as the task gave it; empty: none

  friend bool operator==(const TaskOutput&, const TaskOutput&) = default;
};

struct TaskStatus {
  std::string name;
  std::string state;     ///< a task state, WAITING before it was scheduled, or UPSTREAM_FAILED
  uint32_t attempt = 0;  ///< its current or last attempt, from 1; 0: never started
  std::string worker;    ///< the shard of its current or last invocation
  std::string failure;   ///< its last failure's reason ("SpawnFailed")
  std::string progress;  ///< its last heartbeat's progress
  bool awaiting_completion = false;  ///< asyncCompletion: handed off, waiting for its token
  TaskStateCode state_code = TaskStateCode::UNKNOWN;  ///< `state` as a code
  std::string failure_details;  ///< its last failure's details, for people
  std::string result_json;      ///< its result once it succeeded; empty: none
  int64_t started_us = 0;       ///< first sent to a worker, µs since the epoch; 0: never
  int64_t ended_us = 0;         ///< when it ended; 0: not yet
  /// While it waits in its task list (DISPATCHING): why no worker has taken it yet, e.g. "no
  /// live worker serves task list 'gpu'"; empty otherwise, or when the scheduler cannot tell.
  std::string wait_reason;
  /// The tasks it depends on (its definition's dependsOn), by name: the DAG's edges.
  std::vector<std::string> depends_on{};
  /// The session it runs in, by name; empty: none.
  std::string session{};

  /// "SpawnFailed: cannot run 'x': No such file or directory": reason and details; empty if
  /// it never failed.
  std::string failure_message() const {
    if (failure_details.empty() || failure.empty()) return failure.empty() ? failure_details : failure;
    return failure + ": " + failure_details;
  }
  /// From its start to its end, or to `now_us` while it has not ended; 0 if it never started.
  int64_t duration_us(int64_t now_us) const {
    if (started_us == 0) return 0;
    const int64_t until = ended_us != 0 ? ended_us : now_us;
    return until > started_us ? until - started_us : 0;
  }
};

/// One session of a workflow as `troupe status` shows it.
struct SessionStatus {
  std::string name;
  std::string state;     ///< a session state (CREATING, OPEN, CLOSED...), WAITING before any task of it was ready
  uint32_t attempt = 0;  ///< its placement: 1, one more for each recreation; 0: never placed
  std::string worker;    ///< the worker that holds it, or held it last
  std::string resource_id;
  std::string env_enter;  ///< envEnter's outcome: SUCCEEDED, "FAILED: why", or empty (not run)
  std::string env_exit;   ///< envExit's, likewise
  std::string failure;    ///< why it failed ("reason: details"); empty unless FAILED or FAILING
  std::string recreate_token;  ///< a later session's recreateToken continues on its resource
  /// While it looks for a worker (CREATING, or REESTABLISHING with a resource to wait for): why
  /// none has taken it yet; empty otherwise, or when the scheduler cannot tell.
  std::string wait_reason{};
};

struct WorkflowStatus {
  std::string workflow_id;
  std::string state;
  std::string detail;             ///< why a failed workflow failed: the task, reason and details
  std::vector<TaskStatus> tasks;  ///< in definition order
  WorkflowStateCode state_code = WorkflowStateCode::UNKNOWN;  ///< `state` as a code
  std::vector<SessionStatus> sessions;  ///< in definition order; empty when it has none
};

}  // namespace troupe
