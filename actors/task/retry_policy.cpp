// Retry decisions.
#include "actors/task/retry_policy.hpp"

#include <algorithm>
#include <cmath>

namespace troupe::actors {

Duration backoff_after(const RetrySpec& policy, uint32_t attempt) {
  const double factor = std::pow(policy.backoff_coefficient, static_cast<double>(attempt - 1));
  const double micros = static_cast<double>(policy.initial_interval.count()) * factor;
  const double cap = static_cast<double>(policy.maximum_interval.count());
  return Duration(static_cast<int64_t>(std::min(micros, cap)));
}

RetryDecision decide_retry(const std::optional<RetrySpec>& policy, const TimeoutsSpec& timeouts,
                           uint32_t attempt, Duration elapsed, const AttemptFailure& failure) {
  RetryDecision no;
  if (!policy) {
    no.why_not = "the task has no retry policy";
    return no;
  }
  if (failure.task_deadline) {
    no.why_not = "the task's scheduleToClose timeout expired";
    return no;
  }
  if (failure.non_retryable) {
    no.why_not = "the failure is marked non-retryable";
    return no;
  }
  const auto& listed = policy->non_retryable_errors;
  if (std::find(listed.begin(), listed.end(), failure.reason) != listed.end()) {
    no.why_not = "'" + failure.reason + "' is listed in nonRetryableErrors";
    return no;
  }
  if (policy->maximum_attempts != 0 && attempt >= policy->maximum_attempts) {
    no.why_not = "all " + std::to_string(policy->maximum_attempts) + " attempts were used";
    return no;
  }
  const Duration backoff = backoff_after(*policy, attempt);
  if (policy->expiration_interval && elapsed + backoff > *policy->expiration_interval) {
    no.why_not = "the next attempt would start after the retry expirationInterval (" +
                 format_duration(*policy->expiration_interval) + ")";
    return no;
  }
  if (timeouts.schedule_to_close && elapsed + backoff >= *timeouts.schedule_to_close) {
    no.why_not = "the next attempt would start after the scheduleToClose timeout (" +
                 format_duration(*timeouts.schedule_to_close) + ")";
    return no;
  }
  return RetryDecision{true, backoff, {}};
}

}  // namespace troupe::actors
