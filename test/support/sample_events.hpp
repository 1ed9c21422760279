// Events with self-checking content, for store tests and the crash-test child: the progress
// bytes are a pure function of (writer, counter, index), so a torn or misplaced record is
// detected by recomputing them.
#pragma once

#include <cstdint>
#include <string>

#include "storage/codec.hpp"

namespace troupe::test {

/// `length` bytes determined by (writer, counter, index).
inline std::string progress_pattern(uint32_t writer, uint32_t counter, uint32_t index,
                                    size_t length = 96) {
  std::string bytes(length, '\0');
  uint64_t x = (uint64_t{writer} << 40) ^ (uint64_t{counter} << 8) ^ index ^ 0x9e3779b97f4a7c15;
  for (auto& c : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return bytes;
}

/// A task heartbeat event of `writer`'s `counter`-th append, `index`-th event in it.
inline storage::NewEvent sample_event(uint32_t writer, uint32_t counter, uint32_t index) {
  storage::NewEvent event;
  event.timestamp_us = 1'700'000'000'000'000 + counter;
  event.actor_kind = storage::ActorKind::TASK;
  event.actor_id = "writer-" + std::to_string(writer) + "/" + std::to_string(index);
  event.attempt = counter;
  const std::string progress = progress_pattern(writer, counter, index);
  event.body = storage::make_body([&](schema::EventBody::Builder body) {
    auto heartbeat = body.initTaskHeartbeat();
    heartbeat.setInvocationId("inv-" + std::to_string(counter));
    heartbeat.setProgress(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(progress.data()), progress.size()));
  });
  return event;
}

/// The workflowSubmitted event that begins every history (a store refuses to begin one with
/// anything else); its definition is not read by the store.
inline storage::NewEvent submitted_event() {
  storage::NewEvent event;
  event.timestamp_us = 1'700'000'000'000'000;
  event.actor_kind = storage::ActorKind::WORKFLOW;
  event.body = storage::make_body([](schema::EventBody::Builder body) {
    body.initWorkflowSubmitted().setDefinitionJson("{}");
  });
  return event;
}

/// True if `event` is exactly what sample_event(writer, counter, index) produced, where
/// writer and index are read back from its actor id.
inline bool is_intact_sample(const schema::HistoryEvent::Reader& event) {
  if (!event.getBody().isTaskHeartbeat()) return false;
  std::string actor(event.getActorId().cStr());
  unsigned writer = 0, index = 0;
  if (std::sscanf(actor.c_str(), "writer-%u/%u", &writer, &index) != 2) return false;
  auto progress = event.getBody().getTaskHeartbeat().getProgress();
  const std::string expected = progress_pattern(writer, event.getAttempt(), index);
  return event.getActorKind() == schema::ActorKind::TASK &&
         event.getTimestampUs() == 1'700'000'000'000'000 + int64_t{event.getAttempt()} &&
         std::string(reinterpret_cast<const char*>(progress.begin()), progress.size()) == expected;
}

}  // namespace troupe::test
