// The history writer: actors send it event batches; it hands them to the store, whose group
// commit coalesces the batches of every actor into one WriteBatch and one sync, and replies to
// each sender once its batch is durable.
#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/ports.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

/// `store` must accept appends until the actor system stops. A failed append is replied as
/// the store's error; after it the store is fail-stopped and so is every later append.
history_writer_actor spawn_history_writer(caf::actor_system& system,
                                          std::shared_ptr<storage::HistoryStore> store);

}  // namespace troupe::actors
