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
#include <string>
#include <vector>

#include "schema/duration.hpp"
#include "schema/result.hpp"

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
  std::string detail;  ///< the failure reason of a failed workflow
};

/// A task as its workflow's history records it.
struct TaskStatus {
  std::string name;
  std::string state;     ///< a task state, or WAITING before it was scheduled
  uint32_t attempt = 0;
  std::string worker;    ///< the shard of its current or last invocation
  std::string failure;   ///< its last failure's reason
  std::string progress;  ///< its last heartbeat's progress
};

/// A workflow and its tasks (in definition order) as its history records them.
struct WorkflowStatus {
  std::string workflow_id;
  std::string state;
  std::string detail;
  std::vector<TaskStatus> tasks;
};

class GatewayClient {
 public:
  /// Connects to the scheduler at host:port and obtains its client service. UNAVAILABLE
  /// naming the address when nothing answers within `timeout`.
  static Result<std::unique_ptr<GatewayClient>> connect(const std::string& host, uint16_t port,
                                                       Duration timeout = std::chrono::seconds(5));
  ~GatewayClient();
  GatewayClient(const GatewayClient&) = delete;
  GatewayClient& operator=(const GatewayClient&) = delete;

  /// Starts a workflow; its id once the submission is durable. The scheduler's error otherwise
  /// (INVALID_ARGUMENT lists a definition's problems with their JSON paths).
  Result<std::string> start(const StartRequest& request);
  /// Waits up to `timeout` for the workflow to end. TIMED_OUT when it has not.
  Result<WorkflowResult> result(const std::string& workflow_id, Duration timeout);

  /// The workflow's and its tasks' durable state. NOT_FOUND for an unknown id.
  Result<WorkflowStatus> describe(const std::string& workflow_id);

  enum class Control { PAUSE, RESUME, STOP };
  /// Pauses, resumes or stops a workflow; the state it leads to once durable (READY_PAUSE,
  /// PAUSED, RUNNING, READY_STOP, STOPPED, ...). NOT_ALLOWED_IN_STATE when the action does not
  /// apply, NOT_FOUND for an unknown id.
  Result<std::string> control(const std::string& workflow_id, Control action);

  using StartCallback = std::function<void(Result<std::string>)>;
  using ResultCallback = std::function<void(Result<WorkflowResult>)>;
  /// Queues a start; `done` runs inside run().
  void start_async(const StartRequest& request, StartCallback done);
  /// Queues a wait for the end of a workflow; `done` runs inside run().
  void result_async(const std::string& workflow_id, ResultCallback done);
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
