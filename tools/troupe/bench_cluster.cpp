// CHAIN and FANOUT against a scheduler process and a worker process.
#include "tools/troupe/bench_cluster.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <thread>

#include "runtime/client/gateway_client.hpp"
#include "tools/troupe/bench_util.hpp"
#include "tools/troupe/node_process.hpp"

namespace troupe::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Bytes of the files under `dir`.
uint64_t disk_bytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

/// One scheduler and one worker, running until destroyed.
class BenchCluster {
 public:
  static Result<std::unique_ptr<BenchCluster>> start(const BenchClusterOptions& options, std::ostream& progress) {
    auto cluster = std::unique_ptr<BenchCluster>(new BenchCluster(options));
    std::error_code ec;
    fs::remove_all(options.directory, ec);
    fs::create_directories(options.directory, ec);
    if (ec) return fail(Errc::UNAVAILABLE, "cannot create '" + options.directory + "': " + ec.message());
    auto port = free_local_port();
    if (!port) return port.error();
    cluster->port_ = *port;
    if (auto written = cluster->write_config(); !written) return written.error();

    auto scheduler = cluster->start_node("scheduler");
    if (!scheduler) return scheduler.error();
    cluster->scheduler_ = std::make_unique<NodeProcess>(std::move(*scheduler));
    auto client = cluster->connect(20s);
    if (!client) return client.error();
    cluster->client_ = std::move(*client);
    auto worker = cluster->start_node("worker");
    if (!worker) return worker.error();
    cluster->worker_ = std::make_unique<NodeProcess>(std::move(*worker));
    // A first workflow runs once the worker has registered: the cluster is ready.
    const auto warm = Clock::now();
    auto started = cluster->client_->start(client::StartRequest{
        R"({"name": "warm-up", "tasks": [{"name": "t", "handler": "noop"}]})", "", "warm-up", ""});
    if (!started) return started.error();
    auto ended = cluster->client_->result("warm-up", 30s);
    if (!ended) return fail(ended.error().code, "the cluster did not run a first workflow: " + ended.error().message);
    if (ended->state != "SUCCESS") {
      return fail(Errc::INTERNAL, "the warm-up workflow ended " + ended->state + " " + ended->detail);
    }
    char line[160];
    std::snprintf(line, sizeof line, "  cluster up on 127.0.0.1:%u (scheduler pid %d, worker pid %d), first workflow in %.0f ms\n",
                  cluster->port_, cluster->scheduler_->pid(), cluster->worker_->pid(), ms_since(warm));
    progress << line;
    return cluster;
  }

  ~BenchCluster() {
    client_.reset();
    if (worker_) worker_->stop(10s);
    if (scheduler_) scheduler_->stop(10s);
  }

  client::GatewayClient& client() { return *client_; }
  const NodeProcess& scheduler() const { return *scheduler_; }
  const NodeProcess& worker() const { return *worker_; }
  std::string data_dir() const { return options_.directory + "/data"; }

  /// Reports that every node is still up, or which one is not (and where its log is).
  Result<void> check_alive() {
    for (auto* node : {scheduler_.get(), worker_.get()}) {
      if (node != nullptr && !node->running()) {
        const std::string name = node == scheduler_.get() ? "scheduler" : "worker";
        return fail(Errc::UNAVAILABLE, "the " + name + " node exited; see " + log_path(name));
      }
    }
    return ok();
  }

 private:
  explicit BenchCluster(BenchClusterOptions options) : options_(std::move(options)) {}

  std::string config_path() const { return options_.directory + "/cluster.toml"; }
  std::string log_path(const std::string& node) const { return options_.directory + "/" + node + ".log"; }

  Result<void> write_config() const {
    const std::string metrics = options_.metrics ? "metrics = \"127.0.0.1:0\"\n" : "";
    std::ofstream out(config_path());
    out << "# Written by troupe bench.\n[cluster]\nname = \"bench\"\nplaintext = true\n\n"
        << "[[node]]\nname = \"scheduler\"\nroles = [\"scheduler\"]\nlisten = \"127.0.0.1:" << port_ << "\"\n"
        << "data_dir = \"data\"\nsync = " << (options_.sync ? "true" : "false") << "\n" << metrics << "\n"
        << "[[node]]\nname = \"worker\"\nroles = [\"worker\"]\nscheduler = \"127.0.0.1:" << port_ << "\"\n"
        << "task_lists = { default = " << options_.worker_slots << " }\nlog_dir = \"logs\"\n" << metrics;
    out.close();
    if (!out) return fail(Errc::UNAVAILABLE, "cannot write '" + config_path() + "'");
    return ok();
  }

