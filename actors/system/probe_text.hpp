// Small words shared by the actors' probes (actor_probe.hpp).
#pragma once

#include <cstdint>
#include <string>

namespace troupe::actors {

/// A moment as UTC "2026-11-24T10:00:00.123Z"; "-" for 0.
std::string probe_time(int64_t us);

/// "N events to be written to the history store", or empty for none: an actor acts on an
/// event only once it is durable, so a slow store is what it waits for then.
std::string waiting_for_durability(size_t events);

}  // namespace troupe::actors
