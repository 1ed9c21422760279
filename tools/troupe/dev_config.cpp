// troupe dev's config as a toml++ document, printed by toml++'s own formatter.
#include "tools/troupe/dev_config.hpp"

#include "runtime/config/cluster_config.hpp"

#include <toml++/toml.h>

#include <sstream>

namespace troupe::cli {

Result<std::vector<std::pair<std::string, int64_t>>> parse_task_lists(const std::string& list) {
  std::vector<std::pair<std::string, int64_t>> out;
  std::stringstream entries(list);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      return fail(Errc::INVALID_ARGUMENT, "--task-lists: '" + entry + "' is not NAME=SLOTS");
    }
    const std::string name = entry.substr(0, eq), slots = entry.substr(eq + 1);
    // Up to 18 digits fit an int64_t; the config's validation says what range is allowed.
    if (slots.size() > 18 || slots.find_first_not_of("0123456789") != std::string::npos) {
      return fail(Errc::INVALID_ARGUMENT, "--task-lists: the slots of '" + name + "' are not a number");
    }
    out.emplace_back(name, std::stoll(slots));
  }
  if (out.empty()) return fail(Errc::INVALID_ARGUMENT, "--task-lists: no task list given");
  return out;
}

std::string dev_config_toml(const DevConfig& config) {
  // Ctrl-C stops troupe dev at once: what runs is interrupted, reported, and runs again (the
  // same attempt) when it starts next.
  toml::table cluster{{"name", "dev"}, {"shutdown_grace", "0s"}};
  // On a loopback address, plain Cap'n Proto, so that the CLI's defaults reach it; anywhere
  // else TLS with certificates troupe dev makes beside the config (certs/).
  const auto host = runtime::parse_address(config.listen);
  if (host && is_loopback_host(host->host)) {
    cluster.insert("plaintext", true);
  }
  if (!config.token_file.empty()) cluster.insert("token_file", config.token_file);

  toml::table lists;
  for (const auto& [name, slots] : config.task_lists) lists.insert_or_assign(name, slots);
  lists.is_inline(true);

  toml::table node{{"name", "dev"},
                   {"roles", toml::array{"scheduler", "worker"}},
                   {"listen", config.listen},
                   {"data_dir", config.dir},
                   {"log_dir", config.dir + "/logs"},
                   {"sync", config.sync},
                   {"task_lists", std::move(lists)}};
  if (!config.definitions.empty()) node.insert("definitions", config.definitions);
  if (!config.metrics.empty()) node.insert("metrics", config.metrics);

  toml::table root{{"cluster", std::move(cluster)}, {"node", toml::array{std::move(node)}}};
  std::ostringstream out;
  out << toml::toml_formatter(root) << "\n";
  return out.str();
}

}  // namespace troupe::cli
