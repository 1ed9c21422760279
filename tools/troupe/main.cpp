// The troupe command line. Thin: parse, call the layer that does the work, turn its Result
// into a stderr line and an exit code (0 ok, 1 failed, 2 usage or input error).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actors/task/task_machine.hpp"
#include "actors/worker/health_machine.hpp"
#include "actors/workflow/workflow_machine.hpp"
#include "runtime/config/cluster_config.hpp"
#include "tools/troupe/args.hpp"
#include "tools/troupe/bench_cluster.hpp"
#include "tools/troupe/bench_inprocess.hpp"
#include "tools/troupe/bench_store.hpp"
#include "tools/troupe/client_commands.hpp"
#include "tools/troupe/dev_command.hpp"
#include "tools/troupe/local_cluster.hpp"
#include "tools/troupe/node_process.hpp"
#include "tools/troupe/version.hpp"

namespace troupe::cli {
namespace {

constexpr const char* usage_head = R"(usage: troupe COMMAND [ARGS]

commands:
  submit FILE.json   starts the workflow defined in FILE.json (- reads stdin) and prints its id;
  submit NAME        or the definition registered as NAME (a file in the scheduler's
                     `definitions` directory)
                  --id ID            the workflow id (default: the scheduler picks one); while a
                                     workflow with this id is open, submitting again returns it
                  --input JSON       the workflow's input (default {})
                  --wait             wait for the end and print the state, as `result` does
                  --timeout D        give up waiting after D (e.g. 10m)
                  --json             print JSON
  result ID       waits for workflow ID to end and prints "ID STATE[: reason]"; exit 0 when it
                  succeeded, 1 when it failed or was stopped
                  --timeout D  --json
  status ID       the workflow's state and a table of its tasks (state, attempt, worker, progress
                  or failure) as its history records them; --json
  pause ID        no new tasks of workflow ID start; it is PAUSED once none is active
  resume ID       a paused workflow carries on
  stop ID         the workflow's active tasks are cancelled (SIGTERM, then SIGKILL after the
                  cluster's kill_grace); it is STOPPED once each has stopped or its grace ran out
  kill ID         stop at once: active tasks get SIGKILL and the workflow is STOPPED without
                  waiting for their confirmation
                  each prints "ID STATE" (the state reached, durable); --json
  rerun ID        reopens finished workflow ID and runs tasks again; the others keep their
                  outcome. Prints "ID RUNNING" once that is durable
                  --from TASK        TASK and every task downstream of it (default: every task
                                     that did not succeed: failed, killed, or never run)
                  --wait             wait for the end and print the state, as `result` does
                  --timeout D  --json
  watch ID        the task table (state, attempt, worker, progress bar), redrawn live until
                  the workflow ends; exit 0 when it succeeded, 1 otherwise. Not on a terminal,
                  or with --json, one line per history event instead
                  --from SEQ         start at this history sequence (after a reconnect)
  list            workflows in id order, from the scheduler's index
                  --state S          OPEN, CLOSED, SUCCESS, FAILED or STOPPED
                  --name N           the definition's name
                  --since D          created within the last D (e.g. 1h); --until D: before D ago
                  --limit N          how many (default 20); --after CURSOR: the next page
                  --json
  complete TOKEN RESULT
                  ends an asyncCompletion task's invocation with RESULT (JSON text); TOKEN is
                  the task's $TROUPE_TASK_TOKEN
  fail TOKEN REASON [--details TEXT]
                  ends it as failed with REASON (retried per the task's retry policy)
)";

constexpr const char* usage_body = R"(
  bench store   the STORE workload: durable 200-byte appends through the history store
                from 1, 8 and 64 concurrent appenders, against the raw fdatasync rate.
                  --seconds S        length of each run (default 10)
                  --appenders LIST   appender counts (default 1,8,64)
                  --dir DIR          where the stores go (default ./.troupe/bench-PID, removed after)
                  --sync BOOL        sync every commit (default true)
                  --event-bytes N    stored size of each event (default 200)
                prints one JSON object on stdout and a table on stderr
  bench chain   the CHAIN workload: W workflows of K chained noop tasks, the client keeping C
                in flight, against a scheduler process and a worker process (troupe-node, found
                beside troupe) started on 127.0.0.1 from a generated config
                  --workflows W (5000)  --tasks K (10)  --in-flight C (64)  --dir DIR  --sync BOOL
                  --slots N (256)    the worker's slots
                  --node-binary F    troupe-node to run
                  --in-process       run on the actor core in this process instead (local
                                     executor, durable history, no RPC)
  bench fanout  the FANOUT workload on a scheduler and a worker process: R runs, one after
                another, of root -> N parallel noop tasks -> join
                  --width N (1000)  --runs R (5)  --slots N (256)  --dir DIR  --sync BOOL
                  --node-binary F
  bench idle    the IDLE workload in-process: A workflows whose task sleeps 10 minutes;
                RSS per running workflow and start rate
                  --workflows A (100000)  --dir DIR  --sync BOOL
  up CLUSTER.toml [--node NAME ...]
                starts the nodes of a cluster config on this machine, each a detached
                troupe-node (schedulers first, awaited until they accept connections); their
                pid files and logs go to .troupe-run/CLUSTER/ beside the config. Nodes already
                running are left alone. Exit 0 all up, 1 a node did not come up (its log's end
                is printed), 2 a bad config or usage
                  --node NAME        only this node (repeatable)
                  --timeout D        how long a node may take to come up (default 30s)
                  --node-binary F    troupe-node to run (default: the one beside troupe)
  down CLUSTER.toml [--node NAME ...] [--grace D]
                stops the nodes troupe up started, workers first: SIGTERM, then SIGKILL after
                the grace (default 10s); removes their pid files. Exit 0 when all are stopped
  describe states [--format markdown|dot]
                the workflow, task and worker health state machines: every transition with
                its actions (Markdown, the default) or as Graphviz graphs (dot)
  version       the build's git revision and type
  help          this text

Client commands exit 0 on success, 1 when the workflow failed or was stopped, 2 on a usage or
input error (the definition's problems are listed with their JSON paths), 3 when the
scheduler cannot be reached.
)";

const std::string usage = std::string(usage_head) + client_options_usage + dev_usage + usage_body;

int usage_error(const std::string& message) {
  std::cerr << "troupe: " << message << "\n\n" << usage;
  return 2;
}

int failed(const Error& error) {
  std::cerr << "troupe: " << error.message << "\n";
  return error.code == Errc::INVALID_ARGUMENT ? 2 : 1;
}

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

/// Prints a benchmark's report or its error.
int report_or_fail(Result<Json> report, bool sync) {
  if (!report) return failed(report.error());
  add_build_facts(*report, sync);
  std::cout << report->dump() << std::endl;
  return 0;
}

int bench_store(const Args& args) {
  if (auto known = args.only({"seconds", "appenders", "dir", "sync", "event-bytes"}); !known) {
    return usage_error(known.error().message);
  }
  StoreBenchOptions options;
  auto seconds = args.number("seconds", options.seconds);
  auto appenders = args.int_list("appenders", options.appenders);
  auto sync = args.boolean("sync", options.sync);
  auto event_bytes = args.number("event-bytes", static_cast<double>(options.event_bytes));
  if (const Error* error = first_error(seconds, appenders, sync, event_bytes)) {
    return usage_error(error->message);
  }
  options.seconds = *seconds;
  options.appenders = *appenders;
  options.sync = *sync;
  options.event_bytes = static_cast<size_t>(*event_bytes);
  BenchDirectory dir(args);
  options.directory = dir.path;
  return report_or_fail(run_store_bench(options, std::cerr), options.sync);
}

/// Where a cluster benchmark's nodes come from: --slots, --node-binary, --sync, the directory.
Result<BenchClusterOptions> cluster_options(const Args& args, const std::string& directory) {
  BenchClusterOptions options;
  auto slots = args.number("slots", options.worker_slots);
  auto sync = args.boolean("sync", options.sync);
  if (const Error* error = first_error(slots, sync)) return *error;
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

int bench_chain(const Args& args) {
  if (auto known = args.only({"workflows", "tasks", "in-flight", "dir", "sync", "slots", "node-binary", "in-process"});
      !known) {
    return usage_error(known.error().message);
  }
  auto in_process = args.boolean("in-process", false);
  if (!in_process) return usage_error(in_process.error().message);
  ChainBenchOptions options;
  auto workflows = args.number("workflows", options.workflows);
  auto tasks = args.number("tasks", options.tasks);
  auto in_flight = args.number("in-flight", options.in_flight);
  auto sync = args.boolean("sync", options.sync);
  if (const Error* error = first_error(workflows, tasks, in_flight, sync)) {
    return usage_error(error->message);
  }
  options.workflows = static_cast<int>(*workflows);
  options.tasks = static_cast<int>(*tasks);
  options.in_flight = static_cast<int>(*in_flight);
  options.sync = *sync;
  if (options.workflows < 1 || options.tasks < 1 || options.in_flight < 1) {
    return usage_error("--workflows, --tasks and --in-flight must be at least 1");
  }
  BenchDirectory dir(args);
  options.directory = dir.path;
  if (*in_process) return report_or_fail(run_chain_bench(options, std::cerr), options.sync);
  auto cluster = cluster_options(args, dir.path + "/cluster");
  if (!cluster) return usage_error(cluster.error().message);
  ClusterChainOptions chain{options.workflows, options.tasks, options.in_flight};
  return report_or_fail(run_cluster_chain_bench(*cluster, chain, std::cerr), cluster->sync);
}

int bench_fanout(const Args& args) {
  if (auto known = args.only({"width", "runs", "dir", "sync", "slots", "node-binary"}); !known) {
    return usage_error(known.error().message);
  }
  ClusterFanoutOptions options;
  auto width = args.number("width", options.width);
  auto runs = args.number("runs", options.runs);
  if (const Error* error = first_error(width, runs)) return usage_error(error->message);
  options.width = static_cast<int>(*width);
  options.runs = static_cast<int>(*runs);
  if (options.width < 1 || options.runs < 1) return usage_error("--width and --runs must be at least 1");
  BenchDirectory dir(args);
  auto cluster = cluster_options(args, dir.path + "/cluster");
  if (!cluster) return usage_error(cluster.error().message);
  return report_or_fail(run_cluster_fanout_bench(*cluster, options, std::cerr), cluster->sync);
}

int bench_idle(const Args& args) {
  if (auto known = args.only({"workflows", "dir", "sync"}); !known) return usage_error(known.error().message);
  IdleBenchOptions options;
  auto workflows = args.number("workflows", options.workflows);
  auto sync = args.boolean("sync", options.sync);
  if (const Error* error = first_error(workflows, sync)) return usage_error(error->message);
  options.workflows = static_cast<int>(*workflows);
  options.sync = *sync;
  if (options.workflows < 1) return usage_error("--workflows must be at least 1");
  BenchDirectory dir(args);
  options.directory = dir.path;
  return report_or_fail(run_idle_bench(options, std::cerr), options.sync);
}

int describe_states(const Args& args) {
  if (auto known = args.only({"format"}); !known) return usage_error(known.error().message);
  const std::string format = args.get("format").value_or("markdown");
  if (format == "markdown") {
    std::cout << "## troupe state machines\n\n"
              << actors::WorkflowMachine::table().markdown("Workflow") << "\n"
              << actors::TaskMachine::table().markdown("Task") << "\n"
              << actors::HealthMachine::table().markdown("Worker health");
  } else if (format == "dot") {
    std::cout << actors::WorkflowMachine::table().dot("workflow") << "\n"
              << actors::TaskMachine::table().dot("task") << "\n"
              << actors::HealthMachine::table().dot("worker_health");
  } else {
    return usage_error("--format takes markdown or dot, not '" + format + "'");
  }
  return 0;
}

/// Every `--node NAME` (or `--node=NAME`) in `words`: the option may be repeated, and Args
/// keeps only the last value of an option.
std::vector<std::string> node_names(const std::vector<std::string>& words) {
  std::vector<std::string> names;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "--node" && i + 1 < words.size()) names.push_back(words[++i]);
    if (words[i].starts_with("--node=")) names.push_back(words[i].substr(7));
  }
  return names;
}

