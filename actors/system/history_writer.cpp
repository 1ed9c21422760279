#include "actors/system/history_writer.hpp"

#include <caf/send.hpp>

namespace troupe::actors {

void HistoryWriter::append(const persisted_port& to, std::string workflow_id, EventBatch batch,
                           uint64_t ticket) const {
  std::optional<storage::WorkflowRecord> record;
  if (batch.has_record) record = std::move(batch.record);
  // The callback runs on the store's commit thread: it only sends.
  store_->append(std::move(workflow_id), std::move(batch.events), std::move(record),
                 [to, ticket](Result<storage::AppendReceipt> outcome) {
                   if (outcome) {
                     caf::anon_send(to, persisted_atom::value, ticket, true, *outcome, std::string(), uint8_t{0});
                   } else {
                     caf::anon_send(to, persisted_atom::value, ticket, false, storage::AppendReceipt{},
                                    outcome.error().message, static_cast<uint8_t>(outcome.error().code));
                   }
                 });
}

}  // namespace troupe::actors
