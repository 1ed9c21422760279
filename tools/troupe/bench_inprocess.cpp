// CHAIN and IDLE against the in-process actor core: a directory, workflow and task actors, the
// local executor, and a RocksDB history store with group commit, all in this process.
#include "tools/troupe/bench_inprocess.hpp"

#include <malloc.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <ostream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/executor/local_executor.hpp"
#include "actors/system/directory.hpp"
#include "actors/system/history_writer.hpp"
#include "schema/history.capnp.h"
#include "storage/codec.hpp"
#include "storage/rocks_history_store.hpp"
#include "tools/troupe/bench_util.hpp"
#include "schema/duration.hpp"

namespace troupe::cli {
namespace {

using Clock = std::chrono::steady_clock;
using namespace troupe::actors;

/// Everything a scheduler-and-worker process runs, in one place for the benchmarks.
struct InProcessRuntime {
  std::shared_ptr<storage::RocksHistoryStore> store;
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  Wiring wiring;
  directory_actor directory;

  static Result<std::unique_ptr<InProcessRuntime>> start(const std::string& dir, bool sync) {
    auto runtime = std::make_unique<InProcessRuntime>();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    storage::StoreOptions options;
    options.sync = sync;
    auto store = storage::RocksHistoryStore::open(dir, options);
    if (!store) return store.error();
    runtime->store = std::move(*store);
    runtime->config.set("logger.file-verbosity", caf::atom("quiet"));
    // As on a node (runtime/node.cpp): a shared queue, threads that sleep, one per core but one.
    const unsigned cores = std::thread::hardware_concurrency();
    runtime->config.set("scheduler.policy", caf::atom("sharing"));
    runtime->config.set("scheduler.max-threads", static_cast<size_t>(cores > 1 ? cores - 1 : 1));
    runtime->system = std::make_unique<caf::actor_system>(runtime->config);
    auto handlers = std::make_shared<const HandlerRegistry>(HandlerRegistry::with_builtins());
    runtime->wiring.definitions = std::make_shared<DefinitionCache>();
    runtime->wiring.writer = HistoryWriter(runtime->store);
    runtime->wiring.executor = spawn_local_executor(*runtime->system, handlers);
    runtime->wiring.now_us = wall_clock_us;
    runtime->directory = spawn_directory(*runtime->system, runtime->store, runtime->wiring);
    return runtime;
  }

