// A worker's persisted identity: made once, on the worker's first start, kept in a file of the
// node's own directory, and presented to the scheduler on every start after it (AWS Deadline's
// worker startup). The shard id names a slot in the cluster; the worker id names the machine's
// worker that fills it, so a scheduler tells the same worker restarting from another one
// taking its name.
#pragma once

#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe::runtime {

/// The name of the file, in the worker's directory, that holds its id.
inline constexpr const char* worker_id_file = "worker-id";

/// Whether `text` is a worker id: "wkr-" and 16 lower-case hex digits.
bool is_worker_id(std::string_view text);

/// The worker id kept in `dir`/worker-id; on the first start (no such file) a new random one,
/// written there durably (temporary file, fsync, rename; mode 0600), `dir` created if needed.
/// Errors, each naming the file and what to do: UNAVAILABLE (the directory or file cannot be
/// created, read or written), CORRUPTION (the file holds something else than a worker id: it
/// is never replaced silently, since a new id would make the scheduler see a new worker).
Result<std::string> load_or_create_worker_id(const std::string& dir);

}  // namespace troupe::runtime
