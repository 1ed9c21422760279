// up, down, describe states, version and the benchmarks: parse their values, call the layer
// that does the work, print its answer.
#include "tools/troupe/local_commands.hpp"
#include "tools/troupe/cluster_certificates.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "actors/task/task_machine.hpp"
#include "actors/worker/health_machine.hpp"
#include "actors/session/session_machine.hpp"
#include "actors/worker/standing_machine.hpp"
#include "actors/workflow/workflow_machine.hpp"
#include "runtime/config/cluster_config.hpp"
#include "tools/troupe/bench_cluster.hpp"
#include "tools/troupe/bench_inprocess.hpp"
#include "tools/troupe/bench_store.hpp"
#include "tools/troupe/exit_codes.hpp"
#include "tools/troupe/json.hpp"
#include "tools/troupe/local_cluster.hpp"
#include "tools/troupe/node_process.hpp"
#include "tools/troupe/version.hpp"

namespace troupe::cli {
namespace {

/// The first error among parsed options, or nullptr.
template <class... Results>
const Error* first_error(const Results&... results) {
  const Error* found = nullptr;
  ((found = found != nullptr || results ? found : &results.error()), ...);
  return found;
}

/// Fields every benchmark report carries.
void add_build_facts(Json& report, bool sync) {
  report.set("build_type", build_type());
  report.set("storage_sync", sync);
  report.set("cores", static_cast<int>(std::thread::hardware_concurrency()));
  report.set("git_revision", git_revision());
}

/// The scratch directory of a benchmark: --dir, or one of ours removed afterwards.
struct BenchDirectory {
  std::string path;
  bool owned;
  explicit BenchDirectory(const Args& args)
      : path(args.get("dir").value_or(".troupe/bench-" + std::to_string(getpid()))), owned(!args.has("dir")) {}
  ~BenchDirectory() {
    std::error_code ec;
    if (owned) std::filesystem::remove_all(path, ec);
  }
};

/// The exit code of a local command's error: 2 for bad input, else 1 (the operation failed;
/// no scheduler is asked, so no "unreachable" or "timed out waiting").
int local_failure(const Error& error) {
  return complain(error.code == Errc::INVALID_ARGUMENT ? exit_usage : exit_failed, error.message);
}

/// Prints a benchmark's report or its error.
int report_or_fail(Result<Json> report, bool sync) {
  if (!report) return local_failure(report.error());
  add_build_facts(*report, sync);
  std::cout << report->dump() << std::endl;
  return exit_ok;
}

/// Where a cluster benchmark's nodes come from: --slots, --node-binary, --sync, --metrics, the
/// directory.
Result<BenchClusterOptions> cluster_options(const Args& args, const std::string& directory) {
  BenchClusterOptions options;
  auto slots = args.number("slots", options.worker_slots);
  auto sync = args.boolean("sync", options.sync);
  auto metrics = args.boolean("metrics", options.metrics);
  if (const Error* error = first_error(slots, sync, metrics)) return *error;
  options.metrics = *metrics;
  if (*slots < 1) return fail(Errc::INVALID_ARGUMENT, "--slots must be at least 1");
  options.worker_slots = static_cast<int>(*slots);
  options.sync = *sync;
  options.directory = directory;
  options.node_binary = args.get("node-binary").value_or(executable_directory() + "/troupe-node");
  if (::access(options.node_binary.c_str(), X_OK) != 0) {
    return fail(Errc::INVALID_ARGUMENT, "no troupe-node at '" + options.node_binary + "'; name it with --node-binary");
  }
  return options;
}

/// The cluster config named by the command's argument, and its absolute path (which
/// identifies the nodes started from it); nullopt once the problem is printed.
std::optional<std::pair<runtime::ClusterConfig, std::string>> cluster_argument(const Args& args) {
  const std::string& file = args.positionals().at(0);
  auto config = runtime::load_cluster_config(file);
  if (!config) {
    std::cerr << config.error().message << "\n";
    return std::nullopt;
  }
  std::error_code ec;
  auto path = std::filesystem::canonical(file, ec);
  if (ec) path = std::filesystem::absolute(file);
  return std::pair{std::move(*config), path.string()};
}

Result<Duration> duration_option(const Args& args, const std::string& name, Duration fallback) {
  auto text = args.get(name);
  if (!text) return fallback;
  auto parsed = parse_duration(*text);
  if (!parsed) return fail(Errc::INVALID_ARGUMENT, "--" + name + ": " + parsed.error().message);
  return parsed;
}

/// The node table of up or down, as text or {"nodes": [...]}; exit 0 when every node is
/// where it was asked to be.
int print_nodes(const std::vector<NodeReport>& reports, bool json) {
  if (json) {
    Json nodes = Json::array();
    for (const auto& r : reports) {
      Json node = Json::object();
      node.set("node", r.node);
      node.set("roles", r.roles);
      node.set("pid", static_cast<int64_t>(r.pid));
      node.set("address", r.address);
      node.set("log", r.log);
      node.set("status", r.status);
      node.set("ok", r.ok);
      node.set("logTail", r.log_tail);
      nodes.push(std::move(node));
    }
    Json out = Json::object();
    out.set("nodes", std::move(nodes));
    std::cout << out.dump() << "\n";
  } else {
    print_node_table(reports, std::cout);
  }
  const bool all_ok = std::all_of(reports.begin(), reports.end(), [](const NodeReport& r) { return r.ok; });
  return all_ok ? exit_ok : exit_failed;
}

}  // namespace

int bench_store_command(const Args& args) {
  StoreBenchOptions options;
  auto seconds = args.number("seconds", options.seconds);
  auto appenders = args.int_list("appenders", options.appenders);
  auto sync = args.boolean("sync", options.sync);
  auto event_bytes = args.number("event-bytes", static_cast<double>(options.event_bytes));
  if (const Error* error = first_error(seconds, appenders, sync, event_bytes)) return usage_error(args, error->message);
  options.seconds = *seconds;
  options.appenders = *appenders;
  options.sync = *sync;
  options.event_bytes = static_cast<size_t>(*event_bytes);
  BenchDirectory dir(args);
  options.directory = dir.path;
  return report_or_fail(run_store_bench(options, std::cerr), options.sync);
}

int bench_chain_command(const Args& args) {
  ChainBenchOptions options;
  auto in_process = args.boolean("in-process", false);
  auto workflows = args.number("workflows", options.workflows);
  auto tasks = args.number("tasks", options.tasks);
  auto in_flight = args.number("in-flight", options.in_flight);
  auto sync = args.boolean("sync", options.sync);
  if (const Error* error = first_error(in_process, workflows, tasks, in_flight, sync)) {
    return usage_error(args, error->message);
  }
  options.workflows = static_cast<int>(*workflows);
  options.tasks = static_cast<int>(*tasks);
  options.in_flight = static_cast<int>(*in_flight);
  options.sync = *sync;
  if (options.workflows < 1 || options.tasks < 1 || options.in_flight < 1) {
    return usage_error(args, "--workflows, --tasks and --in-flight must be at least 1");
  }
  BenchDirectory dir(args);
  options.directory = dir.path;
  if (*in_process) {
    if (args.get("metrics")) return usage_error(args, "--metrics is for the nodes of a cluster run, not --in-process");
    return report_or_fail(run_chain_bench(options, std::cerr), options.sync);
  }
  auto cluster = cluster_options(args, dir.path + "/cluster");
  if (!cluster) return usage_error(args, cluster.error().message);
  ClusterChainOptions chain{options.workflows, options.tasks, options.in_flight};
  return report_or_fail(run_cluster_chain_bench(*cluster, chain, std::cerr), cluster->sync);
}

int bench_fanout_command(const Args& args) {
  ClusterFanoutOptions options;
  auto width = args.number("width", options.width);
  auto runs = args.number("runs", options.runs);
  if (const Error* error = first_error(width, runs)) return usage_error(args, error->message);
  options.width = static_cast<int>(*width);
  options.runs = static_cast<int>(*runs);
  if (options.width < 1 || options.runs < 1) return usage_error(args, "--width and --runs must be at least 1");
  BenchDirectory dir(args);
  auto cluster = cluster_options(args, dir.path + "/cluster");
  if (!cluster) return usage_error(args, cluster.error().message);
  return report_or_fail(run_cluster_fanout_bench(*cluster, options, std::cerr), cluster->sync);
}

int bench_idle_command(const Args& args) {
  IdleBenchOptions options;
  auto workflows = args.number("workflows", options.workflows);
  auto sync = args.boolean("sync", options.sync);
  if (const Error* error = first_error(workflows, sync)) return usage_error(args, error->message);
  options.workflows = static_cast<int>(*workflows);
  options.sync = *sync;
  if (options.workflows < 1) return usage_error(args, "--workflows must be at least 1");
  BenchDirectory dir(args);
  options.directory = dir.path;
  return report_or_fail(run_idle_bench(options, std::cerr), options.sync);
}

int describe_states_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  const std::string format = args.get("format").value_or(*json ? "json" : "markdown");
  if (format == "markdown") {
    std::cout << "## troupe state machines\n\n"
              << actors::WorkflowMachine::table().markdown("Workflow") << "\n"
              << actors::TaskMachine::table().markdown("Task") << "\n"
              << actors::HealthMachine::table().markdown("Worker health") << "\n"
              << actors::StandingMachine::table().markdown("Worker standing (drains, quarantine)") << "\n"
              << actors::SessionMachine::table().markdown("Session");
  } else if (format == "dot") {
    std::cout << actors::WorkflowMachine::table().dot("workflow") << "\n"
              << actors::TaskMachine::table().dot("task") << "\n"
              << actors::HealthMachine::table().dot("worker_health") << "\n"
              << actors::StandingMachine::table().dot("worker_standing") << "\n"
              << actors::SessionMachine::table().dot("session");
  } else if (format == "json") {
    std::cout << "{\"workflow\":" << actors::WorkflowMachine::table().json()
              << ",\"task\":" << actors::TaskMachine::table().json()
              << ",\"workerHealth\":" << actors::HealthMachine::table().json()
              << ",\"workerStanding\":" << actors::StandingMachine::table().json()
              << ",\"session\":" << actors::SessionMachine::table().json() << "}\n";
  } else {
    return usage_error(args, "--format takes markdown, dot or json, not '" + format + "'");
  }
  return exit_ok;
}

