// The metrics of one troupe node: what each of its parts is asked at a scrape. The registry is
// built here and nowhere else (see node_registry), from parts the composition root hands in.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/system/actor_roster.hpp"
#include "actors/system/directory.hpp"
#include "actors/system/dispatcher.hpp"
#include "runtime/config/cluster_config.hpp"
#include "runtime/metrics/registry.hpp"

namespace troupe::actors {
struct SchedulerMeters;
struct WorkerMeters;
}  // namespace troupe::actors

namespace troupe::storage {
class RocksHistoryStore;
}  // namespace troupe::storage

namespace troupe::runtime {

struct RpcMeters;

/// The parts of a node its metrics read. The scheduler's are set on a node with the scheduler
/// role, the worker's on one with the worker role. All must outlive the metrics server.
struct NodeMetricsSources {
  NodeConfig node;
  // --- scheduler role ---
  caf::actor_system* system = nullptr;  ///< for the scrape's questions to the actors below
  actors::directory_actor directory;    ///< asked how many workflows are live and passivated
  actors::dispatcher_actor dispatcher;  ///< asked for every worker's health and status
  /// counted by kind; its actors probed for their mailboxes
  std::shared_ptr<actors::ActorRoster> roster;
  std::shared_ptr<actors::SchedulerMeters> scheduler;
  std::shared_ptr<storage::RocksHistoryStore> store;
  std::shared_ptr<RpcMeters> rpc;
  // --- worker role ---
  std::shared_ptr<actors::WorkerMeters> worker;
};

/// The registry of the node's metrics (README "Metrics" lists them all).
std::shared_ptr<metrics::Registry> node_registry(const NodeMetricsSources& sources);

}  // namespace troupe::runtime
