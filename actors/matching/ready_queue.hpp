// The ready queue of one task list: the tasks waiting for a worker slot, best first. Plain code.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::actors {

struct ReadyEntry {
  std::string key;       ///< the task invocation's key, unique in the queue
  int32_t priority = 0;  ///< higher is dispatched first
  uint64_t arrival = 0;  ///< lower (older) is dispatched first among equal priorities
  friend bool operator==(const ReadyEntry&, const ReadyEntry&) = default;
};

/// The dispatch order: higher priority first, then older arrival, then key (so that the order is
/// total even if a caller reuses an arrival number).
bool dispatches_before(const ReadyEntry& a, const ReadyEntry& b);

/// Keys are unique: pushing a key that is already queued is rejected and changes nothing (the
/// caller withdraws it first to requeue it with another priority). Every operation is O(log n).
/// Move-only (it keeps pointers into its own nodes). Not thread-safe; it belongs to one actor.
class ReadyQueue {
 public:
  ReadyQueue() = default;
  ReadyQueue(ReadyQueue&&) noexcept = default;
  ReadyQueue& operator=(ReadyQueue&&) noexcept = default;
  ReadyQueue(const ReadyQueue&) = delete;
  ReadyQueue& operator=(const ReadyQueue&) = delete;
  ~ReadyQueue() = default;

  /// Queues `key` as the newest arrival (arrival = next_arrival()). False if it is queued.
  [[nodiscard]] bool push(std::string key, int32_t priority);
  /// Queues an entry with its own arrival number, e.g. the task's schedule sequence kept in its
  /// history, so that ages survive a scheduler restart. False if the key is queued.
  [[nodiscard]] bool push(ReadyEntry entry);

  /// Takes out the best entry; empty when the queue is.
  std::optional<ReadyEntry> pop();
  /// A copy of the best entry, without taking it out; empty when the queue is.
  std::optional<ReadyEntry> peek() const;

  /// Takes out `key`'s entry; empty if it is not queued.
  std::optional<ReadyEntry> remove(std::string_view key);
  bool contains(std::string_view key) const { return by_key_.count(key) != 0; }

  size_t size() const { return by_key_.size(); }
  bool empty() const { return by_key_.empty(); }

  /// One more than the largest arrival ever pushed (0 at first).
  uint64_t next_arrival() const { return next_arrival_; }

  /// Every entry in dispatch order (O(n), for describe and tests).
  std::vector<ReadyEntry> entries() const;

 private:
  struct Place {
    int32_t priority;
    uint64_t arrival;
  };
  using Node = std::map<std::string, Place, std::less<>>::value_type;
  /// Points into `by_key_`, whose nodes never move, so each key is stored once.
  struct Before {
    bool operator()(const Node* a, const Node* b) const;
  };
  static ReadyEntry entry_of(const Node& node);

  std::map<std::string, Place, std::less<>> by_key_;
  std::set<const Node*, Before> order_;
  uint64_t next_arrival_ = 0;
};

}  // namespace troupe::actors
