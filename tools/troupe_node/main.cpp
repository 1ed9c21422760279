// troupe-node --config CLUSTER.toml --node NAME: runs one node of a cluster.
#include <cstring>
#include <iostream>
#include <string>

#include "runtime/config/cluster_config.hpp"
#include "runtime/node.hpp"

namespace {

constexpr const char* usage = R"(usage: troupe-node --config CLUSTER.toml --node NAME

Runs node NAME of the cluster described by CLUSTER.toml: a scheduler, a worker, or both,
as its roles say. Stops cleanly on SIGINT or SIGTERM.
Exit codes: 0 stopped, 1 a worker had to die, 2 usage or config error, 3 could not start
(its listen address in use, its data directory unusable: the message says which),
4 the scheduler's history store failed a write (a full disk: the message says what to do).
)";

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, node_name;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (arg == "--config" && value(config_path)) continue;
    if (arg == "--node" && value(node_name)) continue;
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      return 0;
    }
    std::cerr << "troupe-node: unexpected argument '" << arg << "'\n" << usage;
    return 2;
  }
  if (config_path.empty() || node_name.empty()) {
    std::cerr << "troupe-node: --config and --node are required\n" << usage;
    return 2;
  }
  auto cluster = troupe::runtime::load_cluster_config(config_path);
  if (!cluster) {
    std::cerr << cluster.error().message << "\n";
    return 2;
  }
  auto node = cluster->get_node(node_name);
  if (!node) {
    std::cerr << "troupe-node: " << node.error().message << "\n";
    return 2;
  }
  return troupe::runtime::run_node(*cluster, **node);
}
