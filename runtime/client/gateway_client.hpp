// The C++ client of a scheduler's Gateway: what programs, the CLI and the benchmarks use to
// start workflows and wait for their results. No Cap'n Proto or KJ types in this header.
//
// One GatewayClient is one connection, driven by the thread that uses it (KJ event loops
// belong to one thread). Two styles:
//  - synchronous: start(), result(): each runs the connection until its answer arrives;
//  - asynchronous: start_async(), result_async() queue calls whose callbacks run inside
//    run(), on the caller's thread; a callback may queue more calls, so a program keeps many
//    workflows in flight on one connection.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schema/duration.hpp"
#include "schema/result.hpp"
#include "schema/workflow_status.hpp"

namespace troupe::client {

/// What to start.
struct StartRequest {
  std::string definition_json;  ///< the workflow definition (schema/workflow.capnp as JSON)
  std::string input_json;       ///< the workflow's input; empty means {}
  std::string workflow_id;      ///< empty: the scheduler picks one; while open, the same id returns that run
  std::string run_from;         ///< empty: the whole DAG; else this task and its descendants
};

/// How a workflow ended.
struct WorkflowResult {
  std::string workflow_id;
  std::string state;   ///< SUCCESS, FAILED, STOPPED, ...
  std::string detail;  ///< why a failed workflow failed: the task, the failure's reason and details
  WorkflowStateCode state_code = WorkflowStateCode::UNKNOWN;  ///< `state` as the scheduler's code
  /// The results of its final tasks (no other task depends on them) that succeeded, in
  /// definition order.
  std::vector<TaskOutput> outputs;
};

/// A workflow and its tasks (in definition order) as its history records them.
using troupe::TaskStatus;
using troupe::WorkflowStatus;

/// The order of a listing.
enum class ListSort {
  CREATED,  ///< newest first
  ID,       ///< by workflow id
};

/// Which workflows to list (every filter optional) and where the page starts.
struct ListQuery {
  /// OPEN, CLOSED, an open workflow's state (SUBMITTED, RUNNING, READY_PAUSE, PAUSED,
  /// READY_STOP, FAILOVER) or how closed ones ended (SUCCESS, FAILED, STOPPED); empty: all
  std::string state;
  std::string definition_name;  ///< empty: any
  int64_t created_from_us = 0;  ///< created at or after, µs since the epoch (0: no bound)
  int64_t created_to_us = 0;    ///< created before (0: no bound)
  std::string after;            ///< a previous page's next_cursor (same sort); empty: from the start
  uint32_t limit = 100;         ///< most workflows in the page, 1..1000
  ListSort sort = ListSort::CREATED;
};

struct WorkflowSummary {
  std::string workflow_id;
  std::string definition_name;
  std::string state;  ///< its state as of its last change (RUNNING, PAUSED...), or how it ended
  int64_t created_us = 0;
  int64_t closed_us = 0;  ///< 0 while open
  WorkflowStateCode state_code = WorkflowStateCode::UNKNOWN;  ///< `state` as the scheduler's code
};

struct WorkflowPage {
  std::vector<WorkflowSummary> workflows;  ///< in the query's order; fewer than the limit (even none) when few match
  std::string next_cursor;                 ///< empty at the end
};

/// One event of a watched history.
struct WatchedEvent {
  uint64_t sequence = 0;
  int64_t timestamp_us = 0;
  std::string actor_kind;  ///< workflow, task, session or worker
  std::string actor_id;    ///< the workflow id, or the task's name
  uint32_t attempt = 0;
  std::string kind;        ///< what happened: the event body's name, e.g. "taskRunning"
  std::string detail;      ///< the body's fields as text, e.g. (invocationId = "…")
  std::string packed;      ///< the whole schema::HistoryEvent, packed (storage::DecodedEvent reads it)
};

/// Which logs task_logs streams.
struct LogRequest {
  std::string task;      ///< empty: every task that started, in definition order
  uint32_t attempt = 0;  ///< 0: the task's last attempt
  bool follow = false;   ///< go on while the attempt runs, until it ended and its log was delivered
};

/// A piece of one invocation's log (gateway.capnp LogChunk has every field's meaning).
struct LogChunk {
  std::string task;
  uint32_t attempt = 0;
  std::string invocation_id;  ///< one attempt on one worker
  std::string worker;
  uint64_t offset = 0;  ///< where `data` starts in the invocation's log
  std::string data;     ///< the bytes as the task wrote them
  bool first = false;   ///< the invocation's first chunk (possibly empty): a header goes before it
  bool last = false;    ///< the invocation ended and its whole log has been sent
  std::string path;     ///< the log file on the worker, when known
};

/// What update_task changes; what is left empty keeps its value.
struct TaskUpdate {
  std::string task_list;          ///< the task list it is dispatched from
  std::optional<int32_t> priority;
  /// Each a duration ("5m") replacing the task's timeout, or "none" to remove it.
  std::string schedule_to_start;
  std::string start_to_close;
  std::string schedule_to_close;
  std::string heartbeat;
  /// The whole new retry policy as a definition writes it ({"maximumAttempts": 5}; what it
  /// leaves out takes a definition's defaults), or "none" for one attempt.
  std::string retry_json;
};

/// The states a task command led to, once durable.
struct TaskCommandResult {
  std::string workflow_state;  ///< RUNNING, PAUSED, ... (a FAILED workflow a retry or skip reopened: RUNNING)
  std::string task_state;      ///< the task's state, e.g. SUBMITTED, FORCED_SUCCESS; WAITING before it is scheduled
  WorkflowStateCode workflow_state_code = WorkflowStateCode::UNKNOWN;  ///< `workflow_state` as a code
  TaskStateCode task_state_code = TaskStateCode::UNKNOWN;              ///< `task_state` as a code
};

/// A worker as the scheduler knows it (gateway.capnp WorkerSummary has every field's meaning).
struct WorkerTaskListUse {
  std::string name;
  uint32_t slots = 0;
  uint32_t used = 0;
};
struct WorkerFailure {
  std::string task;
  std::string reason;
  int64_t at_us = 0;
};
struct WorkerInvocation {
  std::string invocation_id;
  std::string task;
  uint32_t attempt = 0;
  std::string outcome;
  int64_t ended_us = 0;
};
/// One entry of a worker's journal, in words: "registered (pid 12, instance ..., worker id ...)",
/// "health HEALTHY -> UNHEALTHY".
struct WorkerJournalEntry {
  int64_t at_us = 0;
  std::string what;
};
struct WorkerSummary {
  std::string name;
  std::string worker_id;
  std::string status;
  std::string health;
  std::string standing;
  bool live = false;
  std::string hostname;
  uint32_t pid = 0;
  std::string resource_id;
  std::vector<WorkerTaskListUse> task_lists;
  std::vector<std::string> running;
  int64_t last_heartbeat_age_ms = -1;
  bool drain_immediate = false;
  int64_t drain_deadline_us = 0;
  bool drain_exit = false;
  int64_t drain_requested_us = 0;
  int64_t quarantined_until_us = 0;
  uint32_t quarantines = 0;
  std::vector<WorkerFailure> failures;
  int64_t first_registered_us = 0;
  int64_t last_registered_us = 0;
  uint64_t registrations = 0;
  std::vector<WorkerInvocation> recent;
  std::vector<WorkerJournalEntry> journal;
};

/// A drain's options (see drain_worker).
struct DrainRequest {
  bool immediate = false;
  Duration deadline{0};  ///< 0: none
  bool exit_when_drained = false;
};

/// How a client speaks TLS with the scheduler: whom it trusts, and what it presents.
struct TlsOptions {
  std::string ca_file;           ///< CA certificates (PEM) that sign the scheduler's; empty: the system's
  std::string certificate_file;  ///< a client certificate (PEM), where the cluster requires one; empty: none
  std::string key_file;          ///< its private key
};

struct ConnectOptions {
  Duration timeout = std::chrono::seconds(5);  ///< for the connection, not for later calls
  std::string token;  ///< the cluster's secret, when its scheduler requires one
  /// TLS, as every scheduler speaks unless its config is plaintext; nullopt: plaintext (a
  /// loopback scheduler whose config allows it). The scheduler's certificate must name the host
  /// connected to.
  std::optional<TlsOptions> tls;
};

class GatewayClient {
 public:
  /// Connects to the scheduler at host:port and obtains its client service. UNAVAILABLE
  /// naming the address when nothing answers within the timeout; INVALID_ARGUMENT when the
  /// scheduler refuses the token.
  static Result<std::unique_ptr<GatewayClient>> connect(const std::string& host, uint16_t port,
                                                       const ConnectOptions& options = {});
  ~GatewayClient();
  GatewayClient(const GatewayClient&) = delete;
  GatewayClient& operator=(const GatewayClient&) = delete;

