// The commands that run on this machine without a scheduler to talk to: up, down, describe
// states, version and the benchmarks. Each takes its parsed arguments and returns the exit code.
#pragma once

#include "tools/troupe/args.hpp"

namespace troupe::cli {

/// `troupe up CLUSTER.toml [--node NAME]... [--timeout D] [--node-binary F] [--json]`
int up_command(const Args& args);
/// `troupe certs CLUSTER.toml`: the TLS files the config needs, made where missing.
int certs_command(const Args& args);
/// `troupe down CLUSTER.toml [--node NAME]... [--grace D] [--json]`
int down_command(const Args& args);
/// `troupe describe states [--format markdown|dot|json] [--json]`
int describe_states_command(const Args& args);
/// `troupe version [--json]`
int version_command(const Args& args);

/// `troupe bench store|chain|fanout|idle [options]`: each prints one JSON report on stdout.
int bench_store_command(const Args& args);
int bench_chain_command(const Args& args);
int bench_fanout_command(const Args& args);
int bench_idle_command(const Args& args);

}  // namespace troupe::cli
