// Every live actor of a scheduler node, by kind and id, for the admin shell. An actor takes a
// seat when it starts and leaves it when it ends (RosterSeat); the shell reads the roster and
// probes the actors it lists (actor_probe.hpp). A mutex and a map: one insert and one erase
// per actor's life, never per message.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <caf/actor_addr.hpp>

namespace troupe::actors {

/// Every kind of actor the roster lists, in the order people read them.
const std::vector<std::string>& actor_kinds();

class ActorRoster {
 public:
  struct Entry {
    std::string kind;  ///< workflow, task, session, worker, matching, directory, dispatcher
    std::string id;    ///< workflow id; WORKFLOW/TASK; WORKFLOW/SESSION; worker shard; task list
    int64_t started_us = 0;
    caf::actor_addr address;
  };

  /// Adds a live actor; the returned seat number takes it out again.
  uint64_t enter(Entry entry);
  void leave(uint64_t seat);

  /// The live actors of `kind` (empty: every kind), in no particular order.
  std::vector<Entry> entries(std::string_view kind = {}) const;
  /// The live actor with this id, of any kind; if ids of two kinds coincide, the first kind in
  /// alphabetical order.
  std::optional<Entry> find(std::string_view id) const;
  /// How many live actors of each kind.
  std::map<std::string, uint64_t> counts() const;
  /// At most `per_kind` live actors of each kind, kind after kind in alphabetical order: all of
  /// a kind that has no more, else a uniform random sample drawn from `seed` (in one pass,
  /// copying only what it keeps: actors wait for the roster to enter or leave it).
  std::vector<Entry> sample(size_t per_kind, uint64_t seed) const;

 private:
  mutable std::mutex mutex_;
  uint64_t next_seat_ = 1;
  std::unordered_map<uint64_t, Entry> entries_;
};

/// An actor's seat in the roster for as long as the seat lives (a member of its state). It
/// shares the roster: an actor's state may outlive whatever else held it at shutdown. No
/// roster: no seat.
class RosterSeat {
 public:
  RosterSeat() = default;
  RosterSeat(std::shared_ptr<ActorRoster> roster, ActorRoster::Entry entry)
      : roster_(std::move(roster)), seat_(roster_ ? roster_->enter(std::move(entry)) : 0) {}
  RosterSeat(const RosterSeat&) = delete;
  RosterSeat& operator=(const RosterSeat&) = delete;
  RosterSeat(RosterSeat&& other) noexcept : roster_(std::move(other.roster_)), seat_(other.seat_) {}
  RosterSeat& operator=(RosterSeat&& other) noexcept {
    if (this != &other) {
      release();
      roster_ = std::move(other.roster_);
      seat_ = other.seat_;
    }
    return *this;
  }
  ~RosterSeat() { release(); }

 private:
  void release() {
    if (roster_) roster_->leave(seat_);
    roster_.reset();
  }
  std::shared_ptr<ActorRoster> roster_;
  uint64_t seat_ = 0;
};

}  // namespace troupe::actors
