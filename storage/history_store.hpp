// The history store's contract: durable, ordered, per-workflow event histories plus the
// indexes recovery and listing need. No RocksDB or Cap'n Proto types appear here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/result.hpp"

namespace troupe::storage {

/// Mirrors schema::ActorKind (checked in codec.cpp).
enum class ActorKind : uint8_t { WORKFLOW, TASK, SESSION, WORKER };

/// Mirrors schema::WorkflowStatus (checked in codec.cpp).
enum class WorkflowStatus : uint8_t { OPEN, CLOSED };

/// An event to append. The store assigns its sequence number.
struct NewEvent {
  int64_t timestamp_us = 0;  ///< microseconds since the Unix epoch
  ActorKind actor_kind = ActorKind::WORKFLOW;
  std::string actor_id;
  uint32_t attempt = 0;
  /// A schema::EventBody message as made by encode_body() (codec.hpp).
  std::string body;
};

/// An event as stored: its sequence and the packed schema::HistoryEvent (decode it with
/// DecodedEvent in codec.hpp).
struct StoredEvent {
  uint64_t sequence = 0;
  std::string packed;
};

/// The index entry of a workflow (column family `workflows`).
struct WorkflowRecord {
  WorkflowStatus status = WorkflowStatus::OPEN;
  std::string definition_name;
  std::string definition_digest;
  int64_t created_us = 0;
  int64_t closed_us = 0;  ///< 0 while open
  /// How a closed workflow ended (SUCCESS, FAILED, STOPPED); empty while open.
  std::string final_state;
  /// An open workflow's state as of its last change (RUNNING, PAUSED...), written in the same
  /// append as the event that changed it. Empty once closed, and in records written before the
  /// store kept it (a listing then reads the state from the history).
  std::string live_state;

  friend bool operator==(const WorkflowRecord&, const WorkflowRecord&) = default;
};

struct WorkflowEntry {
  std::string id;
  WorkflowRecord record;
};

/// The order of a listing.
enum class ListOrder : uint8_t {
  ID,            ///< by workflow id
  NEWEST_FIRST,  ///< by creation time, newest first; equal times by id
};

/// Which workflows list_workflows() returns, and how much of the index one call may read.
struct ListQuery {
  std::optional<WorkflowStatus> status;  ///< OPEN or CLOSED; none: both
  std::string final_state;      ///< only closed workflows that ended so ("SUCCESS"...); empty: any
  /// Only open workflows in this state ("RUNNING"...); empty: any. A record without a live
  /// state (written before the store kept it) matches too: the caller decides on it.
  std::string live_state;
  std::string definition_name;  ///< exact match; empty: any
  int64_t created_from_us = 0;  ///< created_us >= this (0: no bound)
  int64_t created_to_us = 0;    ///< created_us < this (0: no bound)
  ListOrder order = ListOrder::ID;
  /// Cursor: a previous page's next_cursor, of the same order (for ID, also any id: the
  /// page starts after it); empty: from the start.
  std::string after;
  size_t limit = 100;           ///< most entries returned, >= 1
  size_t scan_budget = 100000;  ///< most index records examined in one call, >= 1

