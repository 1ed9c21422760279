// STORE: each appender thread appends one event at a time to its own workflow and waits for
// it to be durable, as an actor waiting on persist-then-act would. Throughput comes from the
// group commit sharing one sync among everyone waiting.
#include "tools/troupe/bench_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <filesystem>
#include <ostream>
#include <thread>

#include "storage/codec.hpp"
#include "storage/rocks_history_store.hpp"

namespace troupe::cli {
namespace {

using Clock = std::chrono::steady_clock;

/// An event whose stored (composed, packed) form is at least `bytes` long.
storage::NewEvent event_of_size(size_t bytes, size_t* stored_size) {
  for (size_t payload = bytes / 2;; payload += 4) {
    storage::NewEvent event;
    event.timestamp_us = 1'700'000'000'000'000;
    event.actor_kind = storage::ActorKind::TASK;
    event.actor_id = "task-1";
    event.attempt = 1;
    std::string result(payload, '\0');
    uint32_t x = 2463534242u;
    for (auto& c : result) {  // incompressible, like real results
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      c = static_cast<char>(x);
    }
    event.body = storage::make_body([&](schema::EventBody::Builder body) {
      auto succeeded = body.initTaskSucceeded();
      succeeded.setInvocationId("inv-00000001");
      succeeded.setResult(kj::arrayPtr(reinterpret_cast<const kj::byte*>(result.data()), result.size()));
    });
    auto composed = storage::compose_event(1, event);
    if (composed && composed->size() >= bytes) {
      *stored_size = composed->size();
      return event;
    }
  }
}

double percentile(std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t index = std::min(sorted.size() - 1, static_cast<size_t>(p * (sorted.size() - 1) + 0.5));
  return sorted[index];
}

struct RunFigures {
  int appenders = 0;
  uint64_t events = 0;
  double seconds = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
  storage::StoreStats stats;
};

/// A store in a fresh directory, removed with the directory when the run is over.
class ScratchStore {
 public:
  static Result<std::unique_ptr<ScratchStore>> open(const StoreBenchOptions& options,
                                                    const std::string& name) {
    const std::string dir = options.directory + "/" + name;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // a leftover of an interrupted run
    storage::StoreOptions store_options;
    store_options.sync = options.sync;
    auto store = storage::RocksHistoryStore::open(dir, store_options);
    if (!store) return store.error();
    return std::unique_ptr<ScratchStore>(new ScratchStore(dir, std::move(*store)));
  }
  ~ScratchStore() {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  storage::HistoryStore& store() { return *store_; }

 private:
  ScratchStore(std::string dir, std::unique_ptr<storage::RocksHistoryStore> store)
      : dir_(std::move(dir)), store_(std::move(store)) {}
  std::string dir_;
  std::unique_ptr<storage::RocksHistoryStore> store_;
};

/// Figures of a run from every appender's append latencies, in microseconds.
RunFigures summarise(int appenders, Clock::time_point start,
                     const std::vector<std::vector<uint32_t>>& latencies,
                     const storage::HistoryStore& store) {
  RunFigures figures;
  figures.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<uint32_t> all;
  for (const auto& mine : latencies) all.insert(all.end(), mine.begin(), mine.end());
  std::sort(all.begin(), all.end());
  figures.appenders = appenders;
  figures.events = all.size();
  figures.p50_us = percentile(all, 0.50);
  figures.p99_us = percentile(all, 0.99);
  figures.max_us = all.empty() ? 0 : all.back();
  figures.stats = store.stats();
  return figures;
}

uint32_t micros_since(Clock::time_point then) {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - then).count());
}

/// Submits the workflows bench-0 .. bench-(appenders - 1), untimed: a store begins a history
/// only with its submission.
Result<void> submit_workflows(storage::HistoryStore& store, int appenders) {
  storage::NewEvent submitted;
  submitted.body = storage::make_body([](schema::EventBody::Builder body) {
    body.initWorkflowSubmitted().setDefinitionJson("{}");
  });
  for (int t = 0; t < appenders; ++t) {
    auto receipt = store.append_wait("bench-" + std::to_string(t), {submitted});
    if (!receipt) return receipt.error();
  }
  return ok();
}

/// One OS thread per appender, each blocked in append_wait until its append is durable.
Result<RunFigures> run_blocking_threads(const StoreBenchOptions& options, int appenders,
                                        const storage::NewEvent& event) {
  auto scratch = ScratchStore::open(options, "threads-" + std::to_string(appenders));
  if (!scratch) return scratch.error();
  storage::HistoryStore& store = (*scratch)->store();
  if (auto submitted = submit_workflows(store, appenders); !submitted) return submitted.error();

  std::atomic<bool> failed{false};
  Error failure;
  std::vector<std::vector<uint32_t>> latencies(appenders);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(options.seconds);
  for (int t = 0; t < appenders; ++t) {
    threads.emplace_back([&, t] {
      const std::string workflow = "bench-" + std::to_string(t);
      auto& mine = latencies[t];
      mine.reserve(1 << 16);
      while (!failed.load(std::memory_order_relaxed)) {
        const auto before = Clock::now();
        if (before >= deadline) break;
        auto receipt = store.append_wait(workflow, {event});
        if (!receipt) {
          if (!failed.exchange(true)) failure = receipt.error();
          break;
        }
        mine.push_back(micros_since(before));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (failed) return failure;
  return summarise(appenders, start, latencies, store);
}

/// Each appender is a chain of appends rather than a blocked thread: the completion of one
/// append issues the next, as an actor persisting its next event would. This measures the
/// store itself rather than the cost of waking 64 OS threads.
Result<RunFigures> run_chained_appenders(const StoreBenchOptions& options, int appenders,
                                         const storage::NewEvent& event) {
  auto scratch = ScratchStore::open(options, "chained-" + std::to_string(appenders));
  if (!scratch) return scratch.error();
  storage::HistoryStore& store = (*scratch)->store();
  if (auto submitted = submit_workflows(store, appenders); !submitted) return submitted.error();

  std::vector<std::string> workflows(appenders);
  std::vector<Clock::time_point> issued(appenders);
  std::vector<std::vector<uint32_t>> latencies(appenders);
  std::mutex mutex;
  std::condition_variable all_done;
  int running = appenders;
  std::atomic<bool> failed{false};
  Error failure;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(options.seconds);

  // Runs on the store's writer thread for every completion after the first issue.
  std::function<void(int)> issue = [&](int i) {
    issued[i] = Clock::now();
    store.append(workflows[i], {event}, std::nullopt, [&, i](Result<storage::AppendReceipt> r) {
      if (!r) {
        if (!failed.exchange(true)) failure = r.error();
      } else {
        latencies[i].push_back(micros_since(issued[i]));
      }
      if (r && Clock::now() < deadline && !failed) return issue(i);
      std::lock_guard lock(mutex);
      if (--running == 0) all_done.notify_all();
    });
  };
  for (int i = 0; i < appenders; ++i) {
    workflows[i] = "bench-" + std::to_string(i);
    latencies[i].reserve(1 << 16);
    issue(i);
  }
  {
    std::unique_lock lock(mutex);
    all_done.wait(lock, [&] { return running == 0; });
  }
  if (failed) return failure;
  return summarise(appenders, start, latencies, store);
}

/// Single 4 KiB writes each followed by fdatasync, for `seconds`. `append` grows the file
/// as a log does (each sync also commits the new size); otherwise one block is rewritten in
/// place (data only, the cheapest durable write there is).
Result<double> raw_fdatasync_rate(const std::string& directory, double seconds, bool append) {
  const std::string path = directory + (append ? "/raw-append" : "/raw-overwrite");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return fail(Errc::UNAVAILABLE, "cannot create '" + path + "': " + std::strerror(errno));
  }
  std::string block(4096, 'r');
  uint64_t syncs = 0;
  off_t offset = 0;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  Result<double> outcome = 0.0;
  while (Clock::now() < deadline) {
    if (::pwrite(fd, block.data(), block.size(), offset) != static_cast<ssize_t>(block.size()) ||
        ::fdatasync(fd) != 0) {
      outcome = fail(Errc::INTERNAL, "raw write+fdatasync on '" + path + "' failed: " +
                                         std::strerror(errno));
      break;
    }
    if (append) offset += static_cast<off_t>(block.size());
    ++syncs;
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(fd);
  ::unlink(path.c_str());
  if (!outcome) return outcome;
  return syncs / elapsed;
}

}  // namespace

namespace {

Json run_json(const RunFigures& run) {
  Json one = Json::object();
  one.set("appenders", run.appenders);
  one.set("events", run.events);
  one.set("events_per_s", run.events / run.seconds);
  one.set("append_p50_us", run.p50_us);
  one.set("append_p99_us", run.p99_us);
  one.set("append_max_us", run.max_us);
  one.set("batches", run.stats.batches);
  one.set("mean_batch", run.stats.batches ? double(run.stats.operations) / run.stats.batches : 0.0);
  one.set("largest_batch", run.stats.largest_batch);
  one.set("bytes_written", run.stats.bytes_written);
  return one;
}

void print_row(std::ostream& out, const char* mode, const RunFigures& run) {
  char line[160];
  std::snprintf(line, sizeof line, "  %-8s %9d  %9.0f  %7.0f  %7.0f  %10.1f\n", mode, run.appenders,
                run.events / run.seconds, run.p50_us, run.p99_us,
                run.stats.batches ? double(run.stats.operations) / run.stats.batches : 0.0);
  out << line;
}

}  // namespace

Result<Json> run_store_bench(const StoreBenchOptions& options, std::ostream& progress) {
  std::error_code ec;
  std::filesystem::create_directories(options.directory, ec);
  if (ec) {
    return fail(Errc::UNAVAILABLE,
                "cannot create bench directory '" + options.directory + "': " + ec.message());
  }
  size_t stored_size = 0;
  const auto event = event_of_size(options.event_bytes, &stored_size);

  progress << "STORE: " << options.seconds << " s per run, events of " << stored_size
           << " bytes, sync " << (options.sync ? "on" : "off") << "\n";
  std::vector<RunFigures> chained, threads;
  for (int appenders : options.appenders) {
    progress << "  " << appenders << " appenders: chained ..." << std::flush;
    auto c = run_chained_appenders(options, appenders, event);
    if (!c) return c.error();
    progress << " " << static_cast<uint64_t>(c->events / c->seconds) << " events/s; threads ..."
             << std::flush;
    auto t = run_blocking_threads(options, appenders, event);
    if (!t) return t.error();
    progress << " " << static_cast<uint64_t>(t->events / t->seconds) << " events/s\n";
    chained.push_back(*c);
    threads.push_back(*t);
  }
  progress << "  raw 4 KiB write+fdatasync ..." << std::flush;
  auto raw_append = raw_fdatasync_rate(options.directory, options.seconds, true);
  if (!raw_append) return raw_append.error();
  auto raw_overwrite = raw_fdatasync_rate(options.directory, options.seconds, false);
  if (!raw_overwrite) return raw_overwrite.error();
  // Compare against the faster of the two: the best a single writer could do without batching.
  const double raw = std::max(*raw_append, *raw_overwrite);
  progress << " " << static_cast<uint64_t>(raw) << " syncs/s\n";

  Json report = Json::object();
  report.set("workload", "STORE");
  report.set("event_bytes", static_cast<uint64_t>(stored_size));
  report.set("seconds_per_run", options.seconds);
  Json per_t = Json::object();
  Json per_t_threads = Json::object();
  for (size_t i = 0; i < chained.size(); ++i) {
    per_t.set(std::to_string(chained[i].appenders), chained[i].events / chained[i].seconds);
    per_t_threads.set(std::to_string(threads[i].appenders), threads[i].events / threads[i].seconds);
  }
  const auto& widest = chained.back();
  const auto& widest_threads = threads.back();
  const std::string t = std::to_string(widest.appenders);
  report.set("events_per_s", std::move(per_t));
  report.set("events_per_s_blocking_threads", std::move(per_t_threads));
  report.set("raw_fdatasync_per_s", raw);
  report.set("raw_fdatasync_append_per_s", *raw_append);
  report.set("raw_fdatasync_overwrite_per_s", *raw_overwrite);
  report.set("ratio_T" + t + "_to_raw", raw > 0 ? widest.events / widest.seconds / raw : 0.0);
  report.set("ratio_T" + t + "_blocking_threads_to_raw",
             raw > 0 ? widest_threads.events / widest_threads.seconds / raw : 0.0);
  Json runs = Json::array();
  for (const auto& run : chained) runs.push(run_json(run).set("mode", "chained"));
  for (const auto& run : threads) runs.push(run_json(run).set("mode", "blocking_threads"));
  report.set("runs", std::move(runs));

  progress << "\n  mode     appenders   events/s   p50 us   p99 us  mean batch\n";
  for (const auto& run : chained) print_row(progress, "chained", run);
  for (const auto& run : threads) print_row(progress, "threads", run);
  char line[200];
  std::snprintf(line, sizeof line,
                "  raw fdatasync/s: %.0f (append %.0f, overwrite %.0f); T=%d / raw = %.1fx "
                "(blocking threads %.1fx)\n",
                raw, *raw_append, *raw_overwrite, widest.appenders,
                raw > 0 ? widest.events / widest.seconds / raw : 0.0,
                raw > 0 ? widest_threads.events / widest_threads.seconds / raw : 0.0);
  progress << line;
  return report;
}

}  // namespace troupe::cli
