// Fencing of what a scheduler sends its workers (Bistro's notify sequence, made to survive
// scheduler restarts): every incarnation of a scheduler has a durable epoch larger than the
// last one's, and numbers its notifies from there. A worker orders what it receives by (epoch,
// sequence), so it refuses a runTask older than the last notifyIfTasksNotRunning it answered,
// whichever incarnation sent them, and never refuses a new incarnation for an old one's sake.
#pragma once

#include <atomic>
#include <compare>
#include <cstdint>
#include <memory>
#include <string>

namespace troupe::actors {

struct Fence {
  uint64_t epoch = 0;     ///< the scheduler incarnation; 0 for a scheduler that has none
  uint64_t sequence = 0;  ///< the incarnation's notify sequence at the time

  friend auto operator<=>(const Fence&, const Fence&) = default;
  std::string to_string() const { return std::to_string(epoch) + "." + std::to_string(sequence); }
};

/// One scheduler incarnation's fence counter, shared by its worker actors (a worker process
/// that reconnects to a new actor of the same incarnation never sees the sequence go back) and
/// its task actors (a dispatch records the fence its runTask carries). Thread-safe.
class FenceCounter {
 public:
  explicit FenceCounter(uint64_t epoch = 0) : epoch_(epoch) {}

  /// The fence a runTask decided now carries: a notify sent after it outranks it.
  Fence current() const { return {epoch_, sequence_.load(std::memory_order_acquire)}; }

  /// A fence above every one handed out so far: for a notify, and for a registration (so a
  /// worker instance knows what was dispatched before it held its shard, see Registration).
  Fence next() { return {epoch_, sequence_.fetch_add(1, std::memory_order_acq_rel) + 1}; }

  uint64_t epoch() const { return epoch_; }

 private:
  uint64_t epoch_;
  std::atomic<uint64_t> sequence_{0};
};

}  // namespace troupe::actors
