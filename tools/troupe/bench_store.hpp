// The STORE workload: durable appends through the history store from T concurrent
// appenders, against the raw rate of 4 KiB write+fdatasync on the same file system.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "schema/result.hpp"
#include "tools/troupe/json.hpp"

namespace troupe::cli {

struct StoreBenchOptions {
  double seconds = 10;                  ///< per appender count, and for each raw measurement
  std::vector<int> appenders = {1, 8, 64};
  std::string directory;                ///< where stores and the raw file go
  bool sync = true;
  size_t event_bytes = 200;             ///< stored size of each event
};

/// Runs the workload; progress lines go to `progress`. The report has the fields WORKLOADS.md
/// names plus latency percentiles and batch sizes.
Result<Json> run_store_bench(const StoreBenchOptions& options, std::ostream& progress);

}  // namespace troupe::cli
