// A workflow's history as the chaos checks read it (plain values), and the invariants every
// history must keep whatever faults it went through:
//  - sequences run 1, 2, 3, ... with no gap or repeat;
//  - each invocation is dispatched once and ends once (taskSucceeded, taskFailed, taskKilled,
//    taskTimedOut, or taskRetryScheduled for its attempt; a taskFailover precedes the end of a
//    lost one, and is the end of one that never started), and nothing reports on it after;
//  - a task's next invocation is dispatched only after its previous one ended, so every re-run
//    has a recorded reason: the cause of the taskRetryScheduled that ended the previous
//    invocation ("ExitCode:3", "Failover", "Timeout:heartbeat", ...), or a workflowRerun;
//  - nothing follows workflowFinalized but a workflowRerun, and a closed workflow has no
//    invocation left open.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace troupe::chaos {

/// The fields of a history event the checks read.
struct Event {
  uint64_t sequence = 0;
  int64_t timestamp_us = 0;
  std::string actor_kind;  ///< workflow, task, session, worker
  std::string actor_id;    ///< the workflow id or the task's name
  uint32_t attempt = 0;
  std::string kind;        ///< the body's name, e.g. "taskDispatched"
  std::string invocation;  ///< the body's invocationId, when it has one
  std::string worker;      ///< the body's workerShard (taskDispatched, taskFailover)
  std::string
      reason;  ///< a retry's cause, a failure's reason, a failover's reason, a timeout's kind
  uint32_t next_attempt = 0;
  std::string failover_kind;  ///< taskFailover's kind: neverStarted, mayHaveStarted,
                              ///< lostWhileRunning, resultLost

  /// "#SEQ TIME ACTOR attempt N KIND (fields)", for reports.
  std::string describe() const;
};

/// Decodes a packed schema::HistoryEvent (client::WatchedEvent::packed). Throws
/// std::runtime_error if it does not decode.
Event decode_event(const std::string& packed);

/// The last part of an invocation id (WORKFLOW/TASK/ATTEMPT.DISPATCH): what the ledger records.
std::string invocation_suffix(const std::string& invocation_id);

/// The re-run reason of an invocation dispatched again because its predecessor provably never
/// started (taskFailover kind neverStarted): it keeps its attempt and needs no taskRetryScheduled.
inline const char* const never_started = "Failover:neverStarted";
/// The re-run reason of an invocation dispatched again because its worker interrupted its
/// predecessor to shut down (taskFailover kind interrupted): it keeps its attempt too.
inline const char* const interrupted = "Failover:interrupted";

/// One invocation as its history records it.
struct InvocationRecord {
  std::string id;
  std::string task;
  uint32_t attempt = 0;
  std::string worker;
  uint64_t dispatched_seq = 0;
  int64_t dispatched_us = 0;
  /// Why it was dispatched: "" for a task's first invocation; otherwise the recorded cause that
  /// ended the task's previous attempt ("ExitCode:3", "Failover", "Timeout:startToClose"...), or
  /// "rerun" after a workflowRerun, or "" when nothing was recorded (a problem is reported).
  std::string rerun_reason;
  bool rerun = false;    ///< not the task's first invocation
  bool running = false;  ///< a taskRunning was recorded
  bool failed_over = false;
  int64_t failover_us = 0;
  std::string ended_by;  ///< the event kind that ended it; empty while open
  std::string end_reason;
  uint64_t ended_seq = 0;
  int64_t ended_us = 0;
};

/// A broken invariant: what, and the event that showed it.
struct HistoryProblem {
  uint64_t sequence = 0;
  std::string text;  ///< names the workflow, the invocation and why
};

/// What one history shows.
struct HistoryAnalysis {
  std::string workflow_id;
  std::vector<HistoryProblem> problems;
  std::map<std::string, InvocationRecord> invocations;  ///< by invocation id
  std::vector<std::string> dispatch_order;              ///< invocation ids in dispatch order
  std::string final_state;     ///< SUCCESS, FAILED or STOPPED of the last run; "" while open
  std::string failure_reason;  ///< workflowFailed's reason
  int64_t closed_us = 0;       ///< workflowFinalized's time; 0 while open
  int reruns = 0;              ///< workflowRerun events
  uint64_t last_sequence = 0;
};

/// Checks `events` (a whole history, in the order delivered) against the invariants above.
HistoryAnalysis analyse_history(const std::string& workflow_id, const std::vector<Event>& events);

/// The events around `sequence` (`radius` either side), one per line, for failure reports.
std::string excerpt(const std::vector<Event>& events, uint64_t sequence, size_t radius = 4);

/// The events of `task` (and the workflow's own), one per line, at most `limit`.
std::string task_excerpt(const std::vector<Event>& events, const std::string& task,
                         size_t limit = 40);

}  // namespace troupe::chaos
