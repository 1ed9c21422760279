// The composition root of a troupe node: from its cluster config it builds the history store,
// the CAF actor system and actors, the process supervisor and the RPC thread, runs until
// SIGINT/SIGTERM (or, for a worker, until it must die), and takes them down in order.
#pragma once

#include <string>

#include "runtime/config/cluster_config.hpp"

namespace troupe::runtime {

/// Runs node `node` of `cluster` until it is told to stop. Returns the process exit code:
/// 0 after a clean stop, 1 when a worker had to die, 3 when the node could not start (a
/// listen address in use is told as such, with what to do about it), 4 when
/// the scheduler's history store failed a write (a full disk) and the node stopped.
int run_node(const ClusterConfig& cluster, const NodeConfig& node);

}  // namespace troupe::runtime