  Result<NodeProcess> start_node(const std::string& name) const {
    return NodeProcess::start({options_.node_binary, "--config", config_path(), "--node", name}, log_path(name));
  }

  /// Connects once the scheduler listens, polling with a deadline.
  Result<std::unique_ptr<client::GatewayClient>> connect(Duration within) {
    const auto deadline = Clock::now() + within;
    for (;;) {
      auto client = client::GatewayClient::connect("127.0.0.1", port_, {2s, {}, std::nullopt});
      if (client || Clock::now() > deadline) return client;
      if (auto alive = check_alive(); !alive) return alive.error();
      std::this_thread::sleep_for(20ms);
    }
  }

  BenchClusterOptions options_;
  uint16_t port_ = 0;
  std::unique_ptr<NodeProcess> scheduler_, worker_;
  std::unique_ptr<client::GatewayClient> client_;
};

std::string fanout_definition(int width) {
  std::string json = R"({"name": "fanout", "tasks": [{"name": "root", "handler": "noop"})";
  std::string all;
  for (int i = 1; i <= width; ++i) {
    const std::string name = "f" + std::to_string(i);
    json += R"(, {"name": ")" + name + R"(", "handler": "noop", "dependsOn": ["root"]})";
    all += (i > 1 ? R"(, ")" : R"(")") + name + R"(")";
  }
  return json + R"(, {"name": "join", "handler": "noop", "dependsOn": [)" + all + "]}]}";
}

/// CPU time the nodes use during a workload: the cost per task that wall time hides when the
/// machine is shared.
struct CpuMeter {
  explicit CpuMeter(const BenchCluster& measured)
      : cluster(measured),
        scheduler_start(measured.scheduler().cpu_seconds()),
        worker_start(measured.worker().cpu_seconds()) {}

  const BenchCluster& cluster;
  const double scheduler_start;
  const double worker_start;
  const StealMeter steal;

  double scheduler() const { return cluster.scheduler().cpu_seconds() - scheduler_start; }
  double worker() const { return cluster.worker().cpu_seconds() - worker_start; }

  void report(Json& out, double tasks, std::ostream& progress) const {
    out.set("scheduler_cpu_us_per_task", scheduler() * 1e6 / tasks);
    out.set("worker_cpu_us_per_task", worker() * 1e6 / tasks);
    out.set("cpu_steal_fraction", steal.fraction());
    char line[200];
    std::snprintf(line, sizeof line, "  CPU per task: scheduler %.0f us, worker %.0f us; CPU stolen by the hypervisor: %.0f%%\n",
                  scheduler() * 1e6 / tasks, worker() * 1e6 / tasks, steal.fraction() * 100);
    progress << line;
  }
};

void add_cluster_facts(Json& report, const BenchClusterOptions& options, BenchCluster& cluster) {
  report.set("worker_slots", options.worker_slots);
  report.set("metrics", options.metrics);
  report.set("scheduler_peak_rss_bytes", cluster.scheduler().peak_rss_bytes());
  report.set("worker_peak_rss_bytes", cluster.worker().peak_rss_bytes());
  report.set("history_disk_bytes", disk_bytes(cluster.data_dir()));
}

}  // namespace

