// What the gateway fuzz target and the seeds it starts from (make_seeds.cpp) agree on.
#pragma once

#include <string_view>

namespace troupe::fuzz {

/// The cluster's token in the fuzzed scheduler: the seeds present it.
inline constexpr std::string_view cluster_token = "fuzz-cluster-token-0123456789";
/// The key its task tokens are signed with: seeds mint tokens for asyncCompletion tasks.
inline constexpr std::string_view task_token_key = "fuzz-task-token-key-0123456789";

}  // namespace troupe::fuzz
