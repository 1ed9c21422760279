// The history writer actor. The store calls back on its own thread; the callback only sends
// the outcome back into this actor's mailbox, where the response promise is delivered.
#include "actors/system/history_writer.hpp"

#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

namespace troupe::actors {
namespace {

struct HistoryWriterState {
  static inline const char* name = "history_writer";
  std::shared_ptr<storage::HistoryStore> store;
  uint64_t next_ticket = 0;
  std::unordered_map<uint64_t, caf::typed_response_promise<storage::AppendReceipt>> pending;
};

history_writer_actor::behavior_type history_writer(
    history_writer_actor::stateful_pointer<HistoryWriterState> self,
    std::shared_ptr<storage::HistoryStore> store) {
  self->state.store = std::move(store);
  return {
      [=](append_atom, std::string workflow_id,
          EventBatch batch) -> caf::result<storage::AppendReceipt> {
        auto promise = self->make_response_promise<storage::AppendReceipt>();
        const uint64_t ticket = self->state.next_ticket++;
        self->state.pending.emplace(ticket, promise);
        auto me = caf::actor_cast<history_writer_actor>(self);
        std::optional<storage::WorkflowRecord> record;
        if (batch.has_record) record = std::move(batch.record);
        self->state.store->append(
            std::move(workflow_id), std::move(batch.events), std::move(record),
            [me, ticket](Result<storage::AppendReceipt> outcome) {
              if (outcome) {
                caf::anon_send(me, persisted_atom::value, ticket, true, *outcome, std::string(),
                               uint8_t{0});
              } else {
                caf::anon_send(me, persisted_atom::value, ticket, false, storage::AppendReceipt{},
                               outcome.error().message, static_cast<uint8_t>(outcome.error().code));
              }
            });
        return promise;
      },
      [=](persisted_atom, uint64_t ticket, bool ok, storage::AppendReceipt receipt,
          const std::string& error, uint8_t code) {
        auto it = self->state.pending.find(ticket);
        if (it == self->state.pending.end()) return;
        if (ok) {
          it->second.deliver(receipt);
        } else {
          it->second.deliver(to_caf(Error{static_cast<Errc>(code), error}));
        }
        self->state.pending.erase(it);
      },
  };
}

}  // namespace

history_writer_actor spawn_history_writer(caf::actor_system& system,
                                          std::shared_ptr<storage::HistoryStore> store) {
  return system.spawn(history_writer, std::move(store));
}

}  // namespace troupe::actors