Result<Json> run_cluster_chain_bench(const BenchClusterOptions& setup, const ClusterChainOptions& options,
                                     std::ostream& progress) {
  progress << "CHAIN (cluster): " << options.workflows << " workflows of " << options.tasks << " noop tasks, "
           << options.in_flight << " in flight, sync " << (setup.sync ? "on" : "off")
           << (setup.metrics ? ", metrics on" : "") << "\n";
  auto cluster = BenchCluster::start(setup, progress);
  if (!cluster) return cluster.error();
  auto& client = (*cluster)->client();
  const std::string definition = chain_definition(options.tasks);

  struct Run {
    std::vector<double> latencies_ms;
    int next = 0;
    int failed = 0;
    std::string first_error;
  } run;
  // Each in-flight slot starts a workflow, waits for its result, then starts the next.
  std::function<void()> launch = [&] {
    const std::string id = "chain-" + std::to_string(run.next++);
    const auto submitted = Clock::now();
    auto failed = [&run](const std::string& why) {
      if (run.failed++ == 0) run.first_error = why;
    };
    client.start_async(client::StartRequest{definition, "", id, ""}, [&, id, submitted, failed](Result<std::string> started) {
      if (!started) {
        failed(started.error().message);
        if (run.next < options.workflows) launch();
        return;
      }
      client.result_async(id, [&, submitted, failed](Result<client::WorkflowResult> ended) {
        if (!ended) {
          failed(ended.error().message);
        } else if (ended->state != "SUCCESS") {
          failed(ended->workflow_id + " ended " + ended->state + " " + ended->detail);
        } else {
          run.latencies_ms.push_back(ms_since(submitted));
        }
        if (run.next < options.workflows) launch();
      });
    });
  };
  const CpuMeter cpu(**cluster);
  const auto start = Clock::now();
  for (int c = 0; c < options.in_flight && run.next < options.workflows; ++c) launch();
  auto finished = client.run(std::chrono::minutes(30));
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (!finished) return finished.error();
  if (auto alive = (*cluster)->check_alive(); !alive) return alive.error();
  if (run.failed > 0) {
    return fail(Errc::INTERNAL, std::to_string(run.failed) + " workflows did not succeed; first: " + run.first_error);
  }
  std::sort(run.latencies_ms.begin(), run.latencies_ms.end());

  Json report = chain_report("cluster", options.workflows, options.tasks, options.in_flight, wall_s, run.latencies_ms);
  add_cluster_facts(report, setup, **cluster);
  cpu.report(report, double(options.workflows) * options.tasks, progress);
  char line[320];
  std::snprintf(line, sizeof line,
                "  %.2f s: %.0f workflows/s, %.0f tasks/s; latency p50 %.1f ms, p95 %.1f ms, p99 %.1f ms;"
                " peak RSS scheduler %.0f MiB, worker %.0f MiB\n",
                wall_s, options.workflows / wall_s, double(options.workflows) * options.tasks / wall_s,
                quantile(run.latencies_ms, 0.50), quantile(run.latencies_ms, 0.95), quantile(run.latencies_ms, 0.99),
                (*cluster)->scheduler().peak_rss_bytes() / 1048576.0, (*cluster)->worker().peak_rss_bytes() / 1048576.0);
  progress << line;
  return report;
}

Result<Json> run_cluster_fanout_bench(const BenchClusterOptions& setup, const ClusterFanoutOptions& options,
                                      std::ostream& progress) {
  progress << "FANOUT (cluster): " << options.runs << " runs of root -> " << options.width
           << " parallel noop tasks -> join, sync " << (setup.sync ? "on" : "off")
           << (setup.metrics ? ", metrics on" : "") << "\n";
  auto cluster = BenchCluster::start(setup, progress);
  if (!cluster) return cluster.error();
  auto& client = (*cluster)->client();
  const std::string definition = fanout_definition(options.width);
  std::vector<double> walls_ms;
  const CpuMeter cpu(**cluster);
  for (int r = 0; r < options.runs; ++r) {
    const std::string id = "fanout-" + std::to_string(r);
    const auto start = Clock::now();
    auto started = client.start(client::StartRequest{definition, "", id, ""});
    if (!started) return started.error();
    auto ended = client.result(id, std::chrono::minutes(5));
    if (!ended) return ended.error();
    if (ended->state != "SUCCESS") return fail(Errc::INTERNAL, id + " ended " + ended->state + " " + ended->detail);
    walls_ms.push_back(ms_since(start));
    char line[96];
    std::snprintf(line, sizeof line, "  run %d: %.1f ms\n", r + 1, walls_ms.back());
    progress << line;
  }
  if (auto alive = (*cluster)->check_alive(); !alive) return alive.error();
  double total_ms = 0;
  for (double w : walls_ms) total_ms += w;
  std::vector<double> sorted = walls_ms;
  std::sort(sorted.begin(), sorted.end());
  const double tasks_per_s = double(options.width + 2) * options.runs / (total_ms / 1000.0);

  Json report = Json::object();
  report.set("workload", "FANOUT");
  report.set("mode", "cluster");
  report.set("width", options.width);
  report.set("runs", options.runs);
  report.set("wall_ms_p50", quantile(sorted, 0.5));
  report.set("wall_ms_max", sorted.back());
  report.set("tasks_per_s", tasks_per_s);
  add_cluster_facts(report, setup, **cluster);
  cpu.report(report, double(options.width + 2) * options.runs, progress);
  char line[200];
  std::snprintf(line, sizeof line, "  per run p50 %.1f ms, max %.1f ms; %.0f tasks/s; peak RSS scheduler %.0f MiB\n",
                quantile(sorted, 0.5), sorted.back(), tasks_per_s,
                (*cluster)->scheduler().peak_rss_bytes() / 1048576.0);
  progress << line;
  return report;
}

}  // namespace troupe::cli
