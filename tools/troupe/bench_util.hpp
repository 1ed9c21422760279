// Small helpers shared by the benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/troupe/json.hpp"

namespace troupe::cli {

/// The p-quantile (0..1) of `values`, which must be sorted; 0 when empty.
double quantile(const std::vector<double>& sorted, double p);

/// This process's peak resident set size (VmHWM), in bytes; 0 if unknown.
uint64_t peak_rss_bytes();
/// This process's current resident set size (VmRSS), in bytes; 0 if unknown.
uint64_t rss_bytes();

/// The machine's CPU time taken by the hypervisor for other guests (the "steal" of
/// /proc/stat) while it lives, as a fraction of all CPU time: on a shared virtual machine,
/// figures measured with a large steal fraction understate what the code does.
class StealMeter {
 public:
  StealMeter();
  /// Steal / (all CPU time) since construction, 0..1; 0 if /proc/stat cannot be read.
  double fraction() const;

 private:
  uint64_t steal_ = 0, total_ = 0;
};

/// CHAIN's definition: tasks t1 -> t2 -> ... -> tK, each the noop handler.
std::string chain_definition(int tasks);

/// The fields every CHAIN report has: the workload, its parameters, throughput and latency
/// quantiles (`sorted_latencies_ms` sorted).
Json chain_report(const std::string& mode, int workflows, int tasks, int in_flight, double wall_s,
                  const std::vector<double>& sorted_latencies_ms);

}  // namespace troupe::cli
