// When a worker's failures are the worker's fault rather than its tasks': attempts that fail in
// a row on one worker across different tasks (a broken disk, a missing tool, a full /tmp). One
// task failing again and again on it counts once: that is the task's problem, and its retries
// say so. Plain code, time passed in; the worker actor feeds it and the standing machine acts.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "schema/duration.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

struct QuarantinePolicy {
  /// Attempts failing in a row on one worker, each of a different task, that quarantine it;
  /// 0: never. Default: 5
  uint32_t failures = 5;
  /// How long the first quarantine lasts; each one after it, until an attempt succeeds there or
  /// an operator forgives the worker, lasts twice as long as the one before. Default: 1min
  Duration backoff = std::chrono::minutes(1);
  /// The longest a quarantine lasts. Default: 1h
  Duration max_backoff = std::chrono::hours(1);
};

/// One failed attempt (task, reason, when), as the worker's record keeps it.
using FailureNote = storage::WorkerFailureRecord;

class FailureStreak {
 public:
  /// The failures in a row are kept to this many (the newest), or the policy's count if more.
  static constexpr size_t kept = 10;

  FailureStreak() = default;
  /// As kept in the worker's record: the streak's failures and how many quarantines it caused,
  /// under `policy` (which says how many failures are kept).
  FailureStreak(std::vector<FailureNote> failures, uint32_t quarantines, const QuarantinePolicy& policy);

  /// An attempt failed here. True when the streak (distinct tasks in a row) reaches the policy's
  /// count, and on every failure after that until a success or clear().
  bool failed(FailureNote note, const QuarantinePolicy& policy);
  /// An attempt succeeded here: the streak and the backoff start over.
  void succeeded();
  /// An operator forgave the worker: the same as a success.
  void clear() { succeeded(); }

  /// A quarantine starts now: how long it lasts (the policy's backoff, doubled for each earlier
  /// quarantine since the last success, at most max_backoff). Counts it.
  Duration start_quarantine(const QuarantinePolicy& policy);

  /// Distinct tasks among the failures in a row.
  size_t distinct_tasks() const;
  const std::deque<FailureNote>& failures() const { return failures_; }
  uint32_t quarantines() const { return quarantines_; }

 private:
  /// Keeps the newest `kept` failures, or the policy's count if more.
  void trim(const QuarantinePolicy& policy);

  std::deque<FailureNote> failures_;  ///< the streak's failures, oldest first, at most `kept` or the policy's count
  uint32_t quarantines_ = 0;          ///< since the last success
};

}  // namespace troupe::actors
