// The lease: one deadline shared between the supervisor and every keeper process it forks, in a
// MAP_SHARED anonymous page, so keepers enforce it even while the supervisor's process is frozen.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>

#include "schema/result.hpp"

namespace troupe::runtime {

/// The deadline in CLOCK_MONOTONIC nanoseconds (std::chrono::steady_clock's clock on Linux), in
/// memory that every process forked after create() shares. no_lease means no deadline at all.
class Lease {
 public:
  static constexpr int64_t no_lease = std::numeric_limits<int64_t>::max();

  /// Maps the shared page; starts with no_lease. OVERLOADED when memory runs out.
  static Result<std::unique_ptr<Lease>> create();

  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  /// Unmaps the page here; forked processes keep their mapping.
  ~Lease();

  /// The lease now ends at `deadline` (earlier or later than before). Returns true when that is
  /// earlier: keepers sleeping towards the old deadline must be woken to read it. Any thread.
  bool set(std::chrono::steady_clock::time_point deadline);

  /// The deadline word, for keepers to read (async-signal-safe: the atomic is lock-free).
  const std::atomic<int64_t>* deadline_ns() const { return word_; }

 private:
  explicit Lease(std::atomic<int64_t>* word) : word_(word) {}
  std::atomic<int64_t>* word_;
};

static_assert(std::atomic<int64_t>::is_always_lock_free,
              "keepers read the lease from another process and from async-signal-safe code");

}  // namespace troupe::runtime