  /// Starts a workflow; its id once the submission is durable. The scheduler's error otherwise
  /// (INVALID_ARGUMENT lists a definition's problems with their JSON paths).
  Result<std::string> start(const StartRequest& request);
  /// Waits up to `timeout` for the workflow to end. TIMED_OUT when it has not (the scheduler
  /// answers so at the timeout; the call gives up on its own a little later should an older
  /// scheduler not). NOT_FOUND for an unknown id.
  Result<WorkflowResult> result(const std::string& workflow_id, Duration timeout);

  /// The workflow's and its tasks' durable state. NOT_FOUND for an unknown id.
  Result<WorkflowStatus> describe(const std::string& workflow_id);

  /// STOP cancels active tasks with the cluster's kill grace and waits for them; KILL cancels
  /// them with none and does not wait.
  enum class Control { PAUSE, RESUME, STOP, KILL };
  /// Pauses, resumes, stops or kills a workflow; the state it leads to once durable (READY_PAUSE,
  /// PAUSED, RUNNING, READY_STOP, STOPPED, ...). NOT_ALLOWED_IN_STATE when the action does not
  /// apply, NOT_FOUND for an unknown id.
  Result<std::string> control(const std::string& workflow_id, Control action);

  /// Reopens a finished workflow and runs `from_task` and its descendants again (empty: every
  /// task that did not succeed); the state once durable (RUNNING). NOT_ALLOWED_IN_STATE while the
  /// workflow is open; INVALID_ARGUMENT for an unknown task or one whose dependency outside
  /// the rerun did not succeed; NOT_FOUND for an unknown id.
  Result<std::string> rerun(const std::string& workflow_id, const std::string& from_task);

