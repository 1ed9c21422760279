// One schedule of the simulation, all of it drawn from a seed: the cluster (workers, slots,
// timeouts, the network's behaviour), the workflows, and the faults at their times. Running
// it plays the faults against the real scheduler actors and simulated workers, waits for
// every workflow to close (quiescence) within a bound of simulated time, and checks the
// invariants (sim_checks.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "test/sim/sim_cluster.hpp"
#include "test/sim/sim_workload.hpp"

namespace troupe::sim {

struct Fault {
  enum Kind : uint8_t {
    CRASH_SCHEDULER,  ///< kill -9; the next incarnation starts after `length`
    CRASH_WORKER,     ///< kill -9 of `shard`'s process; a new one starts after `length`
    DISCONNECT,       ///< `shard`'s connection breaks
    HANG,             ///< `shard`'s connection goes half-open, noticed after `length` (or never)
    STALL,            ///< `shard`'s connection holds everything for `length`
    HOLD_COMMITS,     ///< the store's group commit takes `length`
  };
  Kind kind = CRASH_SCHEDULER;
  Time at{0};
  std::string shard;
  Duration length{0};

  std::string describe() const;
};

struct Schedule {
  uint64_t seed = 0;
  ClusterOptions options;
  Workload workload;
  std::vector<Fault> faults;

  std::string describe() const;
};

/// The schedule seed `seed` draws (from `world`, which the seed made).
Schedule draw_schedule(World& world, uint64_t seed);

struct ScheduleResult {
  std::vector<std::string> problems;  ///< empty when every invariant held
  std::vector<std::string> known;     ///< known departures (sim_checks.hpp Findings)
  std::map<std::string, size_t> counts;  ///< what happened, for coverage (Findings::counts)
  std::string report;                 ///< the schedule, the problems and the end of the trace
  Time ended{0};                      ///< simulated time at the end
  size_t incarnations = 0;
  size_t worker_processes = 0;
  size_t runs = 0;
};

/// Draws and runs schedule `seed`. What the actors print goes into the report, not to stderr.
ScheduleResult run_schedule(uint64_t seed);

}  // namespace troupe::sim