  ~InProcessRuntime() {
    if (!system) return;
    {
      caf::scoped_actor self(*system, true);  // hidden: it must not count as running below
      // The directory ends its workflows, and they their linked tasks: one exit ends all.
      self->send_exit(directory, caf::exit_reason::user_shutdown);
      self->send_exit(wiring.executor, caf::exit_reason::user_shutdown);
    }
    system->await_all_actors_done();
  }
};

}  // namespace

Result<Json> run_chain_bench(const ChainBenchOptions& options, std::ostream& progress) {
  auto runtime = InProcessRuntime::start(options.directory + "/chain", options.sync);
  if (!runtime) return runtime.error();
  const std::string json = chain_definition(options.tasks);
  progress << "CHAIN (in-process): " << options.workflows << " workflows of " << options.tasks
           << " noop tasks, " << options.in_flight << " in flight, sync "
           << (options.sync ? "on" : "off") << "\n";

  struct Stats {
    std::vector<double> latencies_ms;
    int finished = 0;
    int failed = 0;
    std::string first_error;
  };
  auto stats = std::make_shared<Stats>();
  std::promise<void> all_done;
  auto done_future = all_done.get_future();
  const StealMeter steal;
  const auto start = Clock::now();
  auto directory = (*runtime)->directory;
  const int total = options.workflows;

  // The stats travel as an argument: CAF 0.17 spawns argument-less functions through a null
  // tuple (undefined behaviour).
  (*runtime)->system->spawn([=, &all_done](caf::event_based_actor* self, std::shared_ptr<Stats>) {
    auto next = std::make_shared<int>(0);
    auto launch = std::make_shared<std::function<void()>>();
    auto finish_one = [=, &all_done](bool ok, const std::string& error) {
      ++stats->finished;
      if (!ok) {
        ++stats->failed;
        if (stats->first_error.empty()) stats->first_error = error;
      }
      if (*next < total) {
        (*launch)();
      } else if (stats->finished == total) {
        all_done.set_value();
      }
    };
    *launch = [=]() {
      const std::string id = "chain-" + std::to_string((*next)++);
      const auto submitted = Clock::now();
      self->request(directory, caf::infinite, submit_atom::value, id, json, std::string("{}"), std::string())
          .then([](const std::string&) {}, [](const caf::error&) {});  // the result says it all
      self->request(directory, caf::infinite, result_atom::value, id)
          .then(
              [=](const WorkflowOutcome& outcome) {
                stats->latencies_ms.push_back(
                    std::chrono::duration<double, std::milli>(Clock::now() - submitted).count());
                finish_one(outcome.state == "SUCCESS", "workflow ended " + outcome.state);
              },
              [=](const caf::error& error) { finish_one(false, from_caf(error).message); });
    };
    for (int c = 0; c < options.in_flight && *next < total; ++c) (*launch)();
  }, stats);
  done_future.wait();
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (stats->failed > 0) {
    return fail(Errc::INTERNAL, std::to_string(stats->failed) + " workflows did not succeed; first: " +
                                    stats->first_error);
  }
  std::sort(stats->latencies_ms.begin(), stats->latencies_ms.end());
  const auto store_stats = (*runtime)->store->stats();

  Json report = chain_report("in-process", options.workflows, options.tasks, options.in_flight, wall_s,
                             stats->latencies_ms);
  report.set("process_peak_rss_bytes", peak_rss_bytes());
  report.set("cpu_steal_fraction", steal.fraction());
  report.set("history_bytes_written", store_stats.bytes_written);
  report.set("history_events", store_stats.events);
  report.set("group_commits", store_stats.batches);
  report.set("mean_batch", store_stats.batches ? double(store_stats.operations) / store_stats.batches : 0.0);

  char line[256];
  std::snprintf(line, sizeof line,
                "  %.2f s: %.0f workflows/s, %.0f tasks/s; latency p50 %.1f ms, p95 %.1f ms, p99 %.1f ms;"
                " %llu events in %llu group commits; peak RSS %.0f MiB\n",
                wall_s, options.workflows / wall_s, double(options.workflows) * options.tasks / wall_s,
                quantile(stats->latencies_ms, 0.50), quantile(stats->latencies_ms, 0.95),
                quantile(stats->latencies_ms, 0.99), static_cast<unsigned long long>(store_stats.events),
                static_cast<unsigned long long>(store_stats.batches), peak_rss_bytes() / 1048576.0);
  progress << line;
  return report;
}

/// Which of the IDLE workflows ("idle-0" ...) have a taskRunning event in their history. Each
/// workflow's history is read on from where the previous poll stopped, and a workflow seen
/// running is not read again, so a poll costs one store read per workflow still starting.
class RunningWatch {
 public:
  RunningWatch(storage::HistoryStore& store, int workflows) : store_(store), next_sequence_(workflows, 1) {
    for (int i = 0; i < workflows; ++i) pending_.push_back(i);
  }

  /// How many workflows are not running yet.
  Result<size_t> poll() {
    std::vector<int> still;
    for (int index : pending_) {
      auto seen = reached_running(index);
      if (!seen) return seen.error();
      if (!*seen) still.push_back(index);
    }
    pending_.swap(still);
    return pending_.size();
  }

 private:
  Result<bool> reached_running(int index) {
    auto page = store_.read("idle-" + std::to_string(index), next_sequence_[index], 64);
    if (!page) return page.error();
    for (const auto& stored : *page) {
      next_sequence_[index] = stored.sequence + 1;
      auto decoded = storage::DecodedEvent::decode(stored.packed);
      if (!decoded) return decoded.error();
      if (decoded->get().getBody().isTaskRunning()) return true;
    }
    return false;
  }

