// The cluster config: which nodes make up a cluster, their roles, addresses, directories and
// worker slots, read from TOML (format: runtime/config/README.md) and validated in full.
// Std-only: toml++ stays inside cluster_config.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/duration.hpp"
#include "schema/host.hpp"
#include "schema/limits.hpp"
#include "schema/node_log.hpp"
#include "schema/result.hpp"

namespace troupe::runtime {

/// A TCP endpoint as written in the config: "127.0.0.1:7700", "sched.example:7700",
/// "[::1]:7700". A value; the host is not resolved here.
struct Address {
  /// IPv4 literal, hostname (incl. "localhost"), or IPv6 literal without brackets.
  std::string host;
  /// 1..65535 once parsed (0..65535 from parse_bind_address, 0: any free port); 0 in a
  /// default-constructed (absent) address.
  uint16_t port = 0;

  /// "HOST:PORT", with brackets around an IPv6 host; parse_address reads it back.
  std::string to_string() const;
  /// True for an address that was never set (empty host).
  bool empty() const { return host.empty(); }

  friend bool operator==(const Address&, const Address&) = default;
};

/// Parses "HOST:PORT": host an IPv4 literal, "localhost", a hostname, or a bracketed IPv6
/// literal ("[::1]:7700"); port 1..65535. INVALID_ARGUMENT with a message of the form
/// `bad address "x": <why> (expected HOST:PORT, port 1-65535)` otherwise. Used by the config and
/// by CLI flags that take an address.
Result<Address> parse_address(std::string_view text);

/// Parses an address to serve on, as parse_address does, except that port 0 is allowed: it asks
/// for any free port, which the server reports once bound. INVALID_ARGUMENT with a message of
/// the form `bad address "x": <why> (expected HOST:PORT, port 0-65535; 0 picks a free port)`.
Result<Address> parse_bind_address(std::string_view text);

/// Parses a size: a whole number of bytes, optionally followed by B, KiB, MiB or GiB
/// ("16MiB", "512KiB", "1048576"). INVALID_ARGUMENT saying what is wrong otherwise.
Result<uint64_t> parse_byte_size(std::string_view text);

/// Scheduler-side dispatch limit of one task list across all workers: a token bucket.
struct TaskListLimits {
  /// Tasks started per second, > 0.
  double rate = 0;
  /// Tasks that may start at once after an idle period. Default: max(1, ceil(rate)).
  uint32_t burst = 1;

  friend bool operator==(const TaskListLimits&, const TaskListLimits&) = default;
};

/// What the scheduler allows each connection to its gateway (the `[connections]` table), so
/// that nobody who can reach its port, with credentials or without, can exhaust its file
/// descriptors or memory. Every limit refuses or closes with a line in the node's log.
struct ConnectionLimits {
  /// Connections open at once; one more is closed as soon as it is accepted. The node raises
  /// its file-descriptor limit to fit. Default: 1024.
  uint32_t max_connections = 1024;
  /// Connections open at once from one IP address (all of a host's workers and clients
  /// share it). Default: 256.
  uint32_t max_connections_per_peer = 256;
  /// How long a new connection may take to be admitted (its TLS handshake and a Gateway call
  /// with a credential the scheduler accepts) before it is closed. Default: 10s.
  Duration handshake_timeout = std::chrono::seconds(10);
  /// An admitted connection that sends nothing and has no call in progress for this long is
  /// closed (a worker heartbeats; a watch or a long `result` is a call in progress). Default: 30min.
  Duration idle_timeout = std::chrono::minutes(30);
  /// Bytes a connection may send before it is admitted (a Gateway call is a few hundred);
  /// beyond them it is closed, so nobody unknown makes the scheduler buffer a large message.
  /// Default: 64 KiB.
  uint64_t max_unadmitted_bytes = 64 * 1024;
  /// The largest RPC message the scheduler reads (a definition is sent in one). Default: 64 MiB.
  uint64_t max_message_bytes = uint64_t{64} << 20;
  /// Bytes of calls one connection may have in progress at once (Cap'n Proto's flow limit):
  /// beyond them the scheduler reads no more calls from it until some answer. Default: 16 MiB.
  uint64_t max_calls_in_flight_bytes = uint64_t{16} << 20;