  /// INVALID_ARGUMENT, saying which field is wrong, for a query no page can answer.
  Result<void> check() const;
  /// Whether `record` passes every filter (`after` and the limits are not filters).
  bool matches(const WorkflowRecord& record) const;
};

struct ListPage {
  std::vector<WorkflowEntry> entries;  ///< in the query's order
  std::string next_cursor;             ///< pass as `after` for the next page; empty: no more
};

/// The cursor of a NEWEST_FIRST listing that resumes after (created_us, id): text, so that it
/// travels in any client's string.
std::string newest_first_cursor(int64_t created_us, std::string_view id);
/// (created_us, id) of such a cursor; nullopt for any other text.
std::optional<std::pair<int64_t, std::string>> parse_newest_first_cursor(std::string_view cursor);

/// A drain an operator asked for (troupe worker drain).
struct WorkerDrainRecord {
  bool immediate = false;        ///< running tasks are interrupted, not awaited
  int64_t deadline_us = 0;       ///< an eventual drain interrupts what still runs then; 0: none
  bool exit_when_drained = false;  ///< the worker process stops once drained
  int64_t requested_us = 0;
  friend bool operator==(const WorkerDrainRecord&, const WorkerDrainRecord&) = default;
};

/// An attempt that failed on a worker, kept while it counts towards a quarantine.
struct WorkerFailureRecord {
  std::string task;    ///< WORKFLOW/TASK
  std::string reason;  ///< "ExitCode:3"...
  int64_t at_us = 0;
  friend bool operator==(const WorkerFailureRecord&, const WorkerFailureRecord&) = default;
};

/// The persisted record of a worker, keyed by its shard id (column family `workers`). Times
/// are microseconds since the Unix epoch. A record written before a field existed reads it as
/// its default.
struct WorkerRecord {
  std::string worker_id;  ///< identity kept across the worker's restarts; empty from an older worker
  std::string hostname;
  std::string resource_id;
  int64_t first_registered_us = 0;
  int64_t last_registered_us = 0;
  uint32_t pid = 0;                            ///< of the instance that registered last
  std::string instance_id;                     ///< of the instance that registered last
  std::map<std::string, uint32_t> task_lists;  ///< slots per task list, as it registered last
  int64_t last_seen_us = 0;  ///< when the scheduler last heard from it, as of this write
  uint64_t registrations = 0;  ///< registrations accepted for the shard, reconnections included
  std::string status;          ///< "STARTED"...; empty in records written before it was kept
  /// Whether the scheduler may give it work: ACTIVE, DRAINING, DRAINED, QUARANTINED (empty:
  /// ACTIVE). The shard's, not one process's: a restart keeps it.
  std::string standing;
  WorkerDrainRecord drain;                  ///< the drain asked for, while DRAINING or DRAINED
  int64_t quarantined_until_us = 0;         ///< while QUARANTINED
  uint32_t quarantines = 0;                 ///< since an attempt last succeeded there
  std::vector<WorkerFailureRecord> failures;  ///< failed there in a row, oldest first

  friend bool operator==(const WorkerRecord&, const WorkerRecord&) = default;
};

struct WorkerEntry {
  std::string shard_id;
  WorkerRecord record;
};

/// The entries of one worker's journal a store keeps; older ones are trimmed as new ones come.
inline constexpr size_t default_worker_journal_entries = 1000;

/// What an append got: the sequences first_sequence .. first_sequence + count - 1.
struct AppendReceipt {
  uint64_t first_sequence = 0;
  uint32_t count = 0;
};

/// Counters of the group commit, for benchmarks and tests.
struct StoreStats {
  uint64_t batches = 0;        ///< WriteBatches committed (each one sync when sync is on)
  uint64_t operations = 0;     ///< operations committed in them
  uint64_t events = 0;         ///< events appended
  uint64_t bytes_written = 0;  ///< keys and values written, in bytes
  uint64_t largest_batch = 0;  ///< most operations in one batch
};

using AppendCallback = std::function<void(Result<AppendReceipt>)>;
using DoneCallback = std::function<void(Result<void>)>;

/// Durable event histories. Thread-safe: any thread may call any member.
///
/// Writes (append, close, put_worker, append_worker_journal, purge_closed) are acknowledged only once durable
/// (synced, unless StoreOptions::sync is off). After a write fails the store is
/// fail-stopped: every waiting and later write fails with UNAVAILABLE until it is reopened,
/// because a failed sync leaves the disk's state unknown and retrying could report
/// unsynced data as durable.
class HistoryStore {
 public:
  virtual ~HistoryStore() = default;

  /// Appends `events` to `workflow_id`'s history and, if given, writes its index record,
  /// atomically. Sequences are consecutive per workflow, from 1. `done` runs exactly once,
  /// on the store's writer thread (keep it short), after the append is durable or failed.
  /// A workflow with neither events nor a record gets a history only from an append whose first
  /// event is its workflowSubmitted: any other append to it (one from an actor that still held
  /// the workflow when it was purged) is refused whole with NOT_FOUND, and does not fail-stop
  /// the store.
  /// Errors: INVALID_ARGUMENT (bad id, malformed body), NOT_FOUND (see above), UNAVAILABLE
  /// (store stopped or fail-stopped), INTERNAL (a write failed; the message has the cause).
  virtual void append(std::string workflow_id, std::vector<NewEvent> events,
                      std::optional<WorkflowRecord> record, AppendCallback done) = 0;

  /// Marks a workflow closed at `closed_us`: it leaves the open index and becomes
  /// purgeable. NOT_FOUND if it has no record. `done` runs as for append().
  virtual void close(std::string workflow_id, int64_t closed_us, DoneCallback done) = 0;

