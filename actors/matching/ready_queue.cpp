// The ready queue: a map by key for lookups and a set of pointers into it for the order.
#include "actors/matching/ready_queue.hpp"

#include <tuple>
#include <utility>

namespace troupe::actors {
namespace {

bool before(int32_t pa, uint64_t aa, const std::string& ka, int32_t pb, uint64_t ab,
            const std::string& kb) {
  // Higher priority first, then older, then by key.
  return std::tie(pb, aa, ka) < std::tie(pa, ab, kb);
}

}  // namespace

bool dispatches_before(const ReadyEntry& a, const ReadyEntry& b) {
  return before(a.priority, a.arrival, a.key, b.priority, b.arrival, b.key);
}

bool ReadyQueue::Before::operator()(const Node* a, const Node* b) const {
  return before(a->second.priority, a->second.arrival, a->first, b->second.priority,
                b->second.arrival, b->first);
}

ReadyEntry ReadyQueue::entry_of(const Node& node) {
  return ReadyEntry{node.first, node.second.priority, node.second.arrival};
}

bool ReadyQueue::push(std::string key, int32_t priority) {
  return push(ReadyEntry{std::move(key), priority, next_arrival_});
}

bool ReadyQueue::push(ReadyEntry entry) {
  auto [it, inserted] =
      by_key_.try_emplace(std::move(entry.key), Place{entry.priority, entry.arrival});
  if (!inserted) return false;
  order_.insert(&*it);
  if (entry.arrival >= next_arrival_) next_arrival_ = entry.arrival + 1;
  return true;
}

std::optional<ReadyEntry> ReadyQueue::pop() {
  if (order_.empty()) return std::nullopt;
  const Node* best = *order_.begin();
  order_.erase(order_.begin());
  auto node = by_key_.extract(best->first);
  return ReadyEntry{std::move(node.key()), node.mapped().priority, node.mapped().arrival};
}

std::optional<ReadyEntry> ReadyQueue::peek() const {
  if (order_.empty()) return std::nullopt;
  return entry_of(**order_.begin());
}

std::optional<ReadyEntry> ReadyQueue::remove(std::string_view key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  order_.erase(&*it);
  auto node = by_key_.extract(it);
  return ReadyEntry{std::move(node.key()), node.mapped().priority, node.mapped().arrival};
}

std::vector<ReadyEntry> ReadyQueue::entries() const {
  std::vector<ReadyEntry> out;
  out.reserve(order_.size());
  for (const Node* node : order_) out.push_back(entry_of(*node));
  return out;
}

}  // namespace troupe::actors
