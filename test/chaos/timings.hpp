// Every duration and count the chaos suite configures, in one place, and the seed that replays
// a run's fault schedule. Environment overrides are read here and nowhere else.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace troupe::chaos {

using Clock = std::chrono::system_clock;  ///< history timestamps are system time, so faults are too
using std::chrono::milliseconds;

/// Microseconds since the Unix epoch, the unit of history timestamps and ledger lines.
inline int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
      .count();
}

/// The cluster config's durations and the suite's limits.
struct Timings {
  /// `[cluster]` health keys: the defaults, since the detection limit is stated against them.
  std::string heartbeat_interval = "1s";
  std::string unhealthy_after = "2s";
  std::string must_die_after = "3s";
  /// `kill_grace`: a stopped or timed-out shell task has this long after SIGTERM.
  std::string kill_grace = "2s";
  int64_t kill_grace_us = 2'000'000;
  /// `worker_lease` and `recovery_window`; empty: the defaults (a 30 s lease, and a recovery
  /// window as long as the lease).
  std::string worker_lease;
  std::string recovery_window;
  /// More `[cluster]` lines (e.g. a worker lease once the config has one); also read from
  /// $TROUPE_CHAOS_CLUSTER_KEYS, which is appended to this.
  std::string extra_cluster_keys;

  /// A shell task's ledger tick period: the resolution of the overlap check.
  milliseconds tick{100};
  /// Worker death (kill -9) or silence (SIGSTOP) must be noticed within this, at p99.
  milliseconds detection_limit{3500};
  /// A detection not seen within this is counted as missed.
  milliseconds detection_give_up{15000};
  /// SIGTERM to a scheduler with workers connected: it must exit 0 within this.
  milliseconds sigterm_exit_limit{2000};
  /// How long the scheduler stays down in the outage scenario.
  milliseconds scheduler_outage{20000};
  /// How long a worker stays SIGSTOPped.
  milliseconds worker_stop{20000};
  /// After the faults end, acknowledged workflows have this long to end.
  milliseconds drain{180000};
  /// A client call unanswered this long is a hang: it is reported and the scheduler is
  /// SIGKILLed so the run can go on (and fail).
  milliseconds call_limit{20000};
  /// A service manager's delay before restarting a node that exited.
  milliseconds restart_delay{100};
  /// A run may outlive its workflow's end by at most kill_grace plus this.
  int64_t leak_slack_us = 1'000'000;
};

/// The suite's timings, with $TROUPE_CHAOS_CLUSTER_KEYS applied.
Timings chaos_timings();

/// The run's seed: $TROUPE_TEST_SEED, else a random one. Printed by every scenario.
uint64_t chaos_seed();

/// Scheduler kills in the kill loop: $TROUPE_CHAOS_KILLS, else `fallback` (30 in CI; 300 is the
/// soak).
int chaos_kills(int fallback);

}  // namespace troupe::chaos
