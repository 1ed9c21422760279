// The TLS files a cluster config needs under their default paths (certs/ beside the config),
// made with the cluster's own CA where missing: what `troupe certs` does, and `troupe up`
// before it starts nodes, so that a cluster on one machine is encrypted from its first start.
#pragma once

#include <string>
#include <vector>

#include "runtime/config/cluster_config.hpp"
#include "schema/result.hpp"

namespace troupe::cli {

/// Makes each missing default TLS file of `config` (a plaintext one needs none): certs/ca.pem
/// and ca.key, then certs/NODE.pem and NODE.key for every node, signed by that CA; a
/// scheduler's names its listen host, localhost, 127.0.0.1 and ::1. Files that exist, and
/// paths the config sets itself, are left alone. The paths written, in order; UNAVAILABLE or
/// INVALID_ARGUMENT saying what could not be made.
Result<std::vector<std::string>> make_missing_certificates(const runtime::ClusterConfig& config);

}  // namespace troupe::cli
