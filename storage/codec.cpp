// Cap'n Proto encoding of events and records. kj exceptions raised by malformed input are
// caught here and become INVALID_ARGUMENT: this is the boundary where bytes become messages.
#include "storage/codec.hpp"

#include <cstdint>
#include <cstring>
#include <optional>

#include <capnp/serialize-packed.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/io.h>

namespace troupe::storage {
namespace {

/// First segment of the builders that compose events, in words: a typical event fits, and
/// capnp's default (1024 words) would zero 8 KiB per event.
constexpr unsigned event_segment_words = 128;

static_assert(static_cast<int>(ActorKind::WORKFLOW) == static_cast<int>(schema::ActorKind::WORKFLOW));
static_assert(static_cast<int>(ActorKind::TASK) == static_cast<int>(schema::ActorKind::TASK));
static_assert(static_cast<int>(ActorKind::SESSION) == static_cast<int>(schema::ActorKind::SESSION));
static_assert(static_cast<int>(ActorKind::WORKER) == static_cast<int>(schema::ActorKind::WORKER));
static_assert(static_cast<int>(WorkflowStatus::OPEN) == static_cast<int>(schema::WorkflowStatus::OPEN));
static_assert(static_cast<int>(WorkflowStatus::CLOSED) ==
              static_cast<int>(schema::WorkflowStatus::CLOSED));

/// Appends what capnp writes to a std::string: a packed message lands where it is kept,
/// without a buffer of its own (kj::VectorOutputStream starts at 4 KiB) and a copy.
class StringOutputStream final : public kj::OutputStream {
 public:
  explicit StringOutputStream(std::string& out) : out_(out) {}
  void write(const void* buffer, size_t size) override { out_.append(static_cast<const char*>(buffer), size); }

 private:
  std::string& out_;
};

std::string pack(capnp::MessageBuilder& message) {
  std::string packed;
  packed.reserve(capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word));
  StringOutputStream out(packed);
  capnp::writePackedMessage(out, message);
  return packed;
}

/// The words of a flat (unpacked) message, as FlatArrayMessageReader needs them: `bytes` itself
/// when word-aligned (a heap-allocated string's data is), else an aligned copy in `copy`.
kj::ArrayPtr<const capnp::word> aligned_words(std::string_view bytes, kj::Array<capnp::word>& copy) {
  const size_t count = bytes.size() / sizeof(capnp::word);
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(capnp::word) == 0) {
    return kj::arrayPtr(reinterpret_cast<const capnp::word*>(bytes.data()), count);
  }
  copy = kj::heapArray<capnp::word>(count);
  std::memcpy(copy.begin(), bytes.data(), count * sizeof(capnp::word));
  return copy;
}

/// Runs `decode` on an unpacked message from `packed`; kj exceptions become INVALID_ARGUMENT.
template <class T, class Decode>
Result<T> with_packed_reader(std::string_view packed, std::string_view what, Decode&& decode) {
  try {
    // Outside the reader's scope: its destructor reads on to the message's end and throws when
    // the bytes end first, and not every compiler destroys a value already returned then
    // (clang 14 does not).
    std::optional<T> decoded;
    {
      kj::ArrayInputStream in(
          kj::arrayPtr(reinterpret_cast<const kj::byte*>(packed.data()), packed.size()));
      capnp::PackedMessageReader reader(in);
      decoded.emplace(decode(reader));
    }
    return std::move(*decoded);
  } catch (const kj::Exception& e) {
    return fail(Errc::INVALID_ARGUMENT,
                "malformed " + std::string(what) + ": " + e.getDescription().cStr());
  }
}

std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }
std::string data(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}
kj::ArrayPtr<const kj::byte> bytes_of(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

}  // namespace

std::string encode_body(capnp::MessageBuilder& message) {
  auto words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

Result<std::string> compose_event(uint64_t sequence, const NewEvent& event) {
  if (event.body.empty() || event.body.size() % sizeof(capnp::word) != 0) {
    return fail(Errc::INVALID_ARGUMENT, "event body of " + std::to_string(event.body.size()) +
                                            " bytes is not a serialised EventBody message");
  }
  try {
    kj::Array<capnp::word> copy;
    capnp::FlatArrayMessageReader body_reader(aligned_words(event.body, copy));
    capnp::MallocMessageBuilder message(event_segment_words);
    auto root = message.initRoot<schema::HistoryEvent>();
    root.setSequence(sequence);
    root.setTimestampUs(event.timestamp_us);
    root.setActorKind(static_cast<schema::ActorKind>(event.actor_kind));
    root.setActorId(event.actor_id);
    root.setAttempt(event.attempt);
    root.setBody(body_reader.getRoot<schema::EventBody>());  // deep copy: validates the body
    return pack(message);
  } catch (const kj::Exception& e) {
    return fail(Errc::INVALID_ARGUMENT,
                std::string("malformed event body: ") + e.getDescription().cStr());
  }
}

struct DecodedEvent::Holder {
  kj::Array<capnp::word> words;
  capnp::FlatArrayMessageReader reader;
  explicit Holder(kj::Array<capnp::word> w) : words(kj::mv(w)), reader(words) {}
};

Result<DecodedEvent> DecodedEvent::decode(std::string_view packed) {
  return with_packed_reader<DecodedEvent>(packed, "history event", [](capnp::MessageReader& r) {
    // Copy into a flat message the holder owns, checking every pointer on the way.
    capnp::MallocMessageBuilder copy(event_segment_words);
    copy.setRoot(r.getRoot<schema::HistoryEvent>());
    auto holder = std::make_shared<Holder>(capnp::messageToFlatArray(copy));
    return DecodedEvent(std::move(holder));
  });
}

schema::HistoryEvent::Reader DecodedEvent::get() const {
  return const_cast<capnp::FlatArrayMessageReader&>(holder_->reader)
      .getRoot<schema::HistoryEvent>();
}

Result<void> check_history_start(std::string_view workflow_id, const std::string* first) {
  if (first != nullptr) {
    auto event = DecodedEvent::decode(*first);
    if (!event) return event.error();
    if (event->get().getBody().isWorkflowSubmitted()) return ok();
  }
  return fail(Errc::NOT_FOUND, "workflow '" + std::string(workflow_id) + "' no longer exists: it was purged");
}

std::string encode_workflow_record(const WorkflowRecord& record) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<schema::WorkflowRecord>();
  root.setStatus(static_cast<schema::WorkflowStatus>(record.status));
  root.setDefinitionName(record.definition_name);
  root.setDefinitionDigest(bytes_of(record.definition_digest));
  root.setCreatedUs(record.created_us);
  root.setClosedUs(record.closed_us);
  root.setFinalState(record.final_state);
  if (!record.live_state.empty()) root.setLiveState(record.live_state);
  return pack(message);
}