  /// Deletes every workflow that closed before `closed_before_us` (µs since the epoch): history
  /// and index record. How many, once durable. Open workflows are never purged.
  Result<uint64_t> purge(int64_t closed_before_us);

  /// Every worker that ever registered (`name` empty), or the one named, with its journal if
  /// `history`. NOT_FOUND for a name that never registered.
  Result<std::vector<WorkerSummary>> workers(const std::string& name = {}, bool history = false);
  /// Drains a worker (see gateway.capnp drainWorker); the worker as the drain left it.
  Result<WorkerSummary> drain_worker(const std::string& name, const DrainRequest& drain);
  /// A draining or drained worker takes tasks again.
  Result<WorkerSummary> undrain_worker(const std::string& name);
  /// Ends a quarantine and forgets the worker's failures in a row.
  Result<WorkerSummary> forgive_worker(const std::string& name);
  /// Operations on one task of a workflow while it runs, recorded in its history (gateway.capnp
  /// has the whole semantics). NOT_FOUND for an unknown workflow, INVALID_ARGUMENT for a task
  /// the definition lacks, NOT_ALLOWED_IN_STATE (saying what to do instead) when the operation
  /// does not apply to the task or the workflow now.
  ///
  /// retry_task: a new attempt of a failed or killed task (its retry policy starts a fresh
  /// round; attempt numbers go on); its blocked downstream runs once it succeeds. Reopens a
  /// FAILED workflow.
  Result<TaskCommandResult> retry_task(const std::string& workflow_id, const std::string& task);
  /// skip_task: FORCED_SUCCESS for a task that failed, was killed or is not on a worker (one
  /// not scheduled yet when it would be); its downstream runs as if it had succeeded.
  Result<TaskCommandResult> skip_task(const std::string& workflow_id, const std::string& task,
                                      const std::string& reason);
  /// update_task: the task's options from its next dispatch. INVALID_ARGUMENT listing what is
  /// wrong with them, by a definition's rules, or for a retry_json that is no JSON object.
  Result<TaskCommandResult> update_task(const std::string& workflow_id, const std::string& task,
                                        const TaskUpdate& update);

