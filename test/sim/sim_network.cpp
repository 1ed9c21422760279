// Calls over a simulated connection: delays, order, duplicates, breaks and half-open links.
#include "test/sim/sim_network.hpp"

#include <sstream>

namespace troupe::sim {

std::string NetworkProfile::describe() const {
  std::ostringstream out;
  out << "latency " << show(min_latency) << ".." << show(max_latency) << ", spike " << spike
      << " (up to " << show(spike_max) << "), reorder " << reorder << ", duplicate " << duplicate
      << ", break " << breaks << ", hang " << hangs;
  return out.str();
}

/// How long a caller takes to hear that its connection broke.
constexpr Duration noticed_within = 20ms;

Time Connection::arrival(Side to) {
  Time at = world_.now() + world_.between(profile_.min_latency, profile_.max_latency);
  if (world_.chance(profile_.spike)) at += world_.between(Duration::zero(), profile_.spike_max);
  if (stalled_until_ > world_.now()) at = std::max(at, stalled_until_ + profile_.min_latency);
  auto& last = last_arrival_[static_cast<size_t>(to)];
  if (world_.chance(profile_.reorder)) return at;  // overtakes, or is overtaken by, its neighbours
  at = std::max(at, last);
  last = at;
  return at;
}

void Connection::call(Side from, std::function<void(Responder)> handle, std::function<void()> failed,
                      bool may_repeat) {
  if (!open_) {
    world_.after(Duration::zero(), std::move(failed));
    return;
  }
  const uint64_t id = next_call_++;
  pending_.emplace(id, std::move(failed));
  const Side to = from == Side::WORKER ? Side::SCHEDULER : Side::WORKER;
  const Time at = arrival(to);
  if (world_.chance(profile_.breaks)) {
    // Lost, and the connection with it: the break comes before the request would have arrived.
    auto self = shared_from_this();
    world_.at(world_.between(world_.now(), at), [self] { self->close("a message was lost"); });
  } else if (world_.chance(profile_.hangs)) {
    hang(world_.between(profile_.hang_noticed_min, profile_.hang_noticed_max));
  }
  auto self = shared_from_this();
  world_.at(at, [self, id, from, handle] { self->deliver_request(id, from, handle, false); });
  if (may_repeat && world_.chance(profile_.duplicate)) {
    const Time again = at + world_.between(Duration::zero(), 300ms);
    world_.at(again, [self, id, from, handle] { self->deliver_request(id, from, handle, true); });
  }
}

void Connection::deliver_request(uint64_t id, Side from, std::function<void(Responder)> handle, bool duplicate) {
  if (!open_ || silent_) return;  // lost; its caller fails when the break is noticed
  auto self = shared_from_this();
  handle([self, id, from, duplicate](std::function<void()> reply) {
    if (duplicate || !self->open_ || self->silent_) return;
    const Time at = self->arrival(from);
    self->world_.at(at, [self, id, reply = std::move(reply)] {
      if (!self->open_ || self->silent_) return;
      auto it = self->pending_.find(id);
      if (it == self->pending_.end()) return;
      self->pending_.erase(it);
      reply();
    });
  });
}

void Connection::close(const std::string& why) {
  if (!open_) return;
  open_ = false;
  world_.note("connection " + label_ + " breaks: " + why);
  for (auto& [id, failed] : pending_) world_.after(world_.between(Duration::zero(), noticed_within), std::move(failed));
  pending_.clear();
  if (on_disconnect) world_.after(world_.between(Duration::zero(), noticed_within), std::move(on_disconnect));
  on_disconnect = nullptr;
}

void Connection::hang(Duration noticed) {
  if (!open_ || silent_) return;
  silent_ = true;
  world_.note("connection " + label_ + " goes half-open" +
              (noticed == never ? std::string(", never noticed") : ", noticed after " + show(noticed)));
  if (noticed == never) return;
  auto self = shared_from_this();
  world_.after(noticed, [self] { self->close("it was half-open"); });
}

void Connection::stall(Time until) {
  if (!open_) return;
  world_.note("connection " + label_ + " stalls until " + show(until));
  stalled_until_ = std::max(stalled_until_, until);
}

}  // namespace troupe::sim
