// A real cluster for integration tests: a config writer, troupe-node processes on a free
// 127.0.0.1 port (stopped by pid), a Gateway client whose every wait has a deadline, and a
// polling helper so tests wait for events instead of sleeping.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <capnp/ez-rpc.h>

#include "schema/gateway.capnp.h"
#include "schema/node_log.hpp"
#include "test/support/child_process.hpp"
#include "test/support/temp_dir.hpp"

namespace troupe::test {

/// A TCP port on 127.0.0.1 that was free a moment ago.
uint16_t free_port();

/// An open TCP connection to 127.0.0.1:`port` that has said nothing yet, or -1 if it could not
/// connect. The caller closes it.
int open_connection(uint16_t port);

/// The troupe-node binary named by $TROUPE_NODE; throws std::runtime_error when it is unset.
std::string node_binary();

/// One worker node of a test cluster.
struct WorkerSpec {
  std::string name;
  /// Slots per task list (`task_lists` in the config).
  std::map<std::string, uint32_t> task_lists = {{"default", 2}};
  /// Tasks started per second on this worker (`rate`). Default: unlimited.
  std::optional<double> rate;
  /// `resource_id` and `max_concurrent_sessions`; empty: not written (none, and the default).
  std::string resource_id{};
  std::optional<uint32_t> max_sessions{};
};

/// A scheduler-wide token bucket of one task list (`[task_lists.NAME]`).
struct TaskListLimit {
  double rate = 0;
  /// Default: the config's default, max(1, ceil(rate)).
  std::optional<uint32_t> burst;
};

/// What a test cluster is made of: always one node named "scheduler", plus `workers`.
/// Heartbeats are fast (200 ms; UNHEALTHY after 400 ms, MUST_DIE after 600 ms, its tasks failed
/// over after a lease of 1 s) so a lost worker is declared dead quickly.
struct ClusterSpec {
  std::vector<WorkerSpec> workers = {{"worker-a", {{"default", 2}}, std::nullopt},
                                     {"worker-b", {{"default", 2}}, std::nullopt}};
  /// Global dispatch limits by task list name.
  std::map<std::string, TaskListLimit> task_list_limits;
  /// The [limits] table: keys and their values as TOML ("\"2KiB\"", "3"); empty: none written.
  std::map<std::string, std::string> limits;
  /// The health timeouts, as config durations.
  std::string heartbeat_interval = "200ms";
  std::string unhealthy_after = "400ms";
  std::string must_die_after = "600ms";
  /// `worker_lease`: how long a lost worker's tasks may run on before they fail over. Short, so a
  /// killed worker's tasks are retried soon; empty: the default (30s).
  std::string worker_lease = "1s";
  /// `recovery_window` (>= worker_lease); empty: the default (the lease).
  std::string recovery_window = "10s";
  /// `kill_grace`; empty: the default.
  std::string kill_grace;
  /// `shutdown_grace` (how long a worker stopping on a signal lets its tasks finish); empty: the
  /// default.
  std::string shutdown_grace;
  /// `quarantine_failures` and `quarantine_backoff`; empty: the defaults.
  std::string quarantine_failures;
  std::string quarantine_backoff;
  /// `retention`: closed workflows are purged this long after; empty: kept.
  std::string retention;
  /// The scheduler node's `sync`; false writes `sync = false` (faster, for bulk tests).
  bool sync = true;
  /// `token_file` of [cluster] (relative paths resolve against the config's directory);
  /// empty: the cluster has no token.
  std::string token_file;
  /// The scheduler's `definitions` directory (relative: to the config's directory); empty: none.
  std::string definitions;
  /// The scheduler's `workflow_cache`; empty: the default.
  std::optional<size_t> workflow_cache;
  /// Every node serves its metrics (`metrics = "127.0.0.1:0"`, a free port each node prints).
  bool metrics = false;
  /// Every node's `log_level` and `log_format`; empty: the defaults (info, text).
  std::string log_level;
  std::string log_format;
  /// `plaintext = true` in [cluster] (every test cluster but the TLS tests'); false: TLS, with
  /// the certificates `troupe certs` makes under certs/ (the test makes them).
  bool plaintext = true;
  /// `require_client_certificates = true` (mutual TLS); needs plaintext = false.
  bool require_client_certificates = false;
  /// Lines of the `[connections]` table, each "key = value" as TOML (`handshake_timeout =
  /// "500ms"`); empty: no table, the defaults.
  std::vector<std::string> connections;
};

/// The TOML text of `spec` with the scheduler listening on 127.0.0.1:`port`. Relative paths
/// (data/, logs/NAME) resolve against the directory the file is written to.
std::string cluster_config_text(const ClusterSpec& spec, uint16_t port);

/// A cluster config written to a fresh directory, and the nodes started from it. Nodes that are
/// still running when the cluster goes away are killed by pid and reaped.
struct Cluster {
  explicit Cluster(ClusterSpec cluster_spec = {});

  /// Starts node `name` of the config (replacing any earlier process of that name).
  void start(const std::string& name);

  /// The log_dir of worker `worker`: one log per invocation, WORKFLOW/TASK.ATTEMPT.DISPATCH.log.
  std::string logs(const std::string& worker) const { return dir.path() + "/logs/" + worker; }

  ClusterSpec spec;
  TempDir dir;
  uint16_t port = free_port();
  std::string config = dir.path() + "/cluster.toml";
  std::map<std::string, std::unique_ptr<ChildProcess>> nodes;
};

/// Starts `troupe-node --config CONFIG --node NAME` with its stderr joined to its stdout, so the
/// caller can read what the node says (ChildProcess captures stdout only).
std::unique_ptr<ChildProcess> start_node_with_output(const std::string& config, const std::string& name);

/// Everything `child` writes until it closes its output or `timeout` passes.
std::string read_output(ChildProcess& child, std::chrono::milliseconds timeout);

/// Reads `child`'s output (started with start_node_with_output) until it logs a line with
/// `message` (schema/node_log.hpp, either format) and returns it; nullopt if it does not within
/// `timeout`. Every line read on the way is appended to `seen` when given.
std::optional<ParsedLogLine> await_log_line(ChildProcess& child, std::string_view message,
                                            std::chrono::milliseconds timeout, std::string* seen = nullptr);

/// Whether `output` (lines a node wrote) has a log line saying `message` with each of `fields`
/// (key, value), among others.
bool has_log_line(const std::string& output, std::string_view message,
                  std::initializer_list<std::pair<std::string_view, std::string_view>> fields = {});

/// True while `child` has not exited; does not reap it, so ChildProcess::wait still works.
bool still_running(const ChildProcess& child);

/// The Gateway's client side, with a deadline on every wait.
struct Client {
  explicit Client(uint16_t port);

  /// Starts a workflow; returns its id, "error: MESSAGE" when refused, or "timed out".
  std::string start(const std::string& id, const std::string& definition,
                    std::chrono::seconds deadline = std::chrono::seconds(30));

  /// Waits for the workflow to end; returns its state (with ": DETAIL" for a failure reason),
  /// "error: MESSAGE", or "timed out".
  std::string result(const std::string& id, std::chrono::seconds deadline);

  capnp::EzRpcClient rpc;
  schema::ClientService::Client service;
};

/// Connects once the scheduler accepts connections (polled, with a deadline of 20 s).
std::unique_ptr<Client> connect(uint16_t port);

/// Polls `condition` every 20 ms until it holds (true) or `timeout` passes (false).
template <class F>
bool eventually(F condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace troupe::test
