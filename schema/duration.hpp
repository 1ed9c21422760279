// Durations as people write them in definitions and configs: "250ms", "10s", "5m", "2h",
// "1h30m", "1.5s". Std-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe {

/// troupe's unit of time for timeouts and intervals.
using Duration = std::chrono::microseconds;

/// The longest duration parse_duration accepts, about 146 years: actors arm timers on CAF's
/// clock, which counts nanoseconds in 64 bits, and a deadline (a moment of that clock plus a
/// duration) must fit in it.
inline constexpr Duration max_duration = Duration(std::numeric_limits<int64_t>::max() / 1000 / 2);

/// Parses one or more <number><unit> terms, units us, ms, s, m, h, d; numbers may have a
/// fraction. INVALID_ARGUMENT with what is wrong and an example otherwise. "0s" is a valid
/// zero; callers that need a positive duration check for it. At most max_duration.
Result<Duration> parse_duration(std::string_view text);

/// The shortest text that parse_duration reads back to `d`: "1h30m", "250ms", "0s".
std::string format_duration(Duration d);

/// The wall clock in microseconds since the Unix epoch: the time histories and records keep.
inline int64_t wall_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace troupe
