// A workflow's stored history as tests read it: its events decoded, and each event's kind.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <capnp/dynamic.h>

#include "storage/codec.hpp"
#include "storage/history_store.hpp"
#include "test/support/why.hpp"

namespace troupe::test {

/// Every event of `id`'s history, decoded, in order. A failed read or decode fails the test.
inline std::vector<storage::DecodedEvent> decoded_history(storage::HistoryStore& store, const std::string& id) {
  auto history = store.read(id, 1, 1000000);
  REQUIRE_MESSAGE(history, why(history));
  std::vector<storage::DecodedEvent> out;
  for (const auto& e : *history) {
    auto decoded = storage::DecodedEvent::decode(e.packed);
    REQUIRE_MESSAGE(decoded, why(decoded));
    out.push_back(std::move(*decoded));
  }
  return out;
}

/// The name of the event's body, e.g. "taskDispatched" ("?" for one this build does not know).
inline std::string body_kind(const storage::DecodedEvent& event) {
  KJ_IF_MAYBE(field, capnp::toDynamic(event.get().getBody()).which()) { return field->getProto().getName().cStr(); }
  return "?";
}

}  // namespace troupe::test
