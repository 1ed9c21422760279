// Building and reading the history events actors persist. Includes Cap'n Proto: include it
// from actor .cpp files and tests only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <capnp/serialize.h>

#include "schema/history.capnp.h"
#include "storage/codec.hpp"

namespace troupe::actors {

/// An event of `actor_kind`/`actor_id` at `now_us`, with a body filled in by `fill`.
template <class Fill>
storage::NewEvent make_event(storage::ActorKind kind, std::string_view actor_id, uint32_t attempt,
                             int64_t now_us, Fill&& fill) {
  storage::NewEvent event;
  event.timestamp_us = now_us;
  event.actor_kind = kind;
  event.actor_id = std::string(actor_id);
  event.attempt = attempt;
  event.body = storage::make_body(std::forward<Fill>(fill));
  return event;
}

/// What a model needs of an event to apply it: the same for an event about to be persisted
/// and for one read back from the history, so live operation and replay share one path.
struct EventView {
  int64_t timestamp_us = 0;
  uint32_t attempt = 0;
  std::string_view actor_id;  ///< the task name for task events
  schema::EventBody::Reader body;
};

/// A NewEvent's body readable in place (the body is a flat message). Keeps `event` borrowed.
class NewEventReader {
 public:
  explicit NewEventReader(const storage::NewEvent& event);
  EventView view() const;

 private:
  const storage::NewEvent& event_;
  kj::Array<capnp::word> words_;
  capnp::FlatArrayMessageReader reader_;
};

/// The view of a stored event.
inline EventView view_of(const schema::HistoryEvent::Reader& event) {
  auto actor = event.getActorId();
  return EventView{event.getTimestampUs(), event.getAttempt(),
                   std::string_view(actor.cStr(), actor.size()), event.getBody()};
}

/// Appends `key=LENGTH:value;` to a model's canonical text: the length prefix keeps a value from
/// being mistaken for the fields after it.
inline void canonical_field(std::string& out, const char* key, const std::string& value) {
  out += key;
  out += '=';
  out += std::to_string(value.size());
  out += ':';
  out += value;
  out += ';';
}

inline std::string to_string(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }
inline std::string to_string(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}
inline kj::ArrayPtr<const kj::byte> as_bytes(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

}  // namespace troupe::actors