/// The cluster config named by the command's one argument, and its absolute path (which
/// identifies the nodes started from it); nullopt once the problem is printed.
std::optional<std::pair<runtime::ClusterConfig, std::string>> cluster_argument(const Args& args,
                                                                               const std::string& command) {
  if (args.positionals().size() != 1) {
    usage_error(command + " takes one cluster config: troupe " + command + " CLUSTER.toml");
    return std::nullopt;
  }
  auto config = runtime::load_cluster_config(args.positionals()[0]);
  if (!config) {
    std::cerr << config.error().message << "\n";
    return std::nullopt;
  }
  std::error_code ec;
  auto path = std::filesystem::canonical(args.positionals()[0], ec);
  if (ec) path = std::filesystem::absolute(args.positionals()[0]);
  return std::pair{std::move(*config), path.string()};
}

Result<Duration> duration_option(const Args& args, const std::string& name, Duration fallback) {
  auto text = args.get(name);
  if (!text) return fallback;
  auto parsed = parse_duration(*text);
  if (!parsed) return fail(Errc::INVALID_ARGUMENT, "--" + name + ": " + parsed.error().message);
  return parsed;
}

int cluster_up(const Args& args, const std::vector<std::string>& words) {
  if (auto known = args.only({"node", "timeout", "node-binary"}); !known) return usage_error(known.error().message);
  auto cluster = cluster_argument(args, "up");
  if (!cluster) return 2;
  UpOptions options;
  options.config_path = cluster->second;
  options.nodes = node_names(words);
  auto timeout = duration_option(args, "timeout", options.ready_timeout);
  if (!timeout) return usage_error(timeout.error().message);
  options.ready_timeout = *timeout;
  options.node_binary = args.get("node-binary").value_or(executable_directory() + "/troupe-node");
  if (::access(options.node_binary.c_str(), X_OK) != 0) {
    return usage_error("no troupe-node at '" + options.node_binary + "'; name it with --node-binary");
  }
  auto reports = up_local_cluster(cluster->first, options);
  if (!reports) return failed(reports.error());
  print_node_table(*reports, std::cout);
  const bool all_up = std::all_of(reports->begin(), reports->end(), [](const NodeReport& r) { return r.ok; });
  return all_up ? 0 : 1;
}