Result<WorkflowRecord> decode_workflow_record(std::string_view bytes) {
  return with_packed_reader<WorkflowRecord>(bytes, "workflow record", [](capnp::MessageReader& r) {
    auto root = r.getRoot<schema::WorkflowRecord>();
    WorkflowRecord record;
    record.status = static_cast<WorkflowStatus>(root.getStatus());
    record.definition_name = text(root.getDefinitionName());
    record.definition_digest = data(root.getDefinitionDigest());
    record.created_us = root.getCreatedUs();
    record.closed_us = root.getClosedUs();
    record.final_state = text(root.getFinalState());
    record.live_state = text(root.getLiveState());
    return record;
  });
}

void write_worker_drain(schema::WorkerDrain::Builder out, const WorkerDrainRecord& drain) {
  out.setImmediate(drain.immediate);
  out.setDeadlineUs(drain.deadline_us);
  out.setExitWhenDrained(drain.exit_when_drained);
  out.setRequestedUs(drain.requested_us);
}

void write_task_list_slots(capnp::List<schema::TaskListSlots>::Builder out,
                           const std::map<std::string, uint32_t>& task_lists) {
  unsigned i = 0;
  for (const auto& [name, slots] : task_lists) {
    if (i == out.size()) break;
    out[i].setTaskList(name);
    out[i].setSlots(slots);
    ++i;
  }
}

void write_worker_failures(capnp::List<schema::WorkerFailure>::Builder out,
                           const std::vector<WorkerFailureRecord>& failures) {
  for (unsigned i = 0; i < out.size() && i < failures.size(); ++i) {
    out[i].setTask(failures[i].task);
    out[i].setReason(failures[i].reason);
    out[i].setAtUs(failures[i].at_us);
  }
}

std::string encode_worker_record(const WorkerRecord& record) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<schema::WorkerRecord>();
  root.setWorkerId(record.worker_id);
  root.setHostname(record.hostname);
  root.setResourceId(record.resource_id);
  root.setFirstRegisteredUs(record.first_registered_us);
  root.setLastRegisteredUs(record.last_registered_us);
  root.setPid(record.pid);
  root.setInstanceId(record.instance_id);
  write_task_list_slots(root.initTaskLists(static_cast<unsigned>(record.task_lists.size())), record.task_lists);
  root.setLastSeenUs(record.last_seen_us);
  root.setRegistrations(record.registrations);
  root.setStatus(record.status);
  root.setStanding(record.standing);
  write_worker_drain(root.initDrain(), record.drain);
  root.setQuarantinedUntilUs(record.quarantined_until_us);
  root.setQuarantines(record.quarantines);
  write_worker_failures(root.initFailures(static_cast<unsigned>(record.failures.size())), record.failures);
  return pack(message);
}

Result<WorkerRecord> decode_worker_record(std::string_view bytes) {
  return with_packed_reader<WorkerRecord>(bytes, "worker record", [](capnp::MessageReader& r) {
    auto root = r.getRoot<schema::WorkerRecord>();
    WorkerRecord record;
    record.worker_id = text(root.getWorkerId());
    record.hostname = text(root.getHostname());
    record.resource_id = text(root.getResourceId());
    record.first_registered_us = root.getFirstRegisteredUs();
    record.last_registered_us = root.getLastRegisteredUs();
    record.pid = root.getPid();
    record.instance_id = text(root.getInstanceId());
    for (auto list : root.getTaskLists()) record.task_lists[text(list.getTaskList())] = list.getSlots();
    record.last_seen_us = root.getLastSeenUs();
    record.registrations = root.getRegistrations();
    record.status = text(root.getStatus());
    record.standing = text(root.getStanding());
    auto drain = root.getDrain();
    record.drain.immediate = drain.getImmediate();
    record.drain.deadline_us = drain.getDeadlineUs();
    record.drain.exit_when_drained = drain.getExitWhenDrained();
    record.drain.requested_us = drain.getRequestedUs();
    record.quarantined_until_us = root.getQuarantinedUntilUs();
    record.quarantines = root.getQuarantines();
    for (auto f : root.getFailures()) {
      record.failures.push_back({text(f.getTask()), text(f.getReason()), f.getAtUs()});
    }
    return record;
  });
}

}  // namespace troupe::storage
