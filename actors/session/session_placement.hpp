// Which worker a session goes to, as plain code: workers offer session slots
// (max_concurrent_sessions) and declare a resource id and the task lists they serve; sessions
// ask for a worker, perhaps of one resource, that serves every task list of their tasks. The
// oldest request that some worker can take is placed first; a request no worker can take does
// not hold back the others. Not thread-safe; one actor owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace troupe::actors {

struct SessionRequest {
  std::string key;                    ///< the session, e.g. WORKFLOW/SESSION
  std::string resource_id;            ///< only a worker declaring it may take it; empty: any
  std::set<std::string> task_lists;   ///< the worker must serve every one
  /// A recreated session: the worker it lost, taken only when no other can take it now.
  std::string avoid_shard;
  /// Only this worker may take it (a recreate token naming a worker without a resource id).
  std::string only_shard{};
};

class SessionPlacement {
 public:
  /// A worker offers `max_sessions` session slots (0: it takes no session) for `resource_id`.
  /// Joining again replaces what it offered; sessions it holds keep their slots.
  void join(const std::string& shard, std::string resource_id, uint32_t max_sessions,
            std::set<std::string> task_lists);
  /// The worker is gone: it offers nothing, and the slots of the sessions it held go with it
  /// (they are the caller's to fail over; one re-established there claims a slot again).
  void leave(const std::string& shard);
  /// Whether the worker takes new sessions now (its health and standing allow it).
  void accepting(const std::string& shard, bool accepts);

  /// Queues a request; false if one with its key waits already.
  bool request(SessionRequest request);
  /// Takes a waiting request back (placed elsewhere, timed out, cancelled); false if none waits.
  bool withdraw(const std::string& key);

  /// Places every waiting request some worker can take, oldest first: (key, shard) for each.
  /// Each placement takes one of the worker's slots until release().
  std::vector<std::pair<std::string, std::string>> place();
  /// Session `key` takes a slot on `shard` without a request: its worker came back for it
  /// (re-establishment), or a restarted scheduler counts what its workers hold. False if the
  /// worker is unknown or full; true if the session holds a slot there already.
  bool claim(const std::string& key, const std::string& shard);
  /// One placement of session `key` on `shard` holds its slot no more (the session closed,
  /// failed, lost its worker, or turned the placement down). No-op if it holds none there.
  void release(const std::string& key, const std::string& shard);

  /// Why request `key` waits, in words: "no live worker declares resource 'gpu0'", "no worker
  /// serves task lists 'a' and 'b' together", "every worker that fits holds as many sessions as
  /// it takes (1 of 1)", "the workers that fit take no sessions now (draining, quarantined or
  /// unhealthy)". Empty if it does not wait.
  std::string why_waiting(const std::string& key) const;

  size_t waiting() const { return requests_.size(); }
  /// Sessions placed on `shard` and not released.
  uint32_t held(const std::string& shard) const;

 private:
  struct Worker {
    std::string resource_id;
    uint32_t slots = 0;
    /// The sessions holding its slots: a session placed twice (a placement it turned down, not
    /// yet given back, and the one it took) holds two until it gives one back.
    std::multiset<std::string> sessions;
    std::set<std::string> task_lists;
    bool accepts = true;
    uint64_t last_placed = 0;  ///< placement counter when it last took one; 0: never
  };
  /// Whether `worker` could ever hold `request` (resource and task lists), whatever its load.
  static bool fits(const Worker& worker, const SessionRequest& request);
  std::optional<std::string> choose(const SessionRequest& request) const;

  std::map<std::string, Worker> workers_;
  std::vector<SessionRequest> requests_;  ///< oldest first
  uint64_t placements_ = 0;
};

}  // namespace troupe::actors
