// The history writer: actors append their event batches through it to the store, whose group
// commit coalesces the batches of every actor into one WriteBatch and one sync, and it tells
// each actor once its batch is durable.
//
// Not an actor of its own: a writer actor between the actors and the store cost every append
// two more messages (the request, and the store's answer relayed back as a reply) and put
// every append of the node through one mailbox. The store is thread-safe, so an actor hands
// it its batch directly and the store's callback sends the one message the actor waits for.
#pragma once

#include <memory>
#include <string>

#include "actors/ports.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

class HistoryWriter {
 public:
  HistoryWriter() = default;
  /// `store` must accept appends until the actor system stops. After a failed write the
  /// store is fail-stopped, and so is every later append; an append it refuses (NOT_FOUND: the
  /// workflow was purged meanwhile) fails alone. Either way the actor fail-stops its workflow.
  explicit HistoryWriter(std::shared_ptr<storage::HistoryStore> store) : store_(std::move(store)) {}

  /// Appends `batch` to the history of `workflow_id`. Once it is durable (or failed), `to` gets
  /// persisted_atom with `ticket`, whether it succeeded, the receipt, and the store's error.
  void append(const persisted_port& to, std::string workflow_id, EventBatch batch, uint64_t ticket) const;

 private:
  std::shared_ptr<storage::HistoryStore> store_;
};

}  // namespace troupe::actors
