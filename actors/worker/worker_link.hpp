// What the scheduler's worker actor needs from the RPC layer: a registered worker's identity
// and a line to it. The runtime implements WorkerLink over Cap'n Proto; calls return at once
// and their outcomes arrive later through the callbacks, on whatever thread the RPC runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/worker/fence.hpp"
#include "schema/duration.hpp"
#include "schema/result.hpp"

namespace troupe::actors {

struct Invocation;
struct TaskReport;
struct SessionOpen;

/// runTask's answer: the invocation runs (`ended` false), or it ended before the worker
/// answered. Then `outcome` is how it ended, when the worker said so in the answer: the
/// scheduler acknowledges it (WorkerLink::acknowledge) once it is durable. Without it, the
/// outcome follows as a report of its own.
struct RunAnswer {
  bool ended = false;
  std::shared_ptr<const TaskReport> outcome;
};

/// A worker instance as it registered.
struct WorkerInfo {
  std::string shard_id;     ///< the node name: one live instance per shard id
  std::string hostname;
  uint32_t pid = 0;
  std::string instance_id;  ///< random per process start: tells a reconnect from a restart
  /// The identity the worker persists in its data directory: the same across its restarts.
  /// Empty from a worker that predates it.
  std::string worker_id;
  std::map<std::string, uint32_t> task_lists;  ///< slots per task list
  std::string resource_id;
  uint32_t max_concurrent_sessions = 0;
  /// The fence of its first registration with each earlier scheduler incarnation (see
  /// worker.capnp WorkerInfo.registrations).
  std::vector<Fence> registrations;
  std::string describe() const {
    return shard_id + " (pid " + std::to_string(pid) + " on " + hostname + ")";
  }
};

/// getRunningTasks' answer.
struct RunningTasks {
  std::vector<std::string> ids;    ///< every invocation the worker holds
  std::vector<std::string> ended;  ///< of them, those that ended: their outcomes are on their way
  std::vector<std::string> sessions;  ///< the sessions it holds open (WORKFLOW/SESSION)
};

class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  virtual void get_running_tasks(std::function<void(Result<RunningTasks>)> done) = 0;
  /// Sends runTask with the invocation's fence. `done` gets the worker's answer (see
  /// RunAnswer); an error of kind UNAVAILABLE when the outcome is unknown (the connection
  /// failed), and another kind when the worker refused it (it did not start).
  virtual void run_task(const Invocation& invocation, std::function<void(Result<RunAnswer>)> done) = 0;
  /// The outcomes these invocations' answers carried are durable: the worker may forget them.
  virtual void acknowledge(std::vector<std::string> invocation_ids) = 0;
  /// `done` gets the ids that are not running; from then on the worker refuses a runTask with
  /// an older fence.
  virtual void notify_if_not_running(std::vector<std::string> invocation_ids, Fence fence,
                                     std::function<void(Result<std::vector<std::string>>)> done) = 0;
  virtual void cancel_task(const std::string& invocation_id, Duration grace) = 0;
  virtual void request_suicide(const std::string& reason) = 0;
  /// Stops the invocation like cancel_task; it ends INTERRUPTED (`reason`) unless it succeeds
  /// first, and its task runs it again elsewhere under the same attempt.
  virtual void interrupt_task(const std::string& invocation_id, Duration grace, const std::string& reason) = 0;
  /// Asks the worker process to shut down and exit (a drain that said so).
  virtual void request_stop(const std::string& reason) = 0;
  /// openSession: `done` gets envEnter's outcome once it ended (SUCCEEDED when there is none),
  /// or an error: UNAVAILABLE when the connection failed (the worker may hold the session).
  virtual void open_session(const SessionOpen& session, std::function<void(Result<TaskReport>)> done) = 0;
  /// closeSession: `done` gets envExit's outcome once it ended, or none when none ran.
  virtual void close_session(const std::string& session_id,
                             std::function<void(Result<std::optional<TaskReport>>)> done) = 0;
};

}  // namespace troupe::actors
