// The benchmarks against a real cluster (WORKLOADS.md's setup): a scheduler process and one
// worker process started from a generated cluster config on 127.0.0.1, driven through the
// Gateway by the C++ client. CHAIN and FANOUT.
#pragma once

#include <iosfwd>
#include <string>

#include "schema/result.hpp"
#include "tools/troupe/json.hpp"

namespace troupe::cli {

/// The cluster the workload runs on.
struct BenchClusterOptions {
  std::string directory;    ///< config, data, logs
  std::string node_binary;  ///< troupe-node
  bool sync = true;         ///< storage.sync of the scheduler
  int worker_slots = 256;   ///< slots of the worker's default task list
  bool metrics = false;     ///< both nodes serve /metrics (127.0.0.1, a free port), so they count
};

struct ClusterChainOptions {
  int workflows = 5000;  ///< W
  int tasks = 10;        ///< K
  int in_flight = 64;    ///< C
};

/// CHAIN: W workflows of K chained noop tasks, the client keeping C in flight.
Result<Json> run_cluster_chain_bench(const BenchClusterOptions& cluster, const ClusterChainOptions& options,
                                     std::ostream& progress);

struct ClusterFanoutOptions {
  int width = 1000;  ///< N parallel noop tasks between a root and a join task
  int runs = 5;      ///< R, one after another
};

/// FANOUT: R runs of one workflow: root -> N parallel noop tasks -> join.
Result<Json> run_cluster_fanout_bench(const BenchClusterOptions& cluster, const ClusterFanoutOptions& options,
                                      std::ostream& progress);

}  // namespace troupe::cli
