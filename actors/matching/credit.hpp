// Credit-based dispatch for one task list: which worker gets the next task. A worker never holds
// more tasks than its free slots, and dispatch obeys the task list's token bucket (global) and
// each worker's own. Plain code: time is passed in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "actors/matching/token_bucket.hpp"

namespace troupe::actors {

/// Why CreditPool::assign can give no worker now, most fundamental first.
enum class CreditHold : uint8_t {
  NONE,         ///< nothing holds it: assign succeeds now
  NO_WORKER,    ///< no worker offers a slot: none joined, or all have 0 slots (unhealthy, draining)
  BUSY,         ///< workers offer slots, and every one is in use
  LIST_RATE,    ///< a slot is free, and the task list's own bucket is empty
  WORKER_RATE,  ///< a slot is free, and every worker with one has an empty bucket of its own
};

/// One worker's credit as seen by its task list.
struct WorkerCredit {
  uint32_t slots = 0;   ///< the worker's slots for this task list
  uint32_t in_use = 0;  ///< assigned and not yet released; may exceed `slots` after set_slots
  uint32_t free() const { return in_use < slots ? slots - in_use : 0; }
};

/// The workers of one task list and their free slots.
///
/// Choice: most free slots first; among equals, the one assigned to longest ago (round-robin),
/// then the smaller id; a worker the task would avoid comes last. A worker whose own bucket is
/// empty is skipped; the global bucket is taken only together with a worker's, so a failed
/// assign takes nothing. assign is O(log n) while the best workers have tokens and O(n) at worst
/// (every free worker rate-limited); the rest is O(log n). Move-only (it keeps pointers into its
/// own nodes). Not thread-safe; one actor owns it.
class CreditPool {
 public:
  using TimePoint = TokenBucket::TimePoint;

  /// `global` limits the whole task list's dispatch rate. Default: unlimited.
  explicit CreditPool(TokenBucket global = TokenBucket::unlimited()) : global_(global) {}
  CreditPool(CreditPool&&) noexcept = default;
  CreditPool& operator=(CreditPool&&) noexcept = default;
  CreditPool(const CreditPool&) = delete;
  CreditPool& operator=(const CreditPool&) = delete;
  ~CreditPool() = default;

  /// Adds a worker with `slots` free slots and its own rate limit. False if `id` is known.
  [[nodiscard]] bool add_worker(std::string id, uint32_t slots,
                                TokenBucket rate = TokenBucket::unlimited());
  /// Changes a worker's slots (0 stops assignment, e.g. while it drains or is unhealthy). Slots in
  /// use above the new count stay in use; no new assignment happens until releases bring the
  /// worker under it. False if `id` is unknown.
  [[nodiscard]] bool set_slots(std::string_view id, uint32_t slots);
  /// Forgets a worker; returns the slots it had in use (whose invocations the caller fails over),
  /// or empty if `id` is unknown. Later releases for it return false.
  std::optional<uint32_t> remove_worker(std::string_view id);

  /// Picks a worker with a free slot whose bucket, and the global bucket, have a token at `now`,
  /// and takes the slot and both tokens. Empty when no worker can take a task now: see
  /// next_assign_time for when to try again. `avoid` (a retry's previous attempt failed on it)
  /// gets the task only when no other worker can take it now, so that a retry tries elsewhere
  /// but never waits for that (a one-worker list still retries).
  std::optional<std::string> assign(TimePoint now, std::string_view avoid = {});
  /// The same for one given worker (a task pinned to it, e.g. in a session). False, taking
  /// nothing, if it is unknown, has no free slot, or either bucket is empty.
  [[nodiscard]] bool assign_to(std::string_view id, TimePoint now);
  /// Takes a slot on `id` for an invocation it already runs (one the scheduler takes back after a
  /// restart): no tokens, and beyond its slots if need be, since the invocation runs whatever
  /// the count says. False if `id` is unknown.
  [[nodiscard]] bool claim(std::string_view id);
  /// Gives back one slot of `id`. False if `id` is unknown or has no slot in use.
  [[nodiscard]] bool release(std::string_view id);

  /// When assign can next succeed with no change but time passing: `now` if it can now, the
  /// time the buckets allow otherwise; empty when no worker has a free slot (wait for a release,
  /// set_slots or a new worker).
  std::optional<TimePoint> next_assign_time(TimePoint now) const;

  /// Why assign would give nothing at `now` (NONE if it would give a worker). O(1) unless a
  /// slot is free and the list's bucket has a token; then O(workers with a free slot).
  CreditHold hold(TimePoint now) const;

  std::optional<WorkerCredit> find_worker(std::string_view id) const;
  size_t worker_count() const { return workers_.size(); }
  /// Workers with slots (a worker with 0 slots, unhealthy or draining, is known but offers none).
  size_t offering_count() const { return offering_; }
  /// Free slots over all workers (rate limits aside).
  uint64_t free_slots() const { return free_slots_; }

 private:
  struct Worker {
    WorkerCredit credit;
    TokenBucket rate;
    uint64_t last_assigned = 0;  ///< 0: never
  };
  using Node = std::map<std::string, Worker, std::less<>>::value_type;
  /// Orders workers with free slots: most free, then least recently assigned, then id.
  struct Rank {
    bool operator()(const Node* a, const Node* b) const;
  };

  /// Takes `node` out of the ranking before a change to its credit or recency...
  void unrank(Node& node);
  /// ...and puts it back (if it has a free slot) after.
  void rank(Node& node);
  /// Takes a slot on `node` and the tokens; its bucket and the global one must have tokens.
  void take(Node& node, TimePoint now);

  TokenBucket global_;
  std::map<std::string, Worker, std::less<>> workers_;
  std::set<Node*, Rank> ranking_;  ///< the workers with a free slot, best first
  uint64_t free_slots_ = 0;
  size_t offering_ = 0;  ///< workers whose slots are not 0
  uint64_t assignments_ = 0;  ///< stamps `last_assigned`
};

}  // namespace troupe::actors
