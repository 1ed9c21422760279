// NewEventReader: reads a body that make_body() flattened.
#include "actors/history_events.hpp"

#include <cstring>

namespace troupe::actors {
namespace {

kj::Array<capnp::word> words_of(const std::string& body) {
  auto words = kj::heapArray<capnp::word>(body.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), body.data(), words.size() * sizeof(capnp::word));
  return words;
}

}  // namespace

NewEventReader::NewEventReader(const storage::NewEvent& event)
    : event_(event), words_(words_of(event.body)), reader_(words_) {}

EventView NewEventReader::view() const {
  return EventView{event_.timestamp_us, event_.attempt, event_.actor_id,
                   const_cast<capnp::FlatArrayMessageReader&>(reader_).getRoot<schema::EventBody>()};
}

}  // namespace troupe::actors