int cluster_down(const Args& args, const std::vector<std::string>& words) {
  if (auto known = args.only({"node", "grace"}); !known) return usage_error(known.error().message);
  auto cluster = cluster_argument(args, "down");
  if (!cluster) return 2;
  DownOptions options;
  options.config_path = cluster->second;
  options.nodes = node_names(words);
  auto grace = duration_option(args, "grace", options.grace);
  if (!grace) return usage_error(grace.error().message);
  options.grace = *grace;
  auto reports = down_local_cluster(cluster->first, options);
  if (!reports) return failed(reports.error());
  print_node_table(*reports, std::cout);
  const bool all_down = std::all_of(reports->begin(), reports->end(), [](const NodeReport& r) { return r.ok; });
  return all_down ? 0 : 1;
}

int run(const std::vector<std::string>& words) {
  if (words.empty() || words[0] == "help" || words[0] == "--help" || words[0] == "-h") {
    std::cout << usage;
    return words.empty() ? 2 : 0;
  }
  auto args = Args::parse({words.begin() + 1, words.end()}, {"in-process", "wait", "json"});
  if (!args) return usage_error(args.error().message);
  const std::string& command = words[0];
  if (command == "version" || command == "--version") {
    std::cout << "troupe " << git_revision() << " (" << build_type() << ")\n";
    return 0;
  }
  if (command == "submit") return submit_command(*args);
  if (command == "result") return result_command(*args);
  if (command == "status") return status_command(*args);
  if (command == "rerun") return rerun_command(*args);
  if (command == "pause" || command == "resume" || command == "stop" || command == "kill") return control_command(command, *args);
  if (command == "dev") return dev_command(*args);
  if (command == "list") return list_command(*args);
  if (command == "watch") return watch_command(*args);
  if (command == "complete" || command == "fail") return task_completion_command(command, *args);
  if (command == "up") return cluster_up(*args, words);
  if (command == "down") return cluster_down(*args, words);
  if (command == "describe") {
    const auto& rest = args->positionals();
    if (rest.size() == 1 && rest[0] == "states") return describe_states(*args);
    return usage_error("describe takes: states");
  }
  if (command == "bench") {
    const auto& rest = args->positionals();
    if (rest.size() == 1 && rest[0] == "store") return bench_store(*args);
    if (rest.size() == 1 && rest[0] == "chain") return bench_chain(*args);
    if (rest.size() == 1 && rest[0] == "fanout") return bench_fanout(*args);
    if (rest.size() == 1 && rest[0] == "idle") return bench_idle(*args);
    return usage_error(rest.empty() ? "bench needs a workload" : "unknown workload '" + rest[0] + "'");
  }
  return usage_error("unknown command '" + command + "'");
}

}  // namespace
}  // namespace troupe::cli

int main(int argc, char** argv) {
  return troupe::cli::run(std::vector<std::string>(argv + 1, argv + argc));
}
