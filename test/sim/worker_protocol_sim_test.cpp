// The worker protocol under a seeded simulation, FoundationDB style: the real scheduler actors
// (dispatcher, matching, worker, workflow and task actors on CAF's test coordinator) and
// simulated worker processes running the real WorkerState, over a network that delays, drops,
// duplicates and reorders calls, breaks and half-opens connections, with scheduler and worker
// crashes, all on simulated time. Each schedule ends with the invariants of sim_checks.hpp.
//
// TROUPE_TEST_SEED=N replays schedule N alone and prints its report; TROUPE_SIM_SCHEDULES sets
// how many schedules the sweep runs (seeds 1..N, from TROUPE_SIM_FIRST_SEED if set).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "test/sim/sim_schedule.hpp"

using namespace troupe;

namespace {

/// Seeds that once failed, each a test case for what it found.
const std::vector<uint64_t> regression_seeds = {};

/// Schedules a sweep runs unless TROUPE_SIM_SCHEDULES says otherwise.
constexpr uint64_t default_schedules = 2000;

std::optional<uint64_t> env_number(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::strtoull(value, nullptr, 10);
}

/// Runs `seeds`; fails with the report of the first failing ones and every failing seed.
void run_seeds(const std::vector<uint64_t>& seeds, bool verbose) {
  std::vector<uint64_t> failed;
  size_t reported = 0;
  sim::Time simulated{0};
  size_t incarnations = 0, processes = 0, runs = 0;
  const auto started = std::chrono::steady_clock::now();
  for (uint64_t seed : seeds) {
    auto result = sim::run_schedule(seed);
    simulated += result.ended;
    incarnations += result.incarnations;
    processes += result.worker_processes;
    runs += result.runs;
    if (result.problems.empty()) continue;
    failed.push_back(seed);
    if (reported++ < 3) {
      std::cerr << "TROUPE_TEST_SEED=" << seed << "\n" << result.report << "\n\n";
    }
  }
  const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (verbose || !failed.empty()) {
    std::cerr << seeds.size() << " schedules, " << failed.size() << " failed, " << sim::show(simulated)
              << " simulated in " << wall.count() << " ms; " << incarnations << " scheduler incarnations, " << processes
              << " worker processes, " << runs << " runs\n";
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
      if (result.problems.empty()) std::cerr << "schedule " << *seed << " keeps every invariant\n";
      CHECK_MESSAGE(result.problems.empty(), "TROUPE_TEST_SEED=" << *seed << "\n" << result.report);
      return;
    }
    const uint64_t count = env_number("TROUPE_SIM_SCHEDULES").value_or(default_schedules);
    const uint64_t first = env_number("TROUPE_SIM_FIRST_SEED").value_or(1);
    std::vector<uint64_t> seeds;
    for (uint64_t s = first; s < first + count; ++s) seeds.push_back(s);
    run_seeds(seeds, true);
  }
}
