// Probes a set of live actors at once, for the admin shell: each is asked at high priority (so
// the probe overtakes its backlog), and the answers are handed over together once all came or
// the time ran out. An actor that does not answer in time is itself news: it is busy in one
// long handler, or stuck.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/system/actor_probe.hpp"
#include "actors/system/actor_roster.hpp"

namespace troupe::actors {

struct ProbedActor {
  ActorRoster::Entry entry;
  ProbeAnswer probe;  ///< null when it did not answer
  std::string error;  ///< why it did not: "no answer within 2s", "ended"
};

/// Probes `entries` and calls `done` once, from an actor's thread, with one ProbedActor per
/// entry in the same order. An actor that ended meanwhile is left out.
void probe_actors(caf::actor_system& system, std::vector<ActorRoster::Entry> entries, std::chrono::milliseconds timeout,
                  std::function<void(std::vector<ProbedActor>)> done);

}  // namespace troupe::actors
