// The worker's protocol decisions: health and lease from acknowledged heartbeats, fences,
// and the invocations kept until their outcomes are acknowledged.
#include "actors/agent/worker_state.hpp"

#include <algorithm>
#include <utility>

#include "actors/caf_types.hpp"
#include "schema/duration.hpp"

namespace troupe::actors {

WorkerState::WorkerState(std::string shard_id, std::string instance_id, TimePoint created)
    : shard_id_(std::move(shard_id)), instance_id_(std::move(instance_id)), last_acked_send_(created) {}

void WorkerState::connecting() {
  connected_ = true;
  associated_ = false;
}

std::vector<std::string> WorkerState::registered(const Registration& registration, TimePoint sent) {
  timeouts_.heartbeat_interval = registration.timeouts.heartbeat_interval;
  timeouts_.unhealthy_after = registration.timeouts.unhealthy_after;
  timeouts_.must_die_after = registration.timeouts.must_die_after;
  timeouts_.lease = registration.timeouts.lease > Duration::zero() ? registration.timeouts.lease
                                                                   : timeouts_.must_die_after;
  remember_registration(registration.fence);
  last_acked_send_ = sent;
  ever_registered_ = true;
  return ended_ids();
}

void WorkerState::remember_registration(Fence fence) {
  for (const auto& known : registrations_) {
    if (known.epoch == fence.epoch) return;
  }
  registrations_.push_back(fence);
  if (registrations_.size() > 8) registrations_.erase(registrations_.begin());
}

std::optional<std::string> WorkerState::lease_lost(TimePoint now) const {
  // The scheduler fails this worker's invocations over once the lease has run out since the
  // last heartbeat it received, which is later than this one was sent: they must be dead by
  // then.
  if (!ever_registered_) return std::nullopt;
  const auto since = std::chrono::duration_cast<Duration>(now - last_acked_send_);
  if (since < timeouts_.lease) return std::nullopt;
  return "no heartbeat reached the scheduler for " + format_duration(since) + ", its lease of " +
         format_duration(timeouts_.lease) + ": this worker must die";
}

void WorkerState::heartbeat_acknowledged(TimePoint sent) { last_acked_send_ = std::max(last_acked_send_, sent); }

bool WorkerState::healthy(TimePoint now) const {
  if (!associated_ || !connected_) return false;
  const auto since = std::chrono::duration_cast<Duration>(now - last_acked_send_);
  return health_after(HealthState::HEALTHY, since, timeouts_) == HealthState::HEALTHY;
}

std::vector<std::string> WorkerState::running_ids() {
  associated_ = true;
  std::vector<std::string> ids;
  ids.reserve(runs_.size());
  for (const auto& [id, run] : runs_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<void> WorkerState::accept(const std::string& id, Fence fence, bool outcome_in_answer, TimePoint now) {
  if (stopping_) return fail(Errc::NOT_ALLOWED_IN_STATE, "worker " + shard_id_ + " is shutting down");
  if (!healthy(now)) return fail(Errc::NOT_ALLOWED_IN_STATE, "worker " + shard_id_ + " is not HEALTHY");
  if (fence < fence_) {
    return fail(Errc::NOT_ALLOWED_IN_STATE, "runTask of " + id + " (fence " + fence.to_string() +
                                                ") is older than the last notify (fence " + fence_.to_string() + ")");
  }
  if (runs_.count(id)) return fail(Errc::ALREADY_EXISTS, "invocation " + id + " was sent already");
  Run run;
  run.outcome_in_answer = outcome_in_answer;
  runs_.emplace(id, std::move(run));
  return {};
}

std::vector<std::string> WorkerState::not_running(const std::vector<std::string>& ids, Fence fence) {
  fence_ = std::max(fence_, fence);
  std::vector<std::string> out;
  for (const auto& id : ids) {
    if (!runs_.count(id)) out.push_back(id);
  }
  return out;
}

std::vector<std::string> WorkerState::acknowledge(const std::vector<std::string>& ids) {
  std::vector<std::string> forgotten;
  for (const auto& id : ids) {
    auto it = runs_.find(id);
    if (it != runs_.end() && it->second.ended) {
      runs_.erase(it);
      forgotten.push_back(id);
    }
  }
  return forgotten;
}

std::optional<std::vector<std::string>> WorkerState::die() {
  if (dying_) return std::nullopt;
  dying_ = true;
  std::vector<std::string> ids;
  for (const auto& [id, run] : runs_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool WorkerState::begin_stopping() { return !std::exchange(stopping_, true); }

std::vector<std::string> WorkerState::unended_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, run] : runs_) {
    if (!run.ended) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void WorkerState::interrupt(const std::string& id, std::string why) {
  if (auto it = runs_.find(id); it != runs_.end() && !it->second.ended) {
    it->second.interrupted_because = why.empty() ? "worker " + shard_id_ + " shut down before it finished" : std::move(why);
  }
}

EndAnswer WorkerState::ended(const std::string& id, std::shared_ptr<const TaskReport> outcome,
                             bool answer_awaited, TimePoint now) {
  auto& run = runs_.at(id);
  run.ended = true;
  run.ended_at = now;
  if (!run.interrupted_because.empty() && outcome->kind != TaskReport::SUCCEEDED && outcome->kind != TaskReport::HANDED_OFF) {
    // Killed to shut down: whatever the kill looked like to the executor, the task did not fail.
    auto interrupted = std::make_shared<TaskReport>(*outcome);
    interrupted->kind = TaskReport::INTERRUPTED;
    interrupted->reason.clear();
    interrupted->payload.clear();
    interrupted->details = run.interrupted_because;
    outcome = std::move(interrupted);
  }
  run.outcome = std::move(outcome);
  // Otherwise the answer goes first: the scheduler then knows the outcome that follows it needs
  // no start of its own.
  return answer_awaited && run.outcome_in_answer ? EndAnswer::WITH_OUTCOME : EndAnswer::THEN_DELIVER;
}

std::shared_ptr<const TaskReport> WorkerState::outcome(const std::string& id) const {
  auto it = runs_.find(id);
  if (it == runs_.end() || !it->second.ended) return nullptr;
  return it->second.outcome;
}

Duration WorkerState::ended_ago(const std::string& id, TimePoint now) const {
  auto it = runs_.find(id);
  if (it == runs_.end() || !it->second.ended || now <= it->second.ended_at) return Duration::zero();
  return std::chrono::duration_cast<Duration>(now - it->second.ended_at);
}

std::vector<std::string> WorkerState::ended_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, run] : runs_) {
    if (run.ended) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool WorkerState::lose_reporter(const std::string& id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return false;
  it->second.reporter_lost = true;
  return true;
}

bool WorkerState::reporter_lost(const std::string& id) const {
  auto it = runs_.find(id);
  return it != runs_.end() && it->second.reporter_lost;
}

bool WorkerState::retry_refused(const std::string& id, bool unavailable) {
  if (unavailable) return true;
  runs_.erase(id);
  return false;
}

}  // namespace troupe::actors
