// FailureStreak: counting distinct tasks in a row, and the doubling backoff.
#include "actors/worker/failure_streak.hpp"

#include <algorithm>
#include <set>

namespace troupe::actors {

FailureStreak::FailureStreak(std::vector<FailureNote> failures, uint32_t quarantines, const QuarantinePolicy& policy)
    : failures_(failures.begin(), failures.end()), quarantines_(quarantines) {
  trim(policy);
}

void FailureStreak::trim(const QuarantinePolicy& policy) {
  while (failures_.size() > std::max<size_t>(kept, policy.failures)) failures_.pop_front();
}

bool FailureStreak::failed(FailureNote note, const QuarantinePolicy& policy) {
  failures_.push_back(std::move(note));
  trim(policy);
  if (policy.failures == 0) return false;
  // After a quarantine the worker is on probation: one more failure sends it back.
  if (quarantines_ > 0) return true;
  return distinct_tasks() >= policy.failures;
}

void FailureStreak::succeeded() {
  failures_.clear();
  quarantines_ = 0;
}

Duration FailureStreak::start_quarantine(const QuarantinePolicy& policy) {
  Duration backoff = policy.backoff;
  for (uint32_t i = 0; i < quarantines_ && backoff < policy.max_backoff; ++i) backoff *= 2;
  ++quarantines_;
  return std::min(backoff, policy.max_backoff);
}

size_t FailureStreak::distinct_tasks() const {
  std::set<std::string_view> tasks;
  for (const auto& f : failures_) tasks.insert(f.task);
  return tasks.size();
}

}  // namespace troupe::actors
