// troupe dev: writes the one-node cluster config it runs (so the config's validation and
// defaults apply exactly as for troupe-node) and runs that node in this process.
#include "tools/troupe/dev_command.hpp"
#include "tools/troupe/cluster_certificates.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "runtime/config/cluster_config.hpp"
#include "runtime/node.hpp"
#include "tools/troupe/dev_config.hpp"

namespace troupe::cli {

int dev_command(const Args& args) {
  auto complain = [](const std::string& message) {
    std::cerr << "troupe dev: " << message << "\n";
    return 2;
  };
  if (auto known = args.only({"listen", "dir", "task-lists", "sync", "token-file", "definitions", "metrics"}); !known) {
    return complain(known.error().message);
  }
  if (!args.positionals().empty()) return complain("dev takes no arguments");
  DevConfig config;
  config.listen = args.get("listen").value_or("127.0.0.1:7700");
  std::error_code ec;
  const auto dir = std::filesystem::absolute(args.get("dir").value_or(".troupe"), ec).lexically_normal();
  config.dir = dir.string();
  auto sync = args.boolean("sync", true);
  if (!sync) return complain(sync.error().message);
  config.sync = *sync;
  auto lists = parse_task_lists(args.get("task-lists").value_or("default=8,io=2"));
  if (!lists) return complain(lists.error().message);
  config.task_lists = std::move(*lists);
  if (auto f = args.get("token-file")) config.token_file = std::filesystem::absolute(*f, ec).string();
  config.metrics = args.get("metrics").value_or("");
  if (auto d = args.get("definitions")) {
    config.definitions = std::filesystem::absolute(*d, ec).lexically_normal().string();
  }
  // Parsed as written, so that a refusal's line numbers are the file's.
  const std::string toml = "# Written by troupe dev on each start; edits are overwritten.\n" + dev_config_toml(config);

  std::filesystem::create_directories(dir, ec);
  if (ec) return complain("cannot create " + dir.string() + ": " + ec.message());
  // Kept beside the data so `troupe submit --config .troupe/dev.toml` and the other client
  // commands find this node, and so a user can see what runs (or what was refused).
  const auto config_path = dir / "dev.toml";
  {
    std::ofstream out(config_path);
    out << toml;
  }
  auto cluster = runtime::parse_cluster_config(toml, config_path.string(), dir.string());
  if (!cluster) return complain(cluster.error().message);
  auto certificates = make_missing_certificates(*cluster);
  if (!certificates) return complain(certificates.error().message);
  std::cerr << "troupe dev: data in " << dir.string() << ", clients connect to " << config.listen
            << "; Ctrl-C stops\n";
  return runtime::run_node(*cluster, cluster->nodes.front());
}

}  // namespace troupe::cli