  friend bool operator==(const ConnectionLimits&, const ConnectionLimits&) = default;
};

/// One `[[node]]` of the config. Paths are resolved against the config file's directory.
struct NodeConfig {
  /// Unique within the cluster, [A-Za-z0-9._-]{1,64}. A worker's name is its shard id.
  std::string name;
  /// Roles. At least one is true.
  bool scheduler = false;
  bool worker = false;

  // --- scheduler role ---
  /// Where the scheduler's gateway listens. Set iff `scheduler`.
  Address listen;
  /// Directory of the node's history store. Required for a scheduler, optional for a worker
  /// (then only used for the default log_dir). Empty when absent.
  std::string data_dir;
  /// storage.sync: sync the write-ahead log before acknowledging. Default: true.
  bool sync = true;
  /// Directory of registered definitions (*.json) that clients start by name. Empty: none.
  std::string definitions_dir;
  /// Live workflows kept before idle ones passivate (0: no limit). Default: 10000.
  size_t workflow_cache = 10000;

  // --- worker role (defaults are filled in only for workers) ---
  /// The scheduler this worker registers with: the `scheduler` key, or the node's own
  /// `listen` address when it has both roles. Set iff `worker`.
  Address scheduler_address;
  /// Slots per task list, each >= 1; non-empty for a worker.
  std::map<std::string, uint32_t> task_lists;
  /// Free-form resource tag (e.g. "gpu0"). Empty when absent.
  std::string resource_id;
  /// Sessions open on this worker at once; 0 means the worker takes no sessions. Default: 1.
  uint32_t max_concurrent_sessions = 1;
  /// Dispatch rate limit for this worker, tasks/s (> 0). Default: none (unlimited).
  std::optional<double> rate;
  /// Directory of per-invocation task logs.
  /// Default: "<data_dir>/<name>", or "logs/<name>" beside the config file without data_dir.
  std::string log_dir;
  /// Cap of one invocation's task log, in bytes, >= 1024. Default: 16 MiB.
  uint64_t log_cap_bytes = uint64_t{16} << 20;

  /// Where the node serves its Prometheus metrics over HTTP (GET /metrics); port 0 picks a free
  /// port, which the node prints. Empty (the default): no metrics server, and nothing counted.
  Address metrics;

  /// How much the node says on stderr about what happens in it (workflows started and closed,
  /// workers' status, failovers), and in what form. Default: info, text.
  LogLevel log_level = LogLevel::INFO;
  LogFormat log_format = LogFormat::TEXT;

  /// Threads that run the node's actors; 0 (absent): one per core but one, at least one (the
  /// RPC thread and the history store's commit thread need a core too).
  uint32_t actor_threads = 0;

  /// The node's TLS certificate (PEM, may hold its chain) and private key: a scheduler's is
  /// what it presents to every client and worker; a worker's, when set, is its client
  /// certificate. Default (a scheduler's, and a worker's when the cluster has
  /// require_client_certificates): certs/NAME.pem and certs/NAME.key beside the config.
  /// Empty in a plaintext cluster.
  std::string tls_certificate;
  std::string tls_key;

