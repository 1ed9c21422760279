#include <doctest/doctest.h>

#include "actors/task/retry_policy.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

RetrySpec policy(uint32_t attempts = 0) {
  RetrySpec p;
  p.initial_interval = 1s;
  p.backoff_coefficient = 2.0;
  p.maximum_interval = 10s;
  p.maximum_attempts = attempts;
  p.non_retryable_errors = {"BadInput"};
  return p;
}

}  // namespace

TEST_SUITE("actors.retry_policy") {
  TEST_CASE("backoff grows by the coefficient and stops at the maximum interval") {
    const auto p = policy();
    CHECK(backoff_after(p, 1) == Duration(1s));
    CHECK(backoff_after(p, 2) == Duration(2s));
    CHECK(backoff_after(p, 3) == Duration(4s));
    CHECK(backoff_after(p, 4) == Duration(8s));
    CHECK(backoff_after(p, 5) == Duration(10s));
    CHECK(backoff_after(p, 40) == Duration(10s));
  }

  TEST_CASE("failures are retried until the attempts run out") {
    const TimeoutsSpec none;
    auto first = decide_retry(policy(3), none, 1, 0s, {"ExitCode:1", false, false, {}});
    CHECK(first.retry);
    CHECK(first.backoff == Duration(1s));
    CHECK(decide_retry(policy(3), none, 2, 1s, {"ExitCode:1", false, false, {}}).retry);
    auto last = decide_retry(policy(3), none, 3, 3s, {"ExitCode:1", false, false, {}});
    CHECK_FALSE(last.retry);
    CHECK(last.why_not == "all 3 attempts were used");
  }

  TEST_CASE("what ends retrying: no policy, non-retryable, task deadline, expiration") {
    const TimeoutsSpec none;
    CHECK(decide_retry(std::nullopt, none, 1, 0s, {"x", false, false, {}}).why_not == "the task has no retry policy");
    CHECK(decide_retry(policy(), none, 1, 0s, {"BadInput", false, false, {}}).why_not ==
          "'BadInput' is listed in nonRetryableErrors");
    CHECK(decide_retry(policy(), none, 1, 0s, {"x", true, false, {}}).why_not ==
          "the failure is marked non-retryable");
    CHECK(decide_retry(policy(), none, 1, 0s, {"x", false, true, {}}).why_not ==
          "the task's scheduleToClose timeout expired");

    auto expiring = policy();
    expiring.expiration_interval = 5s;
    CHECK(decide_retry(expiring, none, 2, 2s, {"x", false, false, {}}).retry);   // 2s + 2s backoff <= 5s
    CHECK_FALSE(decide_retry(expiring, none, 3, 2s, {"x", false, false, {}}).retry);  // 2s + 4s > 5s

    TimeoutsSpec bounded;
    bounded.schedule_to_close = 10s;
    CHECK(decide_retry(policy(), bounded, 1, 8s, {"x", false, false, {}}).retry);
    auto late = decide_retry(policy(), bounded, 2, 8s, {"x", false, false, {}});
    CHECK_FALSE(late.retry);
    CHECK(late.why_not.find("scheduleToClose timeout (10s)") != std::string::npos);
  }
}
