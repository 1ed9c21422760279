// Group commit: many threads submit operations, one writer thread takes everything queued
// while the previous commit was in flight and commits it as one batch. Under load a batch
// grows to what arrived during one sync, so the cost of a sync is shared by all its callers.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace troupe::storage {

struct GroupCommitLimits {
  size_t max_ops = 4096;           ///< most operations in one batch
  size_t max_bytes = size_t{8} << 20;  ///< a batch stops taking operations past this size
};

struct GroupCommitStats {
  uint64_t batches = 0;
  uint64_t operations = 0;
  uint64_t largest_batch = 0;
};

/// `Op` is a movable operation with `size_t size_bytes() const`. The commit function runs
/// on the writer thread with a non-empty batch in submission order, and owns reporting each
/// operation's outcome.
template <class Op>
class GroupCommitter {
 public:
  using Commit = std::function<void(std::vector<Op>& batch)>;

  GroupCommitter(GroupCommitLimits limits, Commit commit)
      : limits_(limits), commit_(std::move(commit)), writer_([this] { run(); }) {}

  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  /// Commits what is queued, then joins the writer thread.
  ~GroupCommitter() { stop(); }

  /// Queues `op` and returns true; or returns false, leaving `op` untouched, once stop()
  /// has begun. Thread-safe.
  bool submit(Op&& op) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return false;
      queue_.push_back(std::move(op));
    }
    wake_.notify_one();
    return true;
  }

  /// Refuses new operations, commits the queued ones, joins the writer. Idempotent; not
  /// callable from the commit function.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (writer_.joinable()) writer_.join();
  }

  GroupCommitStats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  void run() {
    std::vector<Op> batch;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, and everything is committed
      size_t bytes = 0;
      while (!queue_.empty() && batch.size() < limits_.max_ops &&
             (batch.empty() || bytes < limits_.max_bytes)) {
        bytes += queue_.front().size_bytes();
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      lock.unlock();
      commit_(batch);
      const uint64_t size = batch.size();
      batch.clear();
      lock.lock();
      stats_.batches += 1;
      stats_.operations += size;
      stats_.largest_batch = std::max(stats_.largest_batch, size);
    }
  }

  const GroupCommitLimits limits_;
  const Commit commit_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Op> queue_;
  bool stopping_ = false;
  GroupCommitStats stats_;
  std::thread writer_;  // last: starts after everything it uses is constructed
};

}  // namespace troupe::storage