  /// Line of the node's `[[node]]` header in the config file (1-based).
  int line = 0;
};

/// A validated cluster config. A value: copy it freely.
struct ClusterConfig {
  /// The cluster's name, [A-Za-z0-9._-]{1,64}.
  std::string name;
  /// File holding the shared secret for node and client authentication. Default: none.
  std::optional<std::string> token_file;
  /// The CA certificates (PEM) that sign the scheduler's certificate, which workers and
  /// clients trust, and the client certificates the scheduler accepts. Default:
  /// certs/ca.pem beside the config; empty in a plaintext cluster.
  std::string tls_ca;
  /// No TLS: every connection is plain Cap'n Proto, the token crosses the wire in clear.
  /// Allowed only when the scheduler listens on a loopback address. Default: false.
  bool plaintext = false;
  /// The scheduler admits only connections that present a certificate signed by tls_ca
  /// (mutual TLS), workers and clients alike. Default: false.
  bool require_client_certificates = false;
  /// Worker -> scheduler heartbeat period, > 0. Default: 1s.
  Duration heartbeat_interval = std::chrono::seconds(1);
  /// No heartbeat for this long: the worker is UNHEALTHY. >= heartbeat_interval.
  /// Default: 2 x heartbeat_interval.
  Duration unhealthy_after = std::chrono::seconds(2);
  /// No heartbeat for this long: the worker is MUST_DIE. > unhealthy_after.
  /// Default: 3 x heartbeat_interval.
  Duration must_die_after = std::chrono::seconds(3);
  /// A new worker with the same shard id may replace an UNHEALTHY one, not only a MUST_DIE
  /// one. Default: false.
  bool replace_unhealthy_workers = false;
  /// How long a cancelled invocation may take to stop (SIGTERM to SIGKILL for a shell task),
  /// and how long its task waits for the confirmation before it counts it as killed. > 0.
  /// Default: 10s.
  Duration kill_grace = std::chrono::seconds(10);
  /// How long a worker shutting down on SIGTERM or SIGINT lets its running tasks finish before
  /// it interrupts them (SIGKILL) and reports them INTERRUPTED, to run again elsewhere. A host
  /// shutdown sends SIGKILL 5 s after SIGTERM. 0: interrupt them at once. Default: 5s.
  Duration shutdown_grace = std::chrono::seconds(5);
  /// A worker whose attempts fail this many times in a row, each of a different task, is
  /// QUARANTINED: it gets no new tasks for quarantine_backoff. 0: never. Default: 5.
  uint32_t quarantine_failures = 5;
  /// How long a worker's first quarantine lasts; each one after it, until an attempt succeeds
  /// there or `troupe worker forgive`, lasts twice as long, up to quarantine_max_backoff.
  /// Default: 1min, at most 1h.
  Duration quarantine_backoff = std::chrono::minutes(1);
  Duration quarantine_max_backoff = std::chrono::hours(1);
  /// How long a worker keeps running its tasks without an acknowledged heartbeat: it rides out
  /// scheduler restarts and network cuts shorter than this, and kills its tasks when it runs
  /// out. A lost worker's tasks are retried elsewhere only then (or once a new instance of the
  /// shard replaced it). >= must_die_after. Default: 30s, or must_die_after if longer.
  Duration worker_lease = std::chrono::seconds(30);
  /// After a scheduler restart, how long it waits for the workers that ran its revived
  /// invocations to register again before those fail over. >= worker_lease. Default:
  /// worker_lease.
  Duration recovery_window = std::chrono::seconds(30);
  /// Closed workflows are purged (history and all) this long after they closed. > 0.
  /// Default: none, closed workflows are kept.
  std::optional<Duration> retention;
  /// What each connection to the scheduler may do (`[connections]`).
  ConnectionLimits connections;
  /// Global dispatch limits per task list name; task lists not listed are unlimited.
  std::map<std::string, TaskListLimits> task_lists;
  /// What the scheduler takes from users ([limits]): definition size, tasks per workflow, id and
  /// name lengths, input and result sizes. Default: InputLimits' defaults.
  InputLimits limits;
  /// The nodes, in file order; at least one.
  std::vector<NodeConfig> nodes;
  /// The config file as named by the caller (the `source_name` of parse_cluster_config).
  std::string source_path;

  /// The node called `name`, or nullptr. The pointer lives as long as this config.
  const NodeConfig* find_node(std::string_view name) const;
  /// The node called `name` (e.g. from `--node NAME`), or NOT_FOUND with a message listing the
  /// nodes the config has. The pointer lives as long as this config.
  Result<const NodeConfig*> get_node(std::string_view name) const;
};

/// Reads and validates the cluster config at `path`; relative paths in it resolve against the
/// file's directory (made absolute). Errors:
///  - NOT_FOUND: the file does not exist; UNAVAILABLE: it exists but cannot be read;
///  - INVALID_ARGUMENT: a TOML syntax error ("FILE:LINE:COL: description"), or every problem
///    found, one per line, sorted by line, each "FILE:LINE: key.path: what is wrong".
Result<ClusterConfig> load_cluster_config(const std::string& path);

/// Validates config `text`. `source_name` names the file in messages; relative paths resolve
/// against `base_dir` (left relative when `base_dir` is empty). Errors as load_cluster_config.
Result<ClusterConfig> parse_cluster_config(std::string_view text, const std::string& source_name,
                                           const std::string& base_dir);

}  // namespace troupe::runtime
