// The in-process benchmarks: the actor core with its local executor and a durable RocksDB
// history, no RPC. CHAIN and IDLE from WORKLOADS.md.
#pragma once

#include <iosfwd>
#include <string>

#include "schema/result.hpp"
#include "tools/troupe/json.hpp"

namespace troupe::cli {

struct ChainBenchOptions {
  int workflows = 5000;  ///< W
  int tasks = 10;        ///< K, each the noop handler
  int in_flight = 64;    ///< C
  std::string directory;
  bool sync = true;
};

/// CHAIN: W workflows of K chained noop tasks, C in flight.
Result<Json> run_chain_bench(const ChainBenchOptions& options, std::ostream& progress);

struct IdleBenchOptions {
  int workflows = 100000;  ///< A, each one task sleeping 10 minutes
  std::string directory;
  bool sync = true;
};

/// IDLE: A running workflows each waiting in a sleep handler; RSS per workflow.
Result<Json> run_idle_bench(const IdleBenchOptions& options, std::ostream& progress);

}  // namespace troupe::cli
