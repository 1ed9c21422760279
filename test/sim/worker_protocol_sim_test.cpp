// The worker protocol under a seeded simulation, FoundationDB style: the real scheduler actors
// (dispatcher, matching, worker, workflow and task actors on CAF's test coordinator) and
// simulated worker processes running the real WorkerState, over a network that delays, drops,
// duplicates and reorders calls, breaks and half-opens connections, with scheduler and worker
// crashes, all on simulated time. Each schedule ends with the invariants of sim_checks.hpp.
//
// TROUPE_TEST_SEED=N replays schedule N alone and prints its report; TROUPE_SIM_SCHEDULES sets
// how many schedules the sweep runs (seeds 1..N, from TROUPE_SIM_FIRST_SEED if set);
// TROUPE_SIM_STRICT=0 reports departures from the design that are known (Findings::known)
// without failing on them; there are none today.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test/sim/sim_schedule.hpp"

using namespace troupe;

namespace {

/// Seeds that once failed, each a test case for what it found.
const std::vector<uint64_t> regression_seeds = {
    // A worker instance declared MUST_DIE registered again (same instance, after a broken
    // connection) and counted that as a lease renewal, while the scheduler failed its running
    // invocation over at the lease from its last heartbeat: the retry could run beside it. Fixed
    // in the worker actor (a registration moves the lease on, as a heartbeat does).
    3283, 4571,
    // After a startToClose timeout the retry was dispatched after its backoff without waiting
    // for the timed-out invocation to stop, which a held commit (157), a stalled connection (272)
    // or a half-open one (293) kept running beside the next attempt. Fixed in the task actor (a
    // retry waits until the invocation it replaces is over).
    157, 272, 293,
    // That wait, for a revived task, must end even when the worker actor that held the
    // invocation as an orphan ends (it stalled: no quiescence).
    138,
    // A scheduler restart during an attempt re-armed its startToClose from the revival: a
    // designed timeout did not fire and the task succeeded. Fixed in the task actor (it counts
    // from the recorded dispatch, as without the restart).
    105, 641,
    // A revived task waiting for its last attempt's invocation to be over passivated, woke for
    // its due backoff, asked again and passivated again, without end in simulated time. Fixed
    // in the task actor (it is busy while it asks).
    812,
    // The checks' own mistakes, kept so they stay fixed: the process a dispatch went to is the
    // last one the scheduler had accepted, not the last one started.
    55, 1079, 9381,
};

/// Schedules a sweep runs unless TROUPE_SIM_SCHEDULES says otherwise: about 40 s of a debug
/// build on one core.
constexpr uint64_t default_schedules = 8000;

std::optional<uint64_t> env_number(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::strtoull(value, nullptr, 10);
}

bool strict() { return env_number("TROUPE_SIM_STRICT").value_or(1) != 0; }

/// Runs `seeds`; fails with the report of the first failing ones and every failing seed.
void run_seeds(const std::vector<uint64_t>& seeds, bool verbose) {
  std::vector<uint64_t> failed, departed;
  size_t reported = 0;
  sim::Time simulated{0};
  size_t incarnations = 0, processes = 0, runs = 0, known = 0;
  std::map<std::string, size_t> counts;
  const auto started = std::chrono::steady_clock::now();
  for (uint64_t seed : seeds) {
    auto result = sim::run_schedule(seed);
    simulated += result.ended;
    incarnations += result.incarnations;
    processes += result.worker_processes;
    runs += result.runs;
    known += result.known.size();
    for (const auto& [what, n] : result.counts) counts[what] += n;
    if (!result.known.empty()) departed.push_back(seed);
    const bool fails = !result.problems.empty() || (strict() && !result.known.empty());
    if (!fails) continue;
    failed.push_back(seed);
    if (reported++ < 3) std::cerr << "TROUPE_TEST_SEED=" << seed << "\n" << result.report << "\n\n";
  }
  const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (verbose || !failed.empty()) {
    std::cerr << seeds.size() << " schedules, " << failed.size() << " failed, " << sim::show(simulated)
              << " simulated in " << wall.count() << " ms; " << incarnations << " scheduler incarnations, " << processes
              << " worker processes, " << runs << " runs; " << known << " known departures in " << departed.size()
              << " schedules";
    for (size_t i = 0; i < departed.size() && i < 10; ++i) std::cerr << (i == 0 ? " (" : " ") << departed[i];
    std::cerr << (departed.empty() ? "" : departed.size() > 10 ? " ...)" : ")") << "\n ";
    for (const auto& [what, n] : counts) std::cerr << " " << what << ": " << n << ";";
    std::cerr << "\n";
  }
  std::string list;
  for (uint64_t seed : failed) list += " " + std::to_string(seed);
  CHECK_MESSAGE(failed.empty(), "failing seeds (replay one with TROUPE_TEST_SEED=N):" << list);
}

}  // namespace

TEST_SUITE("sim.worker_protocol") {
  TEST_CASE("seeds that once failed keep every invariant") {
    if (env_number("TROUPE_TEST_SEED")) return;  // a replay runs its one seed below
    run_seeds(regression_seeds, false);
  }

  TEST_CASE("thousands of seeded schedules of faults keep every invariant") {
    if (auto seed = env_number("TROUPE_TEST_SEED")) {
      auto result = sim::run_schedule(*seed);
      if (result.problems.empty()) {
        std::cerr << "schedule " << *seed << " keeps every invariant" << (result.known.empty() ? "" : ", but:\n")
                  << result.report << "\n";
      }
      CHECK_MESSAGE((result.problems.empty() && (!strict() || result.known.empty())),
                    "TROUPE_TEST_SEED=" << *seed << "\n" << result.report);
      return;
    }
    const uint64_t count = env_number("TROUPE_SIM_SCHEDULES").value_or(default_schedules);
    const uint64_t first = env_number("TROUPE_SIM_FIRST_SEED").value_or(1);
    std::vector<uint64_t> seeds;
    for (uint64_t s = first; s < first + count; ++s) seeds.push_back(s);
    run_seeds(seeds, true);
  }
}
