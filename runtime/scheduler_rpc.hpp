// The scheduler's RPC servers: the Gateway (clients and worker registration), one
// WorkerSession per registered worker, one TaskReporter per invocation, and the WorkerLink
// through which worker actors call their worker. All of it lives on the RPC thread.
#pragma once

#include <functional>

#include <caf/fwd.hpp>

#include "actors/system/directory.hpp"
#include "actors/system/dispatcher.hpp"
#include "runtime/config/cluster_config.hpp"
#include "runtime/definitions/definition_registry.hpp"
#include "runtime/rpc_meters.hpp"
#include "runtime/rpc_thread.hpp"
#include "schema/workflow_status.hpp"
#include "schema/meters.hpp"

namespace kj {
struct AsyncIoContext;
class TaskSet;
}  // namespace kj

namespace troupe::runtime {

class Retention;
class TlsEndpoint;

struct SchedulerServices {
  caf::actor_system* system = nullptr;
  actors::directory_actor directory;
  actors::dispatcher_actor dispatcher;
  RpcThread* rpc = nullptr;  ///< set before the first call arrives
  std::shared_ptr<NodeLog> log;  ///< the node's log (nullptr: nowhere)
  caf::actor client_bridge;  ///< set by serve_scheduler: client calls reach the directory through it
  std::shared_ptr<storage::HistoryStore> store;  ///< read for describe, list and watch
  /// The cluster's secret (its token file): clients and workers must present it. Empty: the
  /// cluster has none and the gateway admits anyone who can connect.
  std::string cluster_token;
  /// The key of task tokens (asyncCompletion): one of the scheduler's own, kept in its data
  /// directory so tokens outlive a restart, and derivable from no credential a client holds.
  std::string task_token_key;
  /// The registered definitions clients may start by name; nullptr: none (JSON only).
  /// Used by the client bridge actor alone.
  std::shared_ptr<DefinitionRegistry> definitions;
  /// Purges closed workflows for ClientService.purge (and on the cluster's retention schedule).
  std::shared_ptr<Retention> retention;
  /// Why tasks wait in their task lists, as the matching actors post it; read by describe.
  /// nullptr: describe gives no reasons.
  std::shared_ptr<actors::WaitBoard> waits;
  /// The live actors, for the admin interface (nullptr: it lists none).
  std::shared_ptr<actors::ActorRoster> roster;
  /// Where the gateway counts its connections; nullptr: nowhere.
  std::shared_ptr<RpcMeters> rpc_meters;
  /// What each connection may do ([connections] in the config).
  ConnectionLimits connection_limits;
  /// Every connection is TLS with this endpoint; nullptr: plaintext (a loopback scheduler whose
  /// config says so).
  std::shared_ptr<TlsEndpoint> tls;
  /// What the gateway takes from clients: workflow ids, inputs, results and failures it checks
  /// itself; definitions go to the directory, which holds them to the same limits.
  InputLimits limits;
};

/// The durable state of workflow `id`, from its replayed history, with why its waiting tasks
/// wait as `waits` says now (nullptr: no reasons). NOT_FOUND for an unknown id.
Result<WorkflowStatus> describe_workflow(storage::HistoryStore& store, const std::string& id,
                                         const actors::WaitBoard* waits);

/// Listens on `listen` and serves the Gateway; the returned teardown stops listening and drops
/// every connection. Called on the RPC thread (RpcThread::Setup). `bound_port` receives the
/// port actually bound.
Result<std::function<void()>> serve_scheduler(kj::AsyncIoContext& io, kj::TaskSet& tasks,
                                              std::shared_ptr<SchedulerServices> services,
                                              const Address& listen, uint16_t* bound_port);

}  // namespace troupe::runtime
