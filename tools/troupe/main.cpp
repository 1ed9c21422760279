// The troupe command line. Thin: parse, call the layer that does the work, turn its Result
// into a stderr line and an exit code (0 ok, 1 failed, 2 usage or input error).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "actors/task/task_machine.hpp"
#include "actors/worker/health_machine.hpp"
#include "actors/workflow/workflow_machine.hpp"
#include "tools/troupe/args.hpp"
#include "tools/troupe/bench_inprocess.hpp"
#include "tools/troupe/bench_store.hpp"
#include "tools/troupe/version.hpp"

namespace troupe::cli {
namespace {

constexpr const char* usage = R"(usage: troupe COMMAND [ARGS]

commands:
  bench store   the STORE workload: durable 200-byte appends through the history store
                from 1, 8 and 64 concurrent appenders, against the raw fdatasync rate.
                  --seconds S        length of each run (default 10)
                  --appenders LIST   appender counts (default 1,8,64)
                  --dir DIR          where the stores go (default ./.troupe/bench-PID, removed after)
                  --sync BOOL        sync every commit (default true)
                  --event-bytes N    stored size of each event (default 200)
                prints one JSON object on stdout and a table on stderr
  bench chain   the CHAIN workload on the in-process actor core (local executor, durable
                RocksDB history, no RPC): W workflows of K chained noop tasks, C in flight
                  --workflows W (5000)  --tasks K (10)  --in-flight C (64)  --dir DIR  --sync BOOL
  bench idle    the IDLE workload in-process: A workflows whose task sleeps 10 minutes;
                RSS per running workflow and start rate
                  --workflows A (100000)  --dir DIR  --sync BOOL
  describe states [--format markdown|dot]
                the workflow, task and worker health state machines: every transition with
                its actions (Markdown, the default) or as Graphviz graphs (dot)
  version       the build's git revision and type
  help          this text
)";

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

int bench_chain(const Args& args) {
  if (auto known = args.only({"workflows", "tasks", "in-flight", "dir", "sync"}); !known) {
    return usage_error(known.error().message);
  }
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
  return report_or_fail(run_chain_bench(options, std::cerr), options.sync);
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

int run(const std::vector<std::string>& words) {
  if (words.empty() || words[0] == "help" || words[0] == "--help" || words[0] == "-h") {
    std::cout << usage;
    return words.empty() ? 2 : 0;
  }
  auto args = Args::parse({words.begin() + 1, words.end()});
  if (!args) return usage_error(args.error().message);
  const std::string& command = words[0];
  if (command == "version" || command == "--version") {
    std::cout << "troupe " << git_revision() << " (" << build_type() << ")\n";
    return 0;
  }
  if (command == "describe") {
    const auto& rest = args->positionals();
    if (rest.size() == 1 && rest[0] == "states") return describe_states(*args);
    return usage_error("describe takes: states");
  }
  if (command == "bench") {
    const auto& rest = args->positionals();
    if (rest.size() == 1 && rest[0] == "store") return bench_store(*args);
    if (rest.size() == 1 && rest[0] == "chain") return bench_chain(*args);
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
