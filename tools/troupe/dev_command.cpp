// troupe dev: writes the one-node cluster config it runs (so the config's validation and
// defaults apply exactly as for troupe-node) and runs that node in this process.
#include "tools/troupe/dev_command.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/config/cluster_config.hpp"
#include "runtime/node.hpp"

namespace troupe::cli {
namespace {

/// "default=8,io=2" as a TOML inline table; INVALID_ARGUMENT naming the bad entry.
Result<std::string> task_lists_table(const std::string& list) {
  std::string table = "{ ";
  std::stringstream entries(list);
  std::string entry;
  bool first = true;
  while (std::getline(entries, entry, ',')) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      return fail(Errc::INVALID_ARGUMENT, "--task-lists: '" + entry + "' is not NAME=SLOTS");
    }
    const std::string name = entry.substr(0, eq), slots = entry.substr(eq + 1);
    if (slots.find_first_not_of("0123456789") != std::string::npos) {
      return fail(Errc::INVALID_ARGUMENT, "--task-lists: the slots of '" + name + "' are not a number");
    }
    // Names are checked by the config's own validation; quoting keeps odd ones from
    // changing the TOML's structure.
    if (name.find_first_of("\"\\\n") != std::string::npos) {
      return fail(Errc::INVALID_ARGUMENT, "--task-lists: bad task list name '" + name + "'");
    }
    table += (first ? "\"" : ", \"") + name + "\" = " + slots;
    first = false;
  }
  if (first) return fail(Errc::INVALID_ARGUMENT, "--task-lists: no task list given");
  return table + " }";
}

std::string toml_string(const std::string& s) {
  std::string out = "'";
  out += s;  // a literal string: no escapes; paths with a quote are refused below
  return out + "'";
}

}  // namespace

int dev_command(const Args& args) {
  auto complain = [](const std::string& message) {
    std::cerr << "troupe dev: " << message << "\n";
    return 2;
  };
  if (auto known = args.only({"listen", "dir", "task-lists", "sync", "token-file", "definitions"}); !known) {
    return complain(known.error().message);
  }
  if (!args.positionals().empty()) return complain("dev takes no arguments");
  const std::string listen = args.get("listen").value_or("127.0.0.1:7700");
  std::error_code ec;
  const auto dir = std::filesystem::absolute(args.get("dir").value_or(".troupe"), ec).lexically_normal();
  auto sync = args.boolean("sync", true);
  if (!sync) return complain(sync.error().message);
  auto lists = task_lists_table(args.get("task-lists").value_or("default=8,io=2"));
  if (!lists) return complain(lists.error().message);
  std::string token_file;
  if (auto f = args.get("token-file")) token_file = std::filesystem::absolute(*f, ec).string();
  std::string definitions;
  if (auto d = args.get("definitions")) definitions = std::filesystem::absolute(*d, ec).lexically_normal().string();
  if (dir.string().find('\'') != std::string::npos || token_file.find('\'') != std::string::npos ||
      definitions.find('\'') != std::string::npos) {
    return complain("paths with a single quote are not supported");
  }

  std::ostringstream toml;
  toml << "[cluster]\nname = \"dev\"\n";
  if (!token_file.empty()) toml << "token_file = " << toml_string(token_file) << "\n";
  toml << "\n[[node]]\nname = \"dev\"\nroles = [\"scheduler\", \"worker\"]\n"
       << "listen = \"" << listen << "\"\n"
       << "data_dir = " << toml_string(dir.string()) << "\n"
       << "log_dir = " << toml_string((dir / "logs").string()) << "\n"
       << "sync = " << (*sync ? "true" : "false") << "\n"
       << "task_lists = " << *lists << "\n";
  if (!definitions.empty()) toml << "definitions = " << toml_string(definitions) << "\n";

  std::filesystem::create_directories(dir, ec);
  if (ec) return complain("cannot create " + dir.string() + ": " + ec.message());
  // Kept beside the data so `troupe submit --config .troupe/dev.toml` and the other client
  // commands find this node, and so a user can see what runs.
  const auto config_path = dir / "dev.toml";
  {
    std::ofstream out(config_path);
    out << "# Written by troupe dev on each start; edits are overwritten.\n" << toml.str();
  }
  auto cluster = runtime::parse_cluster_config(toml.str(), config_path.string(), dir.string());
  if (!cluster) return complain(cluster.error().message);
  std::cerr << "troupe dev: data in " << dir.string() << ", clients connect to " << listen << "; Ctrl-C stops\n";
  return runtime::run_node(*cluster, cluster->nodes.front());
}

}  // namespace troupe::cli
