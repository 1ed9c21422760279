// A local cluster: the nodes of a cluster config run on this machine as detached troupe-node
// processes (`troupe up`), found again and stopped through pid files (`troupe down`). The
// pid files and the nodes' logs live in a run directory beside the config:
// CONFIG_DIR/.troupe-run/CLUSTER/NODE.pid and NODE.log.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/config/cluster_config.hpp"
#include "schema/duration.hpp"
#include "schema/result.hpp"

namespace troupe::cli {

/// Where a cluster's pid files and node logs are: CONFIG_DIR/.troupe-run/CLUSTER.
struct RunDirectory {
  std::string path;

  std::string pid_file(const std::string& node) const { return path + "/" + node + ".pid"; }
  std::string log_file(const std::string& node) const { return path + "/" + node + ".log"; }
};

/// The run directory of the cluster whose config file is `config_path`.
RunDirectory run_directory(const std::string& config_path, const runtime::ClusterConfig& config);

struct UpOptions {
  /// The config file, absolute, as every node gets it in `--config`.
  std::string config_path;
  /// The nodes to start, validated by select_nodes(); empty means all of them.
  std::vector<std::string> nodes;
  /// The troupe-node executable.
  std::string node_binary;
  /// How long a node may take to come up: a scheduler to accept connections, a worker to
  /// report that it is ready. A node still starting after it counts as failed but is left
  /// running (its pid file stays, so `troupe down` stops it). Default: 30s.
  Duration ready_timeout = std::chrono::seconds(30);
};

struct DownOptions {
  /// The config file, absolute, as the nodes got it in `--config` (it identifies them).
  std::string config_path;
  /// The nodes to stop; empty means all of them.
  std::vector<std::string> nodes;
  /// How long a node may take to stop after SIGTERM before it gets SIGKILL. Default: 10s.
  Duration grace = std::chrono::seconds(10);
};

/// What `up` or `down` did to one node: a row of the table they print.
struct NodeReport {
  std::string node;
  /// "scheduler", "worker" or "scheduler,worker".
  std::string roles;
  /// The node's process, or -1 when there is none.
  pid_t pid = -1;
  /// A scheduler's listen address, or "-> HOST:PORT", the scheduler a worker registers with.
  std::string address;
  std::string log;
  /// What happened: "started", "already running", "exited with 3 during startup", "stopped", ...
  std::string status;
  /// False when this node is not in the state the command was asked for.
  bool ok = true;
  /// On a failed start: the last lines the node logged.
  std::string log_tail;
};

/// The configured nodes called `names`, in config order (all of them when `names` is empty),
/// or INVALID_ARGUMENT naming the unknown ones and the nodes the config has.
Result<std::vector<const runtime::NodeConfig*>> select_nodes(const runtime::ClusterConfig& config,
                                                             const std::vector<std::string>& names);

/// Starts the nodes of `options` that are not already running: schedulers first, each awaited
/// until it accepts connections, then workers, each awaited until it reports that it is ready.
/// Workers are not started when a scheduler failed. Errors (UNAVAILABLE): the run directory
/// cannot be created, or another `up`/`down` of this cluster is running.
Result<std::vector<NodeReport>> up_local_cluster(const runtime::ClusterConfig& config, const UpOptions& options);

/// Stops the running nodes of `options`: workers first, then schedulers; each gets SIGTERM,
/// and SIGKILL if it is still running after the grace. Pid files of stopped nodes, and stale
/// ones, are removed. Errors (UNAVAILABLE): another `up`/`down` of this cluster is running.
Result<std::vector<NodeReport>> down_local_cluster(const runtime::ClusterConfig& config,
                                                   const DownOptions& options);

/// Prints `reports` as a table (node, roles, pid, address, log, status), then the log tail of
/// each failed start.
void print_node_table(const std::vector<NodeReport>& reports, std::ostream& out);

}  // namespace troupe::cli