  /// One page of workflows from the scheduler's index.
  Result<WorkflowPage> list(const ListQuery& query);

  /// Calls `on_event` for each event of the workflow's history from sequence `from` on, in
  /// order and each once, live as they are recorded, until the workflow has closed and its last
  /// event was delivered, or `on_event` returns false. Returns the last sequence delivered.
  /// After a lost connection, watching again from that sequence + 1 misses nothing.
  /// `on_batch`, when given, runs after each batch of events the scheduler sent together (what
  /// it had recorded by then): the moment a display of the history is worth redrawing.
  Result<uint64_t> watch(const std::string& workflow_id, uint64_t from,
                         const std::function<bool(const WatchedEvent&)>& on_event,
                         const std::function<void()>& on_batch = {});

  /// Calls `on_chunk` with each chunk of the logs `request` names of workflow `workflow_id`'s
  /// tasks, in order, read through the scheduler from the workers that ran them, until all were
  /// delivered (with follow: until the attempt ended) or `on_chunk` returns false. NOT_FOUND for
  /// an unknown workflow; INVALID_ARGUMENT for an unknown task or attempt; NOT_ALLOWED_IN_STATE
  /// for a task that has not started or runs a handler; DISCONNECTED when the worker that ran it
  /// is not connected (the message says where its log is).
  Result<void> task_logs(const std::string& workflow_id, const LogRequest& request,
                         const std::function<bool(const LogChunk&)>& on_chunk);

  /// Ends the asyncCompletion invocation named by `token` ($TROUPE_TASK_TOKEN): with a result,
  /// or a failure (retried per the task's policy). INVALID_ARGUMENT for a forged token,
  /// NOT_FOUND when the invocation is no longer current.
  Result<void> complete_task(const std::string& token, const std::string& result);
  Result<void> fail_task(const std::string& token, const std::string& reason, const std::string& details = {});

  using StartCallback = std::function<void(Result<std::string>)>;
  using ResultCallback = std::function<void(Result<WorkflowResult>)>;
  using ControlCallback = std::function<void(Result<std::string>)>;
  /// Queues a start; `done` runs inside run().
  void start_async(const StartRequest& request, StartCallback done);
  /// Queues a wait for the end of a workflow; `done` runs inside run().
  void result_async(const std::string& workflow_id, ResultCallback done);
  /// Queues a pause, resume, stop or kill; `done` runs inside run().
  void control_async(const std::string& workflow_id, Control action, ControlCallback done);
  /// Runs the connection until no queued call is outstanding (callbacks included, and the calls
  /// they queue). TIMED_OUT if some are still outstanding after `timeout`; UNAVAILABLE when
  /// the connection is lost (the outstanding callbacks get that error too).
  Result<void> run(Duration timeout);

 private:
  struct Impl;
  explicit GatewayClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe::client
