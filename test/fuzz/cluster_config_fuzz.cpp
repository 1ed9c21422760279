// Fuzz target: the cluster config, TOML text through the parser and checker every node and
// `troupe up` read it with, and the address and size readers that CLI flags share with it. An
// accepted config must keep the promises cluster_config.hpp makes, since the node takes them
// as given.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "runtime/config/cluster_config.hpp"
#include "test/fuzz/fuzz_check.hpp"

namespace {

using namespace troupe::runtime;

/// Whether a node can arm a timer for `d`: CAF's clock counts nanoseconds in 64 bits, and a
/// deadline is a moment of it plus `d`.
bool armable(troupe::Duration d) {
  return d.count() >= 0 && d <= std::chrono::duration_cast<troupe::Duration>(std::chrono::nanoseconds::max()) / 2;
}

void check_config(const ClusterConfig& config) {
  for (auto d : {config.heartbeat_interval, config.unhealthy_after, config.must_die_after, config.worker_lease,
                 config.recovery_window, config.kill_grace, config.shutdown_grace, config.quarantine_backoff,
                 config.quarantine_max_backoff, config.retention.value_or(troupe::Duration(0)),
                 config.connections.handshake_timeout, config.connections.idle_timeout}) {
    TROUPE_FUZZ_CHECK(armable(d), "the config's durations can be armed as timers");
  }
  TROUPE_FUZZ_CHECK(!config.name.empty(), "a cluster has a name");
  TROUPE_FUZZ_CHECK(!config.nodes.empty(), "a cluster has nodes");
  TROUPE_FUZZ_CHECK(config.heartbeat_interval.count() > 0, "heartbeats have a period");
  TROUPE_FUZZ_CHECK(config.heartbeat_interval <= config.unhealthy_after &&
                        config.unhealthy_after < config.must_die_after &&
                        config.must_die_after <= config.worker_lease &&
                        config.worker_lease <= config.recovery_window,
                    "heartbeat <= unhealthy < must die <= lease <= recovery window");
  TROUPE_FUZZ_CHECK(config.kill_grace.count() > 0, "kill_grace > 0");
  TROUPE_FUZZ_CHECK(config.shutdown_grace.count() >= 0, "shutdown_grace >= 0");
  TROUPE_FUZZ_CHECK(!config.retention || config.retention->count() > 0, "retention > 0");
  for (const auto& [list, limits] : config.task_lists) {
    TROUPE_FUZZ_CHECK(limits.rate > 0 && limits.burst >= 1, "a task list's limit lets tasks through");
  }
  std::set<std::string> names;
  for (const auto& node : config.nodes) {
    TROUPE_FUZZ_CHECK(names.insert(node.name).second, "node names are unique");
    TROUPE_FUZZ_CHECK(config.find_node(node.name) == &node, "a node's name finds it");
    TROUPE_FUZZ_CHECK(node.scheduler || node.worker, "a node has a role");
    if (node.scheduler) {
      TROUPE_FUZZ_CHECK(!node.listen.empty() && !node.data_dir.empty(), "a scheduler listens and keeps data");
      auto again = parse_bind_address(node.listen.to_string());
      TROUPE_FUZZ_CHECK(again && *again == node.listen, "a listen address reads back");
    }
    if (node.worker) {
      TROUPE_FUZZ_CHECK(!node.scheduler_address.empty(), "a worker knows its scheduler");
      TROUPE_FUZZ_CHECK(!node.task_lists.empty(), "a worker serves task lists");
      for (const auto& [list, slots] : node.task_lists) TROUPE_FUZZ_CHECK(slots >= 1, "a task list has slots");
      TROUPE_FUZZ_CHECK(node.log_cap_bytes >= 1024, "a task log holds at least 1 KiB");
      TROUPE_FUZZ_CHECK(!node.rate || *node.rate > 0, "a worker's rate lets tasks through");
    }
  }
  TROUPE_FUZZ_CHECK(!config.get_node("no such node, with spaces"), "an unknown node is not found");
}

/// The readers CLI flags use: what they accept reads back as itself.
void check_flag_readers(std::string_view text) {
  if (auto address = parse_address(text)) {
    TROUPE_FUZZ_CHECK(address->port >= 1, "a peer's port is 1-65535");
    auto again = parse_address(address->to_string());
    TROUPE_FUZZ_CHECK(again && *again == *address, "an address reads back");
  }
  if (auto address = parse_bind_address(text)) {
    auto again = parse_bind_address(address->to_string());
    TROUPE_FUZZ_CHECK(again && *again == *address, "a bind address reads back");
  }
  (void)parse_byte_size(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = parse_cluster_config(text, "cluster.toml", "/srv/troupe");
  if (config) {
    check_config(*config);
  } else {
    TROUPE_FUZZ_CHECK(config.error().message.starts_with("cluster.toml:"), "a config error names the file");
  }
  if (size <= 512) check_flag_readers(text);
  return 0;
}
