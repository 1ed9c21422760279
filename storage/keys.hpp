// Key layout of the history store's column families. Std-only, so tests and tools can
// reason about keys without RocksDB.
//
//   events     workflow id, 0x00, sequence as 8 bytes big-endian  ->  packed HistoryEvent
//   workflows  workflow id                                       ->  WorkflowRecord
//   open       workflow id                                       ->  (empty) while open
//   created    newest-first created time (8 bytes), workflow id  ->  WorkflowRecord (as `workflows`)
//   workers    shard id                                          ->  WorkerRecord
//   worker_journal  shard id, 0x00, sequence (as in events)      ->  packed HistoryEvent
//   meta       "format_version"                                  ->  decimal text
// Big-endian sequences make key order equal sequence order; the 0x00 separator (which ids
// may not contain) keeps "wf1" from seeing the events of "wf10". A created key's time is
// stored so that a later time sorts first (see created_key), then ids in order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe::storage {

/// Longest workflow id or shard id accepted, in bytes.
inline constexpr size_t max_id_bytes = 512;

/// Checks that `id` can be a workflow id: 1..max_id_bytes bytes, no NUL.
/// Returns INVALID_ARGUMENT naming `what` ("workflow id", "shard id") otherwise.
Result<void> check_id(std::string_view id, std::string_view what);

/// The events key of (workflow_id, sequence).
std::string event_key(std::string_view workflow_id, uint64_t sequence);

/// The prefix every events key of `workflow_id` starts with.
std::string event_prefix(std::string_view workflow_id);

/// A parsed events key; `workflow_id` views into the parsed key.
struct EventKey {
  std::string_view workflow_id;
  uint64_t sequence = 0;
};

/// Parses an events key; nullopt if it is not one.
std::optional<EventKey> parse_event_key(std::string_view key);

/// The `created` index key of a workflow created at `created_us`: keys sort newest first, and
/// workflows created in the same microsecond by id.
std::string created_key(int64_t created_us, std::string_view workflow_id);

/// A parsed created key; `workflow_id` views into the parsed key.
struct CreatedKey {
  int64_t created_us = 0;
  std::string_view workflow_id;
};

/// Parses a created key; nullopt if it is not one.
std::optional<CreatedKey> parse_created_key(std::string_view key);

/// "workflow 'x' sequence 7" for an events key, or its bytes in hex when it does not parse;
/// used to name a damaged record in error messages. `owner` names what the id is of ("journal
/// of worker" for a worker_journal key, which has the same layout).
std::string describe_event_key(std::string_view key, std::string_view owner = "workflow");

}  // namespace troupe::storage