  storage::HistoryStore& store_;
  std::vector<uint64_t> next_sequence_;
  std::vector<int> pending_;
};

Result<Json> run_idle_bench(const IdleBenchOptions& options, std::ostream& progress) {
  auto runtime = InProcessRuntime::start(options.directory + "/idle", options.sync);
  if (!runtime) return runtime.error();
  const std::string json =
      R"({"name": "idle", "tasks": [{"name": "wait", "handler": "sleep", "input": {"duration": "10m"}}]})";
  progress << "IDLE (in-process): " << options.workflows << " workflows, each a task sleeping 10 minutes\n";
  const uint64_t rss_before = rss_bytes();
  const StealMeter steal;
  const auto start = Clock::now();
  {
    caf::scoped_actor self(*(*runtime)->system);
    constexpr int window = 512;  // submissions awaiting their acknowledgement
    int acknowledged = 0, sent = 0;
    std::string error;
    while (acknowledged < options.workflows && error.empty()) {
      while (sent < options.workflows && sent - acknowledged < window) {
        // A plain send: the reply comes back as an ordinary message for the receive below.
        self->send((*runtime)->directory, submit_atom::value, "idle-" + std::to_string(sent++), json,
                   std::string("{}"), std::string());
      }
      self->receive([&](const std::string&) { ++acknowledged; },
                    [&](const caf::error& e) {
                      ++acknowledged;
                      error = from_caf(e).message;
                    });
    }
    if (!error.empty()) return fail(Errc::INTERNAL, "a submission failed: " + error);
  }
  // Poll (with a deadline) until every workflow's history records its task RUNNING: read from
  // the store, as a client's status would, rather than counting events, whose number per
  // workflow is the dispatch path's business.
  RunningWatch running(*(*runtime)->store, options.workflows);
  const auto deadline = Clock::now() + std::chrono::minutes(10);
  for (;;) {
    auto pending = running.poll();
    if (!pending) return pending.error();
    if (*pending == 0) break;
    if (Clock::now() > deadline) {
      return fail(Errc::TIMED_OUT, std::to_string(*pending) + " of the workflows did not reach RUNNING in 10 minutes");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const double start_s = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t rss_after = rss_bytes();
  const double per_workflow = rss_after > rss_before ? double(rss_after - rss_before) / options.workflows : 0.0;
  // The start burst leaves freed message buffers in malloc's arenas; a scheduler that runs on
  // reuses them. Returning them to the system shows what the running workflows themselves hold.
  malloc_trim(0);
  const uint64_t rss_steady = rss_bytes();
  const double per_workflow_steady =
      rss_steady > rss_before ? double(rss_steady - rss_before) / options.workflows : 0.0;

  Json report = Json::object();
  report.set("workload", "IDLE");
  report.set("mode", "in-process");
  report.set("workflows", options.workflows);
  report.set("bytes_per_running_workflow", per_workflow);
  report.set("bytes_per_running_workflow_after_trim", per_workflow_steady);
  report.set("start_rate_per_s", options.workflows / start_s);
  report.set("rss_before_bytes", rss_before);
  report.set("rss_running_bytes", rss_after);
  report.set("rss_running_after_trim_bytes", rss_steady);
  report.set("process_peak_rss_bytes", peak_rss_bytes());
  report.set("cpu_steal_fraction", steal.fraction());
  char line[256];
  std::snprintf(line, sizeof line,
                "  all %d running after %.1f s (%.0f/s); RSS %.0f -> %.0f MiB: %.0f bytes per running "
                "workflow (%.0f after returning freed memory)\n",
                options.workflows, start_s, options.workflows / start_s, rss_before / 1048576.0,
                rss_after / 1048576.0, per_workflow, per_workflow_steady);
  progress << line;
  return report;
}

}  // namespace troupe::cli
