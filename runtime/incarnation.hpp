// A scheduler's incarnation number: the epoch of its fences (actors/worker/fence.hpp). Each
// start of a scheduler on a data directory takes the next number, durably, before it serves
// anything, so what a later incarnation sends its workers always outranks an earlier one's.
#pragma once

#include <cstdint>
#include <string>

#include "schema/result.hpp"

namespace troupe::runtime {

/// Reads the last incarnation from `data_dir`/incarnation (0 when the file is absent), writes
/// the next one (write to a temporary file, fsync, rename, fsync the directory) and returns
/// it. UNAVAILABLE, naming the file, when it cannot be read or made durable; CORRUPTION when
/// the file holds something else than a number.
Result<uint64_t> next_incarnation(const std::string& data_dir);

}  // namespace troupe::runtime
