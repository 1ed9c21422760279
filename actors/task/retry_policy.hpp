// Whether a failed or timed-out attempt is retried, and after how long (Cadence semantics).
// Plain code: time comes in as durations measured by the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "schema/definition.hpp"

namespace troupe::actors {

/// Why an attempt ended without success.
struct AttemptFailure {
  std::string reason;           ///< e.g. "ExitCode:3", "BadInput", "Timeout:startToClose"
  bool non_retryable = false;   ///< the executor said so
  bool task_deadline = false;   ///< scheduleToClose fired: the whole task is out of time
  std::string details;          ///< the executor's words, kept in the history
};

struct RetryDecision {
  bool retry = false;
  Duration backoff{0};  ///< wait before the next attempt, when retry
  std::string why_not;  ///< when not retried: a sentence for the failure details
};

/// `attempt` is the attempt that just ended, from 1; `elapsed` is the time since the task was
/// first scheduled (pauses excluded).
RetryDecision decide_retry(const std::optional<RetrySpec>& policy, const TimeoutsSpec& timeouts,
                           uint32_t attempt, Duration elapsed, const AttemptFailure& failure);

/// The wait before attempt `attempt + 1`: initialInterval x coefficient^(attempt-1), capped by
/// maximumInterval.
Duration backoff_after(const RetrySpec& policy, uint32_t attempt);

}  // namespace troupe::actors
