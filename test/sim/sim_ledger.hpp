// What really happened on the simulated workers, whatever the scheduler believes: every run of
// an invocation (which process, from when to when, how it ended) and every worker process (when
// it started and died). The invariants about overlap and attempts are checked against it.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "test/sim/sim_world.hpp"

namespace troupe::sim {

struct RunRecord {
  std::string invocation;
  std::string shard;
  std::string instance;
  Time start{0};
  Time end = never;  ///< never while it runs
  std::string how;   ///< "succeeded", "failed:REASON", "cancelled", "killed:WHY"
};

struct ProcessRecord {
  std::string shard;
  std::string instance;
  Time started{0};
  Time registered = never;  ///< when the scheduler first accepted its registration
  Time died = never;
  std::string why;  ///< why it died
  Time lease_ran_out = never;  ///< when its keepers found its lease run out (they kill its runs)

  /// From when nothing of it runs any more: its death, or its lease running out.
  Time lost() const { return std::min(died, lease_ran_out); }
};

class Ledger {
 public:
  void run_started(const std::string& invocation, const std::string& shard, const std::string& instance, Time at) {
    open_[invocation + "@" + instance] = runs_.size();
    runs_.push_back(RunRecord{invocation, shard, instance, at, never, ""});
  }
  void run_ended(const std::string& invocation, const std::string& instance, Time at, std::string how) {
    auto it = open_.find(invocation + "@" + instance);
    if (it == open_.end()) return;
    runs_[it->second].end = at;
    runs_[it->second].how = std::move(how);
    open_.erase(it);
  }
  void process_started(const std::string& shard, const std::string& instance, Time at) {
    processes_.push_back(ProcessRecord{shard, instance, at, never, never, ""});
  }
  void process_died(const std::string& instance, Time at, std::string why) {
    for (auto& p : processes_) {
      if (p.instance == instance && p.died == never) {
        p.died = at;
        p.why = std::move(why);
      }
    }
  }

  void process_registered(const std::string& instance, Time at) {
    for (auto& p : processes_) {
      if (p.instance == instance && p.registered == never) p.registered = at;
    }
  }
  void lease_ran_out(const std::string& instance, Time at) {
    for (auto& p : processes_) {
      if (p.instance == instance && p.lease_ran_out == never) p.lease_ran_out = at;
    }
  }

  void scheduler_started(Time at) { scheduler_starts_.push_back(at); }
  void scheduler_crashed(Time at) { scheduler_crashes_.push_back(at); }
  const std::vector<Time>& scheduler_starts() const { return scheduler_starts_; }
  /// How much of [from, to) no scheduler was up.
  Duration scheduler_down(Time from, Time to) const {
    Duration down{0};
    for (size_t i = 0; i < scheduler_crashes_.size(); ++i) {
      const Time crashed = scheduler_crashes_[i];
      const Time back = i + 1 < scheduler_starts_.size() ? scheduler_starts_[i + 1] : never;
      const Time a = std::max(from, crashed), b = std::min(to, back);
      if (a < b) down += b - a;
    }
    return down;
  }

  const std::vector<RunRecord>& runs() const { return runs_; }
  const std::vector<ProcessRecord>& processes() const { return processes_; }

  /// The latest process of `shard` registered by `at`, dead or alive: the one a scheduler then
  /// believed held the shard, at best. nullptr if none had registered.
  const ProcessRecord* process_at(const std::string& shard, Time at) const {
    const ProcessRecord* found = nullptr;
    for (const auto& p : processes_) {
      if (p.shard == shard && p.registered <= at) found = &p;
    }
    return found;
  }
  const ProcessRecord* process(const std::string& instance) const {
    for (const auto& p : processes_) {
      if (p.instance == instance) return &p;
    }
    return nullptr;
  }

 private:
  std::vector<RunRecord> runs_;
  std::map<std::string, size_t> open_;
  std::vector<ProcessRecord> processes_;
  std::vector<Time> scheduler_starts_;
  std::vector<Time> scheduler_crashes_;
};

}  // namespace troupe::sim
