// Drawing a schedule from its seed, playing it, and checking what it left.
#include "test/sim/sim_schedule.hpp"

#include <iostream>
#include <set>
#include <sstream>

#include "schema/definition.hpp"
#include "test/sim/sim_checks.hpp"

namespace troupe::sim {
namespace {

/// Faults fall within this much simulated time from the start.
constexpr Time faults_until = 30s;
/// Every workflow must have closed by then.
constexpr Time quiescence_limit = std::chrono::minutes(10);
/// After the last workflow closed, the simulation goes on this long: a late duplicate or a
/// stale report would still show in the histories.
constexpr Duration afterwards = 3s;

const char* kind_name(Fault::Kind kind) {
  switch (kind) {
    case Fault::CRASH_SCHEDULER: return "crash the scheduler";
    case Fault::CRASH_WORKER: return "crash worker";
    case Fault::DISCONNECT: return "disconnect worker";
    case Fault::HANG: return "half-open connection of worker";
    case Fault::STALL: return "stall the connection of worker";
    case Fault::HOLD_COMMITS: return "hold the store's commits";
  }
  return "?";
}

NetworkProfile draw_network(World& world) {
  NetworkProfile n;
  n.min_latency = world.between(50us, 500us);
  n.max_latency = n.min_latency + world.between(0us, 5ms);
  if (world.chance(0.3)) return n;  // a clean network: only faults from the fault list
  n.spike = world.real(0, 0.02);
  n.spike_max = world.between(100ms, 2s);
  n.reorder = world.chance(0.5) ? world.real(0, 0.05) : 0;
  n.duplicate = world.chance(0.5) ? world.real(0, 0.03) : 0;
  n.breaks = world.chance(0.5) ? world.real(0, 0.003) : 0;
  n.hangs = world.chance(0.3) ? world.real(0, 0.0005) : 0;
  return n;
}

Fault draw_fault(World& world, const std::vector<std::string>& shards) {
  Fault f;
  f.at = world.between(Time{0}, faults_until);
  f.shard = shards[static_cast<size_t>(world.integer(0, static_cast<int64_t>(shards.size()) - 1))];
  const auto roll = world.integer(0, 99);
  if (roll < 22) {
    f.kind = Fault::CRASH_SCHEDULER;
    f.length = world.between(100ms, 5s);
  } else if (roll < 40) {
    f.kind = Fault::CRASH_WORKER;
    f.length = world.between(100ms, 3s);
  } else if (roll < 58) {
    f.kind = Fault::DISCONNECT;
  } else if (roll < 68) {
    f.kind = Fault::HANG;
    f.length = world.chance(0.3) ? never : world.between(1s, 40s);
  } else if (roll < 84) {
    f.kind = Fault::STALL;
    f.length = world.between(500ms, 6s);
  } else {
    f.kind = Fault::HOLD_COMMITS;
    f.length = world.between(10ms, 1s);
  }
  return f;
}

void apply(World& world, Cluster& cluster, const Fault& f) {
  world.note("fault: " + f.describe());
  if (f.kind == Fault::CRASH_SCHEDULER) {
    cluster.crash_scheduler(f.length);
    return;
  }
  if (f.kind == Fault::CRASH_WORKER) {
    cluster.crash_worker(f.shard, f.length);
    return;
  }
  if (f.kind == Fault::HOLD_COMMITS) {
    if (cluster.scheduler() == nullptr) return;
    auto store = cluster.store();
    store->hold();
    // Released unless the scheduler died meanwhile: then what it waited for never comes.
    world.after(f.length, [&cluster, store] {
      if (cluster.store() == store && cluster.scheduler() != nullptr) store->release();
    });
    return;
  }
  auto worker = cluster.worker(f.shard);
  if (!worker || !worker->connection()) return;
  const auto& connection = worker->connection();
  switch (f.kind) {
    case Fault::DISCONNECT: connection->close("disconnected by the schedule"); break;
    case Fault::HANG: connection->hang(f.length); break;
    case Fault::STALL: connection->stall(world.now() + f.length); break;
    default: break;
  }
}

/// Sends std::cerr to a buffer for the lifetime of the guard.
class CaptureStderr {
 public:
  CaptureStderr() : saved_(std::cerr.rdbuf(buffer_.rdbuf())) {}
  ~CaptureStderr() { std::cerr.rdbuf(saved_); }
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* saved_;
};

/// The last `lines` lines of `text`.
std::string tail(const std::string& text, size_t lines) {
  size_t start = text.size();
  for (size_t n = 0; n <= lines; ++n) {
    if (start == 0) return text;
    start = text.rfind('\n', start - 1);
    if (start == std::string::npos) return text;
  }
  return text.substr(start + 1);
}

}  // namespace

std::string Fault::describe() const {
  std::string out = show(at) + " " + kind_name(kind);
  if (kind != CRASH_SCHEDULER && kind != HOLD_COMMITS) out += " " + shard;
  if (kind == HANG) return out + (length == never ? " (never noticed)" : " (noticed after " + show(length) + ")");
  if (kind != DISCONNECT) out += " for " + show(length);
  return out;
}

std::string Schedule::describe() const {
  std::ostringstream out;
  out << "schedule " << seed << ": lease " << show(options.scheduler.timeouts.lease) << ", kill grace "
      << show(options.scheduler.kill_grace) << ", workflow cache " << options.scheduler.workflow_cache
      << "\n  network: " << options.network.describe() << "\n  workers:";
  for (const auto& [shard, lists] : options.workers) {
    out << " " << shard << " {";
    for (const auto& [list, slots] : lists) out << " " << list << "=" << slots;
    out << " }";
  }
  out << "\n  faults:";
  if (faults.empty()) out << " none";
  for (const auto& f : faults) out << "\n    " << f.describe();
  out << "\n  workflows:";
  for (const auto& w : workload.workflows) out << "\n    " << w.describe();
  return out.str();
}

Schedule draw_schedule(World& world, uint64_t seed) {
  Schedule s;
  s.seed = seed;
  auto& timeouts = s.options.scheduler.timeouts;
  const Duration leases[] = {10s, 15s, 30s};
  timeouts.lease = leases[world.integer(0, 2)];
  s.options.scheduler.kill_grace = world.between(2s, 10s);
  if (world.chance(0.15)) s.options.scheduler.workflow_cache = 1;
  s.options.network = draw_network(world);
  const auto workers = world.integer(1, 3);
  std::set<std::string> lists{"jobs"};
  for (int64_t i = 1; i <= workers; ++i) {
    auto& served = s.options.workers["w" + std::to_string(i)];
    served["jobs"] = static_cast<uint32_t>(world.integer(1, 3));
    if (world.chance(0.3)) {
      served["other"] = static_cast<uint32_t>(world.integer(1, 2));
      lists.insert("other");
    }
  }
  s.workload = random_workload(world, static_cast<int>(world.integer(2, 4)),
                               std::vector<std::string>(lists.begin(), lists.end()));
  const auto faults = world.integer(0, 6);
  const auto shards = [&] {
    std::vector<std::string> out;
    for (const auto& [shard, served] : s.options.workers) out.push_back(shard);
    return out;
  }();
  for (int64_t i = 0; i < faults; ++i) s.faults.push_back(draw_fault(world, shards));
  return s;
}

ScheduleResult run_schedule(uint64_t seed) {
  CaptureStderr captured;
  World world(seed);
  const Schedule schedule = draw_schedule(world, seed);
  ScheduleResult result;
  {
    Cluster cluster(world, schedule.options, [&schedule](const actors::Invocation& invocation) {
      return schedule.workload.plan(invocation);
    });
    cluster.start();
    for (const auto& w : schedule.workload.workflows) {
      if (auto parsed = parse_definition(w.json()); !parsed) {
        result.problems.push_back(w.id + ": the test's definition is invalid: " + parsed.error().message);
      }
      cluster.submit(w.id, w.json());
    }
    for (const auto& f : schedule.faults) world.at(f.at, [&world, &cluster, f] { apply(world, cluster, f); });
    if (!world.run_until([&] { return cluster.all_closed(); }, quiescence_limit)) {
      std::string open;
      for (const auto& w : schedule.workload.workflows) {
        auto record = cluster.store()->find_workflow(w.id);
        const bool closed = record && *record && (*record)->status == storage::WorkflowStatus::CLOSED;
        if (!closed) open += " " + w.id + (cluster.acknowledged(w.id) ? "" : " (never acknowledged)");
      }
      result.problems.push_back("no quiescence: still open after " + show(world.now()) + ":" + open);
    } else {
      const Time until = world.now() + afterwards;
      world.run_until([] { return false; }, until);
    }
    result.ended = world.now();
    result.incarnations = cluster.incarnations();
    result.worker_processes = cluster.ledger().processes().size();
    result.runs = cluster.ledger().runs().size();
    const auto& n = schedule.options.network;
    bool clean = n.spike == 0 && n.reorder == 0 && n.duplicate == 0 && n.breaks == 0 && n.hangs == 0;
    for (const auto& f : schedule.faults) {
      if (f.kind == Fault::DISCONNECT || f.kind == Fault::HANG || f.kind == Fault::STALL) clean = false;
    }
    auto findings = check_schedule(schedule.workload, *cluster.store(), cluster.ledger(), clean,
                                   schedule.options.scheduler.timeouts);
    for (auto& p : findings.problems) result.problems.push_back(std::move(p));
    result.known = std::move(findings.known);
    result.counts = std::move(findings.counts);
    if (clean) result.counts["schedules on a clean network"] += 1;
    if (result.incarnations > 1) result.counts["scheduler restarts"] += result.incarnations - 1;
    if (result.worker_processes > schedule.options.workers.size()) {
      result.counts["worker restarts"] += result.worker_processes - schedule.options.workers.size();
    }
  }
  if (!result.problems.empty() || !result.known.empty()) {
    std::ostringstream report;
    report << schedule.describe() << "\n  problems:";
    for (const auto& p : result.problems) report << "\n    " << p;
    if (!result.known.empty()) report << "\n  known departures:";
    for (const auto& k : result.known) report << "\n    " << k;
    report << "\n  the simulation's trace (last " << world.trace().size() << " notes):";
    for (const auto& line : world.trace()) report << "\n    " << line;
    report << "\n  what the actors printed (the end):\n" << tail(captured.text(), 60);
    result.report = report.str();
  }
  return result;
}

}  // namespace troupe::sim
