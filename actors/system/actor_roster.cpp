#include "actors/system/actor_roster.hpp"

#include <random>

namespace troupe::actors {

const std::vector<std::string>& actor_kinds() {
  static const std::vector<std::string> kinds = {"workflow", "task",       "session",   "worker",
                                                 "matching", "directory", "dispatcher"};
  return kinds;
}

uint64_t ActorRoster::enter(Entry entry) {
  std::lock_guard lock(mutex_);
  const uint64_t seat = next_seat_++;
  entries_.emplace(seat, std::move(entry));
  return seat;
}

void ActorRoster::leave(uint64_t seat) {
  std::lock_guard lock(mutex_);
  entries_.erase(seat);
}

std::vector<ActorRoster::Entry> ActorRoster::entries(std::string_view kind) const {
  std::lock_guard lock(mutex_);
  std::vector<Entry> out;
  out.reserve(kind.empty() ? entries_.size() : 0);
  for (const auto& [seat, entry] : entries_) {
    if (kind.empty() || entry.kind == kind) out.push_back(entry);
  }
  return out;
}

std::optional<ActorRoster::Entry> ActorRoster::find(std::string_view id) const {
  std::lock_guard lock(mutex_);
  const Entry* found = nullptr;
  for (const auto& [seat, entry] : entries_) {
    if (entry.id == id && (!found || entry.kind < found->kind)) found = &entry;
  }
  if (!found) return std::nullopt;
  return *found;
}

std::map<std::string, uint64_t> ActorRoster::counts() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, uint64_t> out;
  for (const auto& [seat, entry] : entries_) ++out[entry.kind];
  return out;
}

std::vector<ActorRoster::Entry> ActorRoster::sample(size_t per_kind, uint64_t seed) const {
  if (per_kind == 0) return {};
  std::mt19937_64 random(seed);
  // Reservoir sampling per kind: the i-th actor of a kind replaces a kept one with chance
  // per_kind / i.
  std::map<std::string_view, std::pair<uint64_t, std::vector<Entry>>> kept;  // kind: seen, kept
  std::lock_guard lock(mutex_);
  for (const auto& [seat, entry] : entries_) {
    auto& [seen, reservoir] = kept[entry.kind];
    ++seen;
    if (reservoir.size() < per_kind) {
      reservoir.push_back(entry);
      continue;
    }
    const uint64_t slot = std::uniform_int_distribution<uint64_t>(0, seen - 1)(random);
    if (slot < per_kind) reservoir[slot] = entry;
  }
  std::vector<Entry> out;
  for (auto& [kind, seen_kept] : kept) {
    for (auto& entry : seen_kept.second) out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace troupe::actors
