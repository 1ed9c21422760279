// Placing sessions on workers with free session slots.
#include "actors/session/session_placement.hpp"

#include <algorithm>
#include <tuple>

namespace troupe::actors {
namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

/// "task list 'a'", "task lists 'a' and 'b'", "task lists 'a', 'b' and 'c'".
std::string lists_text(const std::set<std::string>& lists) {
  std::string out = lists.size() == 1 ? "task list " : "task lists ";
  size_t i = 0;
  for (const auto& list : lists) {
    if (i > 0) out += i + 1 == lists.size() ? " and " : ", ";
    out += quoted(list);
    ++i;
  }
  return out;
}

}  // namespace

void SessionPlacement::join(const std::string& shard, std::string resource_id, uint32_t max_sessions,
                            std::set<std::string> task_lists) {
  auto& worker = workers_[shard];
  worker.resource_id = std::move(resource_id);
  worker.slots = max_sessions;
  worker.task_lists = std::move(task_lists);
}

void SessionPlacement::leave(const std::string& shard) { workers_.erase(shard); }

void SessionPlacement::accepting(const std::string& shard, bool accepts) {
  if (auto it = workers_.find(shard); it != workers_.end()) it->second.accepts = accepts;
}

bool SessionPlacement::request(SessionRequest request) {
  const bool waits = std::any_of(requests_.begin(), requests_.end(),
                                 [&](const SessionRequest& r) { return r.key == request.key; });
  if (waits) return false;
  requests_.push_back(std::move(request));
  return true;
}

bool SessionPlacement::withdraw(const std::string& key) {
  return std::erase_if(requests_, [&](const SessionRequest& r) { return r.key == key; }) > 0;
}

std::vector<std::pair<std::string, std::string>> SessionPlacement::place() {
  std::vector<std::pair<std::string, std::string>> placed;
  for (auto it = requests_.begin(); it != requests_.end();) {
    auto shard = choose(*it);
    if (!shard) {
      ++it;
      continue;
    }
    auto& worker = workers_.at(*shard);
    worker.sessions.insert(it->key);
    worker.last_placed = ++placements_;
    placed.emplace_back(it->key, *shard);
    it = requests_.erase(it);
  }
  return placed;
}

bool SessionPlacement::claim(const std::string& key, const std::string& shard) {
  auto it = workers_.find(shard);
  if (it == workers_.end()) return false;
  auto& worker = it->second;
  if (worker.sessions.count(key)) return true;
  if (worker.sessions.size() >= worker.slots) return false;
  worker.sessions.insert(key);
  return true;
}

void SessionPlacement::release(const std::string& key, const std::string& shard) {
  auto it = workers_.find(shard);
  if (it == workers_.end()) return;
  if (auto held = it->second.sessions.find(key); held != it->second.sessions.end()) it->second.sessions.erase(held);
}

uint32_t SessionPlacement::held(const std::string& shard) const {
  auto it = workers_.find(shard);
  return it == workers_.end() ? 0 : static_cast<uint32_t>(it->second.sessions.size());
}

bool SessionPlacement::fits(const Worker& worker, const SessionRequest& request) {
  if (!request.resource_id.empty() && worker.resource_id != request.resource_id) return false;
  return std::includes(worker.task_lists.begin(), worker.task_lists.end(), request.task_lists.begin(),
                       request.task_lists.end());
}

std::optional<std::string> SessionPlacement::choose(const SessionRequest& request) const {
  // Most free slots first, then the one that took a session longest ago, then the smaller id;
  // the worker the session lost only when no other can take it.
  const std::string* best = nullptr;
  auto rank = [&](const std::string& shard) {
    const Worker& w = workers_.at(shard);
    const auto free = static_cast<int64_t>(w.slots) - static_cast<int64_t>(w.sessions.size());
    return std::make_tuple(shard == request.avoid_shard, -free, w.last_placed);
  };
  for (const auto& [shard, worker] : workers_) {
    if (!worker.accepts || worker.sessions.size() >= worker.slots || !fits(worker, request)) continue;
    if (!request.only_shard.empty() && shard != request.only_shard) continue;
    if (best == nullptr || rank(shard) < rank(*best)) best = &shard;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::string SessionPlacement::why_waiting(const std::string& key) const {
  auto request = std::find_if(requests_.begin(), requests_.end(), [&](const SessionRequest& r) { return r.key == key; });
  if (request == requests_.end() || choose(*request)) return {};
  const std::string of_resource = request->resource_id.empty() ? "" : " of resource " + quoted(request->resource_id);
  size_t with_resource = 0, fitting = 0, taking = 0, accepting = 0;
  uint32_t held = 0, slots = 0;
  if (!request->only_shard.empty() && workers_.count(request->only_shard) == 0) {
    return "worker " + quoted(request->only_shard) + " (its recreate token's) is not live";
  }
  for (const auto& [shard, worker] : workers_) {
    if (!request->resource_id.empty() && worker.resource_id != request->resource_id) continue;
    if (!request->only_shard.empty() && shard != request->only_shard) continue;
    ++with_resource;
    if (!fits(worker, *request)) continue;
    ++fitting;
    if (worker.slots == 0) continue;
    ++taking;
    if (!worker.accepts) continue;
    ++accepting;
    held += static_cast<uint32_t>(worker.sessions.size());
    slots += worker.slots;
  }
  if (with_resource == 0) {
    if (request->resource_id.empty()) return "no live worker takes sessions";
    return "no live worker declares resource " + quoted(request->resource_id);
  }
  if (fitting == 0) return "no live worker" + of_resource + " serves " + lists_text(request->task_lists);
  if (taking == 0) {
    return "no worker" + of_resource + " that serves " + lists_text(request->task_lists) +
           " takes sessions (max_concurrent_sessions = 0)";
  }
  if (accepting == 0) {
    return "the workers" + of_resource + " that fit take no sessions now (draining, quarantined or unhealthy)";
  }
  return "every worker" + of_resource + " that fits holds as many sessions as it takes (" + std::to_string(held) +
         " of " + std::to_string(slots) + ")";
}

}  // namespace troupe::actors