  /// Writes a worker's record. `done` runs as for append().
  virtual void put_worker(std::string shard_id, WorkerRecord record, DoneCallback done) = 0;

  /// Appends `event` (its actor kind WORKER, its body a workerRegistered or workerHealthChanged)
  /// to the journal of worker `shard_id`, and trims the journal to its newest entries (1000
  /// unless the store was told otherwise). Sequences are consecutive per shard from 1 and never
  /// reused, so a trimmed journal starts above 1. `done` runs as for append().
  /// Errors: INVALID_ARGUMENT (bad shard id, malformed body), UNAVAILABLE, INTERNAL.
  virtual void append_worker_journal(std::string shard_id, NewEvent event, AppendCallback done) = 0;

  /// Up to `limit` entries of worker `shard_id`'s journal from sequence `from_sequence` on, in
  /// order, each a packed HistoryEvent (DecodedEvent in codec.hpp); empty if there are none.
  /// CORRUPTION names the damaged entry.
  virtual Result<std::vector<StoredEvent>> read_worker_journal(std::string_view shard_id,
                                                               uint64_t from_sequence, size_t limit) = 0;

  /// Up to `limit` events of `workflow_id` from sequence `from_sequence` on, in order.
  /// Empty if there are none. CORRUPTION names the damaged record's key.
  virtual Result<std::vector<StoredEvent>> read(std::string_view workflow_id,
                                                uint64_t from_sequence, size_t limit) = 0;

  /// The highest sequence of `workflow_id` (0 if it has no events).
  virtual Result<uint64_t> last_sequence(std::string_view workflow_id) = 0;

  virtual Result<std::optional<WorkflowRecord>> find_workflow(std::string_view workflow_id) = 0;

  /// Up to `limit` open workflows whose ids sort after `after` (empty: from the start), in
  /// id order. Memory is bounded by the page, whatever the number of workflows; pass the last
  /// id of a page as `after` to get the next.
  virtual Result<std::vector<WorkflowEntry>> scan_open(std::string_view after, size_t limit) = 0;

  /// The workflows matching `query`, a page at a time, in `query.order` after `query.after`:
  /// from the `workflows` index (ID) or its creation-ordered twin (NEWEST_FIRST, which starts
  /// at `created_to_us` and stops at `created_from_us` instead of filtering on them). A page
  /// ends after `limit` matches or after `scan_budget` records were examined, whichever comes
  /// first, so a sparse filter over a huge index still answers in bounded time: the page may
  /// then hold fewer than `limit` entries, even none, and the caller pages on with
  /// `next_cursor` (after the last record examined). `next_cursor` is empty only once the end
  /// was reached. Memory is bounded by the page, not the index.
  /// Errors: INVALID_ARGUMENT (see ListQuery::check; a cursor that is not one of the order),
  /// CORRUPTION (names the damaged record).
  virtual Result<ListPage> list_workflows(const ListQuery& query) = 0;

  /// Deletes the histories and records of workflows closed before `closed_before_us`, a page
  /// at a time, interleaved with other writes. Returns how many were deleted.
  virtual Result<uint64_t> purge_closed(int64_t closed_before_us) = 0;

  virtual Result<std::optional<WorkerRecord>> find_worker(std::string_view shard_id) = 0;
  virtual Result<std::vector<WorkerEntry>> list_workers() = 0;

  virtual StoreStats stats() const = 0;
  /// The storage engine's own figures for operators, name and value each (RocksDB's sizes,
  /// memtables, compactions and write stalls); empty for an engine that has none.
  virtual std::vector<std::pair<std::string, std::string>> engine_properties() const { return {}; }

  /// append() that waits for its outcome. Not for actor threads: it blocks.
  Result<AppendReceipt> append_wait(std::string workflow_id, std::vector<NewEvent> events,
                                    std::optional<WorkflowRecord> record = std::nullopt);
  /// close() that waits for its outcome.
  Result<void> close_wait(std::string workflow_id, int64_t closed_us);
  /// put_worker() that waits for its outcome.
  Result<void> put_worker_wait(std::string shard_id, WorkerRecord record);
  /// append_worker_journal() that waits for its outcome.
  Result<AppendReceipt> append_worker_journal_wait(std::string shard_id, NewEvent event);
};

}  // namespace troupe::storage
