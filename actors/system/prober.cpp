#include "actors/system/prober.hpp"

#include <memory>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/duration.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>

namespace troupe::actors {
namespace {

struct Collection {
  std::vector<ProbedActor> actors;
  size_t pending = 0;
  std::function<void(std::vector<ProbedActor>)> done;

  /// Hands the answers over once none is pending: the actors that ended meanwhile left out.
  void one_less(caf::event_based_actor* self) {
    if (--pending > 0) return;
    std::vector<ProbedActor> out;
    out.reserve(actors.size());
    for (auto& a : actors) {
      if (a.error != "ended") out.push_back(std::move(a));
    }
    done(std::move(out));
    self->quit();
  }
};

}  // namespace

void probe_actors(caf::actor_system& system, std::vector<ActorRoster::Entry> entries, std::chrono::milliseconds timeout,
                  std::function<void(std::vector<ProbedActor>)> done) {
  system.spawn([entries = std::move(entries), timeout, done = std::move(done)](caf::event_based_actor* self) mutable {
    auto collection = std::make_shared<Collection>();
    collection->done = std::move(done);
    collection->pending = entries.size() + 1;  // one for the loop itself, so nothing completes early
    collection->actors.resize(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      auto& slot = collection->actors[i];
      slot.entry = std::move(entries[i]);
      auto handle = caf::actor_cast<probe_port>(slot.entry.address);
      if (!handle) {
        slot.error = "ended";
        collection->one_less(self);
        continue;
      }
      // A caf::duration, not a std::chrono one: CAF 0.17's overload for the latter drops the
      // priority, and the probe would wait behind the backlog it is to measure.
      self->request<caf::message_priority::high>(handle, caf::duration{timeout}, probe_atom::value)
          .then(
              [self, collection, i](ProbeAnswer& answer) {
                collection->actors[i].probe = std::move(answer);
                collection->one_less(self);
              },
              [self, collection, i, timeout](caf::error& e) {
                collection->actors[i].error =
                    e == caf::sec::request_timeout
                        ? "no answer within " + std::to_string(timeout.count()) + "ms: busy in one long step, or stuck"
                        : "ended";
                collection->one_less(self);
              });
    }
    collection->one_less(self);
  });
}

}  // namespace troupe::actors
