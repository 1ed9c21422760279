#include "actors/system/actor_roster.hpp"

namespace troupe::actors {

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

}  // namespace troupe::actors