int version_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  if (*json) {
    Json out = Json::object();
    out.set("revision", git_revision());
    out.set("buildType", build_type());
    std::cout << out.dump() << "\n";
  } else {
    std::cout << "troupe " << git_revision() << " (" << build_type() << ")\n";
  }
  return exit_ok;
}

int certs_command(const Args& args) {
  auto cluster = cluster_argument(args);
  if (!cluster) return exit_usage;
  auto written = make_missing_certificates(cluster->first);
  if (!written) return local_failure(written.error());
  if (cluster->first.plaintext) {
    std::cout << "the cluster is plaintext (plaintext = true): it needs no certificates\n";
  } else if (written->empty()) {
    std::cout << "every certificate the config needs is there\n";
  }
  for (const auto& path : *written) std::cout << "made " << path << "\n";
  return exit_ok;
}

int up_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto cluster = cluster_argument(args);
  if (!cluster) return exit_usage;
  // Encrypted from the first start: the cluster's own CA and certificates, unless it has some.
  auto certificates = make_missing_certificates(cluster->first);
  if (!certificates) return local_failure(certificates.error());
  for (const auto& path : *certificates) std::cerr << "troupe up: made " << path << "\n";
  UpOptions options;
  options.config_path = cluster->second;
  options.nodes = args.all("node");
  auto timeout = duration_option(args, "timeout", options.ready_timeout);
  if (!timeout) return usage_error(args, timeout.error().message);
  options.ready_timeout = *timeout;
  options.node_binary = args.get("node-binary").value_or(executable_directory() + "/troupe-node");
  if (::access(options.node_binary.c_str(), X_OK) != 0) {
    return usage_error(args, "no troupe-node at '" + options.node_binary + "'; name it with --node-binary");
  }
  auto reports = up_local_cluster(cluster->first, options);
  if (!reports) return local_failure(reports.error());
  return print_nodes(*reports, *json);
}

int down_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto cluster = cluster_argument(args);
  if (!cluster) return exit_usage;
  DownOptions options;
  options.config_path = cluster->second;
  options.nodes = args.all("node");
  auto grace = duration_option(args, "grace", options.grace);
  if (!grace) return usage_error(args, grace.error().message);
  options.grace = *grace;
  auto reports = down_local_cluster(cluster->first, options);
  if (!reports) return local_failure(reports.error());
  return print_nodes(*reports, *json);
}

}  // namespace troupe::cli
