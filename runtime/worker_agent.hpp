// The worker side of the Bistro protocol, on the RPC thread: registers with the scheduler,
// heartbeats, serves WorkerControl, and runs each invocation on the node's executor, whose
// reports reach it through one bridge actor. Outcomes are reported until the scheduler
// acknowledges them.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/ports.hpp"
#include "runtime/config/cluster_config.hpp"
#include "runtime/rpc_thread.hpp"

namespace kj {
struct AsyncIoContext;
class TaskSet;
}  // namespace kj

namespace troupe::actors {
struct WorkerMeters;
}  // namespace troupe::actors

namespace troupe::runtime {

class TlsEndpoint;

struct WorkerAgentSetup {
  caf::actor_system* system = nullptr;
  actors::executor_actor executor;
  NodeConfig node;
  /// The worker's persisted identity (runtime/identity/worker_id.hpp), presented at registration.
  std::string worker_id;
  std::string cluster_token;  ///< presented at registration; empty when the cluster has none
  /// The connection to the scheduler is TLS with this client endpoint; nullptr: plaintext.
  std::shared_ptr<TlsEndpoint> tls;
  RpcThread* rpc = nullptr;
  /// Asks the node to exit (MUST_DIE, requestSuicide); called on the RPC thread.
  std::function<void(const std::string& reason)> exit;
  /// Asks the node to exit 0: a shutdown (see WorkerAgentHandle::shut_down) is done. Called on
  /// the RPC thread.
  std::function<void(const std::string& how)> stopped;
  /// How long a shutdown lets running tasks finish before it interrupts them.
  Duration shutdown_grace = std::chrono::seconds(5);
  /// Whether a drain may stop the process (requestStop). False on a node that also runs the
  /// scheduler: stopping it would stop the scheduler too, so it stays up, drained.
  bool may_stop_on_request = true;
  /// The worker's lease now ends at `deadline` (the send time of the registration or heartbeat
  /// the scheduler acknowledged, plus the lease): its tasks must be dead by then, even if this
  /// process is frozen. Called on the RPC thread; optional.
  std::function<void(std::chrono::steady_clock::time_point deadline)> extend_lease;
  /// Where the agent sets the number of sessions open here, for the node's metrics; optional.
  std::shared_ptr<actors::WorkerMeters> meters;
  /// The node's log: registrations, lost connections, shutdowns (nullptr: nowhere).
  std::shared_ptr<NodeLog> log;
};

struct WorkerAgentHandle {
  /// The teardown, on the RPC thread: drops the connection.
  std::function<void()> stop;
  /// From any thread: shut down gracefully (a signal; see WorkerAgentSetup::stopped). A second
  /// call ends the grace at once.
  std::function<void(const std::string& why)> shut_down;
};

/// Starts the agent on the RPC thread (RpcThread::Setup).
Result<WorkerAgentHandle> start_worker_agent(kj::AsyncIoContext& io, kj::TaskSet& tasks,
                                            std::shared_ptr<WorkerAgentSetup> setup);

}  // namespace troupe::runtime
