// Credit-based dispatch: a map of workers by id and a ranking of those with free slots.
#include "actors/matching/credit.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace troupe::actors {

bool CreditPool::Rank::operator()(const Node* a, const Node* b) const {
  const uint32_t fa = a->second.credit.free();
  const uint32_t fb = b->second.credit.free();
  return std::tie(fb, a->second.last_assigned, a->first) <
         std::tie(fa, b->second.last_assigned, b->first);
}

void CreditPool::unrank(Node& node) {
  const uint32_t free = node.second.credit.free();
  if (free == 0) return;
  ranking_.erase(&node);
  free_slots_ -= free;
}

void CreditPool::rank(Node& node) {
  const uint32_t free = node.second.credit.free();
  if (free == 0) return;
  ranking_.insert(&node);
  free_slots_ += free;
}

bool CreditPool::add_worker(std::string id, uint32_t slots, TokenBucket rate) {
  auto [it, inserted] = workers_.try_emplace(std::move(id), Worker{{slots, 0}, rate, 0});
  if (!inserted) return false;
  if (slots > 0) ++offering_;
  rank(*it);
  return true;
}

bool CreditPool::set_slots(std::string_view id, uint32_t slots) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return false;
  unrank(*it);
  if (it->second.credit.slots == 0 && slots > 0) ++offering_;
  if (it->second.credit.slots > 0 && slots == 0) --offering_;
  it->second.credit.slots = slots;
  rank(*it);
  return true;
}

std::optional<uint32_t> CreditPool::remove_worker(std::string_view id) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return std::nullopt;
  unrank(*it);
  if (it->second.credit.slots > 0) --offering_;
  const uint32_t in_use = it->second.credit.in_use;
  workers_.erase(it);
  return in_use;
}

void CreditPool::take(Node& node, TimePoint now) {
  if (!global_.try_take(now) || !node.second.rate.try_take(now)) {
    throw std::logic_error("CreditPool::take without tokens");
  }
  unrank(node);
  ++node.second.credit.in_use;
  node.second.last_assigned = ++assignments_;
  rank(node);
}

std::optional<std::string> CreditPool::assign(TimePoint now, std::string_view avoid) {
  if (ranking_.empty() || global_.next_available(now) > now) return std::nullopt;
  Node* avoided = nullptr;  // the avoided worker, if it could take the task
  auto best = std::find_if(ranking_.begin(), ranking_.end(), [&](Node* node) {
    if (node->second.rate.next_available(now) > now) return false;
    if (!avoid.empty() && node->first == avoid) {
      avoided = node;
      return false;
    }
    return true;
  });
  Node* chosen = best != ranking_.end() ? *best : avoided;
  if (chosen == nullptr) return std::nullopt;
  take(*chosen, now);
  return chosen->first;
}

bool CreditPool::assign_to(std::string_view id, TimePoint now) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.credit.free() == 0) return false;
  if (global_.next_available(now) > now || it->second.rate.next_available(now) > now) return false;
  take(*it, now);
  return true;
}

bool CreditPool::claim(std::string_view id) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return false;
  unrank(*it);
  ++it->second.credit.in_use;
  rank(*it);
  return true;
}

bool CreditPool::release(std::string_view id) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.credit.in_use == 0) return false;
  unrank(*it);
  --it->second.credit.in_use;
  rank(*it);
  return true;
}

std::optional<CreditPool::TimePoint> CreditPool::next_assign_time(TimePoint now) const {
  if (ranking_.empty()) return std::nullopt;
  TimePoint worker = TimePoint::max();
  for (const Node* node : ranking_) {
    worker = std::min(worker, node->second.rate.next_available(now));
    if (worker == now) break;
  }
  return std::max(worker, global_.next_available(now));
}

CreditHold CreditPool::hold(TimePoint now) const {
  if (offering_ == 0) return CreditHold::NO_WORKER;
  if (ranking_.empty()) return CreditHold::BUSY;
  if (global_.next_available(now) > now) return CreditHold::LIST_RATE;
  const bool any = std::any_of(ranking_.begin(), ranking_.end(),
                               [now](const Node* node) { return node->second.rate.next_available(now) <= now; });
  return any ? CreditHold::NONE : CreditHold::WORKER_RATE;
}

std::optional<WorkerCredit> CreditPool::find_worker(std::string_view id) const {
  auto it = workers_.find(id);
  if (it == workers_.end()) return std::nullopt;
  return it->second.credit;
}

}  // namespace troupe::actors
