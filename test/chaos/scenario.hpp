// One chaos scenario: a seeded fault schedule against a ChaosCluster while the Workload's
// clients submit and control workflows; then every acknowledged workflow's history, the ledger
// and the cluster's record are checked, one line of figures is printed, and each kind of
// problem fails its own CHECK with the seed and enough detail to debug it.
//
// What is checked (see README.md for the reasoning):
//  - ends: every acknowledged workflow (its start was answered) exists, is in the scheduler's
//    index, and ended as designed (SUCCESS unless made to fail, with the designed reason, or
//    stopped); its result, describe, index entry and history agree;
//  - histories: gap-free, one end per invocation, nothing after the end (history_check.hpp);
//  - ledger: every run belongs to an invocation its history dispatched, no invocation ran in
//    two processes, every succeeded shell invocation has a run that wrote its end line;
//  - overlaps: no two runs of one task at once (ledger.hpp);
//  - re-runs: every re-run has a recorded reason; in scenarios that fault only the scheduler,
//    every re-run is one the workload designed (a scheduler failure alone consumes no attempt);
//  - leaks: no run writes to the ledger later than kill_grace + 1 s after its workflow closed
//    (later still only while its worker was frozen), and no task process is left once every
//    worker has stopped;
//  - detection: every worker fault is noticed within Timings::detection_limit at p99;
//  - the cluster: no hung client call, no unplanned scheduler exit, and what the scenario adds.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "test/chaos/ledger.hpp"
#include "test/chaos/nodes.hpp"
#include "test/chaos/timings.hpp"
#include "test/chaos/workload.hpp"

namespace troupe::chaos {

struct ScenarioOptions {
  std::string name;    ///< the suite's last part, e.g. "scheduler_kills"
  std::string prefix;  ///< workflow ids start with it
  Mix mix;
  int clients = 2;
  int in_flight = 6;  ///< per client
  std::vector<WorkerSpec> workers = {{"w1", 4}, {"w2", 4}, {"w3", 4}};
  /// Only the scheduler is faulted: a re-run the workload did not design is a failure.
  bool scheduler_only = true;
  /// Workers must never exit on their own (the scheduler outage).
  bool workers_must_survive = false;
  /// The scheduler may exit on its own with a non-zero code (not a signal), e.g. on a full disk.
  bool scheduler_may_exit = false;
  /// The scheduler's data_dir, relative to the scenario's directory.
  std::string data_dir = "data";
  /// Fewer acknowledged workflows than this means the workload did not run: a failure.
  int min_acknowledged = 20;
};

/// A fault injected on a worker and when the scheduler noticed it.
struct WorkerFault {
  std::string worker;
  std::string kind;  ///< "kill" (SIGKILL) or "stop" (SIGSTOP, later SIGCONT)
  pid_t pid = 0;
  int64_t at_us = 0;        ///< just before kill(2)
  int64_t resumed_us = 0;   ///< SIGCONT (stop), or the restart (kill)
  int64_t detected_us = 0;  ///< 0: not seen
  std::string detected_by;
};

class Scenario {
 public:
  explicit Scenario(ScenarioOptions options);
  ~Scenario();
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;

  /// Starts the cluster and the clients.
  void start();

  ChaosCluster& cluster() { return *cluster_; }
  const Timings& timings() const { return timings_; }
  uint64_t seed() const { return seed_; }
  /// The fault schedule's generator: the same seed gives the same schedule.
  std::mt19937_64& faults() { return faults_; }
  /// A delay in the fault schedule.
  static void pause_for(milliseconds delay);
  /// A uniformly drawn delay from the fault schedule.
  milliseconds draw(milliseconds low, milliseconds high);
  /// One of `candidates`, drawn from the fault schedule.
  std::string pick(const std::vector<std::string>& candidates);

  /// Every run in the ledger so far.
  std::vector<Run> runs() const;
  /// Ledger runs that wrote a line within the last `window_us`, and none at their end.
  std::vector<Run> live_runs(int64_t window_us = 300'000) const;
  /// Waits up to `timeout` until `worker` runs a ledger task that is live and started at least
  /// `min_age` ago.
  bool wait_for_live_run(const std::string& worker, milliseconds timeout,
                         milliseconds min_age = milliseconds(500));

  /// Records a worker fault; returns its index.
  size_t record(WorkerFault fault);
  /// Waits until the scheduler says the worker of fault `index` is lost (at most
  /// Timings::detection_give_up); how long that took after the fault (0 if not seen).
  int64_t wait_detected(size_t index);
  /// The directory the scenario's files (config, data, logs, ledger) are in.
  const std::string& dir() const { return dir_; }
  /// The worker's SIGCONT (a stop) or restart (a kill) of the last fault on `worker`.
  void resumed(const std::string& worker, int64_t at_us);

  /// Runs whose invocations must end by their worker's own report (taken back after a
  /// scheduler outage): not failed over, not timed out. Checked by finish_and_check().
  void expect_taken_back(std::vector<Run> runs) { taken_back_ = std::move(runs); }

  /// A problem the scenario found itself (a scheduler that did not exit 0 on SIGTERM, ...).
  void problem(const std::string& category, const std::string& detail);
  /// A figure of the scenario's own for the figures line.
  void figure(const std::string& key, const std::string& value);
  void count(const std::string& key, int n = 1) { counts_[key] += n; }

  /// Ends the workload (waiting up to Timings::drain for acknowledged workflows to end), reads
  /// histories and the ledger, stops the cluster, runs every check, prints the figures line
  /// and the report, and fails one CHECK per kind of problem.
  void finish_and_check();

 private:
  ScenarioOptions options_;
  Timings timings_;
  uint64_t seed_;
  std::mt19937_64 faults_;
  std::string dir_;
  std::string ledger_, tokens_;
  mutable std::unique_ptr<LedgerReader> reader_;  ///< the ledger as it grows (fault scheduling)
  std::unique_ptr<ChaosCluster> cluster_;
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<Workload> workload_;
  std::vector<WorkerFault> worker_faults_;
  std::vector<Run> taken_back_;
  std::vector<std::string> schedule_;  ///< every draw, in order, for the failure report
  std::map<std::string, std::vector<std::string>> problems_;
  std::vector<std::pair<std::string, std::string>> figures_;
  std::map<std::string, int> counts_;
  int64_t started_us_ = 0;
  bool finished_ = false;
};

/// Nearest-rank percentile of `values` (p in 0..100); 0 for none. With fewer than 100
/// values, p99 is the largest.
int64_t percentile(std::vector<int64_t> values, double p);

}  // namespace troupe::chaos
