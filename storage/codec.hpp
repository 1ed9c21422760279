// Encoding of history events and index records as Cap'n Proto messages. Includes capnp:
// include it only where events are built or inspected, not from widely used headers.
#pragma once

#include <memory>
#include <map>
#include <string>
#include <string_view>

#include <capnp/message.h>

#include "schema/history.capnp.h"
#include "storage/history_store.hpp"

namespace troupe::storage {

/// Serialises a message whose root is a schema::EventBody into NewEvent::body form.
std::string encode_body(capnp::MessageBuilder& message);

/// Builds NewEvent::body with `fill` applied to a fresh EventBody builder, e.g.
/// `make_body([](auto b) { b.setWorkflowStarted(); })`.
template <class Fill>
std::string make_body(Fill&& fill) {
  // Bodies are small; capnp's default first segment would zero 8 KiB per event.
  capnp::MallocMessageBuilder message(64);
  fill(message.initRoot<schema::EventBody>());
  return encode_body(message);
}

/// The packed HistoryEvent for `event` at `sequence`. INVALID_ARGUMENT if the body is not a
/// well-formed EventBody message.
Result<std::string> compose_event(uint64_t sequence, const NewEvent& event);

/// A decoded history event, its pointers checked. Owns its bytes; cheap to move. A Text field
/// is checked for its closing NUL only when read, where a damaged one throws kj::Exception:
/// readers of stored events catch it (actors::apply makes it CORRUPTION).
class DecodedEvent {
 public:
  /// Unpacks `packed`. INVALID_ARGUMENT if it is not a well-formed HistoryEvent.
  static Result<DecodedEvent> decode(std::string_view packed);

  schema::HistoryEvent::Reader get() const;

 private:
  struct Holder;
  explicit DecodedEvent(std::shared_ptr<const Holder> holder) : holder_(std::move(holder)) {}
  std::shared_ptr<const Holder> holder_;
};

/// Whether a batch whose first event is `first` (a packed HistoryEvent as compose_event makes
/// it; null for an empty batch) may begin the history of `workflow_id`, which has neither events
/// nor a record: only a workflowSubmitted event may. Anything else is an append to a workflow
/// that is gone (purged while an actor still held it) and would leave a history replay cannot
/// read: NOT_FOUND, saying so.
Result<void> check_history_start(std::string_view workflow_id, const std::string* first);

std::string encode_workflow_record(const WorkflowRecord& record);
/// INVALID_ARGUMENT if `bytes` is not a WorkflowRecord.
Result<WorkflowRecord> decode_workflow_record(std::string_view bytes);

std::string encode_worker_record(const WorkerRecord& record);
/// A worker record's drain and failures as history.capnp has them: the record's value, and
/// the client API's WorkerSummary, which carries the same structs.
void write_worker_drain(schema::WorkerDrain::Builder out, const WorkerDrainRecord& drain);
void write_worker_failures(capnp::List<schema::WorkerFailure>::Builder out,
                           const std::vector<WorkerFailureRecord>& failures);
/// A worker's task lists and slots as the record and its journal's workerRegistered keep them.
void write_task_list_slots(capnp::List<schema::TaskListSlots>::Builder out,
                           const std::map<std::string, uint32_t>& task_lists);
/// INVALID_ARGUMENT if `bytes` is not a WorkerRecord.
Result<WorkerRecord> decode_worker_record(std::string_view bytes);

}  // namespace troupe::storage
