// HistoryStore over RocksDB. Every rocksdb::Status is checked where it is returned and
// turned into an Error here; nothing RocksDB-shaped leaves this file.
//
// All writes go through one GroupCommitter: its writer thread assigns sequence numbers,
// composes events, and commits everything queued during the previous sync as one WriteBatch
// and one sync. Because only that thread writes, it may keep the per-workflow sequence
// cache without locks and read-modify-write index records safely.
#include "storage/rocks_history_store.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <variant>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/file_system.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include "storage/codec.hpp"
#include "storage/group_commit.hpp"
#include "storage/keys.hpp"
#include "storage/rocks_info_log.hpp"

namespace troupe::storage {
namespace {

constexpr const char* cf_events = "events";
constexpr const char* cf_workflows = "workflows";
constexpr const char* cf_open = "open";
constexpr const char* cf_workers = "workers";
constexpr const char* cf_meta = "meta";
constexpr const char* cf_created = "created";
constexpr const char* cf_worker_journal = "worker_journal";
constexpr const char* format_version_key = "format_version";

/// Records indexed per write while a store of format 1 gets its `created` index.
constexpr size_t migration_page = 4096;

/// Workflows examined per purge page: bounds the memory and the write batch of one page.
constexpr size_t purge_page = 1024;

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }
std::string_view view(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

/// The one translation point from rocksdb::Status to Error. `context` says what was being
/// done, e.g. "reading workflow 'x' from history store at '/data'".
Error to_error(const rocksdb::Status& status, const std::string& context) {
  const std::string detail = status.ToString();
  if (status.IsNoSpace()) {
    return fail(Errc::UNAVAILABLE,
                context + ": the disk is full (" + detail + "); free space, then restart");
  }
  if (status.IsCorruption()) {
    return fail(Errc::CORRUPTION, context + ": data is damaged (" + detail +
                                      "); restore the directory from a backup");
  }
  if (status.IsBusy() || status.IsTryAgain() || status.IsIncomplete()) {
    return fail(Errc::OVERLOADED, context + ": " + detail + "; retry later");
  }
  return fail(Errc::INTERNAL, context + ": " + detail);
}

/// `bytes` for a person: "0 B", "512 KiB", "3.9 GiB".
std::string size_text(uintmax_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 || value >= 100 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

/// How much room the filesystem holding `directory` has left, for a failure's message.
std::string free_space_at(const std::string& directory) {
  std::error_code ec;
  const auto space = std::filesystem::space(directory, ec);
  if (ec) return "its free space is unknown (" + ec.message() + ")";
  return size_text(space.available) + " of " + size_text(space.capacity) + " free there";
}

/// Nothing acknowledged is ever lost by a failed write: acknowledgements follow durable writes.
constexpr const char* nothing_lost = "; nothing it acknowledged is lost";

/// The store in `directory` met a full disk while doing `context`: what the node stops (or
/// refuses to start) with, naming the free space left and what to do.
Error disk_full(const std::string& context, const std::string& detail, const std::string& directory) {
  return fail(Errc::UNAVAILABLE, context + ": the disk is full (" + detail + "); " + free_space_at(directory) +
                                     "; free space, then restart the node (or move its data directory to a "
                                     "larger disk)" + nothing_lost);
}

/// A failed write (or an open that must write) of the store in `directory`, as the error the
/// node stops with: what failed, the free space left, what to do.
Error write_error(const rocksdb::Status& status, const std::string& context, const std::string& directory) {
  if (status.IsNoSpace()) return disk_full(context, status.ToString(), directory);
  Error error = to_error(status, context);
  if (error.code != Errc::CORRUPTION) {
    error.message += "; " + free_space_at(directory) +
                     "; check the disk (the kernel log tells more), then restart the node" + nothing_lost;
  }
  return error;
}

bool is_lock_error(const rocksdb::Status& status) {
  const std::string detail = status.ToString();
  return status.IsIOError() && (detail.find("LOCK") != std::string::npos ||
                                detail.find("lock hold") != std::string::npos);
}

// --- write operations queued for the group commit ------------------------------------

struct AppendOp {
  std::string workflow_id;
  std::vector<NewEvent> events;
  std::optional<WorkflowRecord> record;
  AppendCallback done;
};

struct CloseOp {
  std::string workflow_id;
  int64_t closed_us = 0;
  DoneCallback done;
};

struct PutWorkerOp {
  std::string shard_id;
  WorkerRecord record;
  DoneCallback done;
};

struct JournalOp {
  std::string shard_id;
  NewEvent event;
  AppendCallback done;
};

/// Deletes those of `workflow_ids` that are still closed before `closed_before_us` when the
/// op is committed (a workflow may have been reopened since it was picked).
struct PurgeOp {
  std::vector<std::string> workflow_ids;
  int64_t closed_before_us = 0;
  std::function<void(Result<uint64_t>)> done;
};

struct WriteOp {
  std::variant<AppendOp, CloseOp, PutWorkerOp, JournalOp, PurgeOp> op;

  size_t size_bytes() const {
    if (auto* a = std::get_if<AppendOp>(&op)) {
      size_t bytes = a->workflow_id.size();
      for (const auto& e : a->events) bytes += e.body.size() + e.actor_id.size() + 32;
      return bytes;
    }
    if (auto* p = std::get_if<PurgeOp>(&op)) return p->workflow_ids.size() * 64;
    if (auto* j = std::get_if<JournalOp>(&op)) return j->shard_id.size() + j->event.body.size() + 32;
    return 128;
  }

  /// Reports `error` as this operation's outcome.
  void fail_with(const Error& error) {
    std::visit([&](auto& o) { o.done(error); }, op);
  }
};

/// What one operation's preparation decided; delivered once the batch is durable.
using Outcome = std::variant<Error, AppendReceipt, uint64_t /* purged */, std::monostate>;

}  // namespace

struct RocksHistoryStore::Impl {
  std::string directory;
  StoreOptions options;
  std::shared_ptr<rocksdb::Env> env;  // outlives db
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::ColumnFamilyHandle* events = nullptr;
  rocksdb::ColumnFamilyHandle* workflows = nullptr;
  rocksdb::ColumnFamilyHandle* open_index = nullptr;
  rocksdb::ColumnFamilyHandle* workers = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::ColumnFamilyHandle* created = nullptr;  ///< the `workflows` records, newest first
  rocksdb::ColumnFamilyHandle* worker_journal = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;

  // Fail-stop: set once when a write or RocksDB's background work fails; never cleared.
  std::atomic<bool> failed{false};
  std::mutex failure_mutex;
  Error failure;
  std::function<void(const Error&)> on_fail_stop;  // set once the store is open

  // Writer-thread state.
  std::unordered_map<std::string, uint64_t> last_assigned;  // workflow id -> last sequence
  /// Shard id -> the first and last sequence its journal holds ({0, 0}: none yet); one entry
  /// per worker ever journaled, read from the database on a shard's first entry.
  std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> journal_spans;
  uint64_t events_written = 0;
  uint64_t bytes_written = 0;
  std::atomic<uint64_t> events_written_shared{0};
  std::atomic<uint64_t> bytes_written_shared{0};
  CommitMeters meters;

  std::unique_ptr<GroupCommitter<WriteOp>> committer;  // last: stopped first

  ~Impl() {
    if (committer) committer->stop();
    for (auto* handle : handles) {
      // Nothing to do about a failure to release a handle while closing.
      auto status = db->DestroyColumnFamilyHandle(handle);
      (void)status.ok();
    }
    if (db) {
      auto status = db->Close();
      (void)status.ok();  // a fail-stopped store cannot close cleanly; reopening recovers
      db.reset();
    }
  }

  std::string where() const { return "history store at '" + directory + "'"; }

  /// Fail-stops the store because of `status`, met while doing `context`; the first failure
  /// is the one kept and reported to on_fail_stop. Returns this failure's own error. Any thread.
  Error fail_stop(const rocksdb::Status& status, const std::string& context) {
    Error error = write_error(status, context, directory);
    std::function<void(const Error&)> report;
    {
      std::lock_guard lock(failure_mutex);
      if (failed.load(std::memory_order_acquire)) return error;
      failure = error;
      failed.store(true, std::memory_order_release);
      report = on_fail_stop;
    }
    if (report) report(error);
    return error;
  }

  Error stopped_error() {
    std::lock_guard lock(failure_mutex);
    return fail(Errc::UNAVAILABLE, where() + " stopped accepting writes after a failed write (" +
                                       failure.message + "); restart the node to reopen it");
  }

  /// Queues `op`, or fails it at once when the store is fail-stopped or closing.
  void submit(WriteOp op) {
    if (failed.load(std::memory_order_acquire)) return op.fail_with(stopped_error());
    if (!committer->submit(std::move(op))) {
      op.fail_with(fail(Errc::UNAVAILABLE, where() + " is closing"));
    }
  }

  Result<uint64_t> read_last_sequence(std::string_view workflow_id) {
    // Histories are gap-free from 1, so one without event 1 is empty. That point lookup, which
    // the bloom filters answer for most files, is all a new workflow's first append costs;
    // the iterator below reaches into every level.
    std::string first;
    auto found = db->Get(rocksdb::ReadOptions(), events, slice(event_key(workflow_id, 1)), &first);
    if (found.IsNotFound()) return uint64_t{0};
    if (!found.ok()) {
      return to_error(found, "reading the history of workflow '" + std::string(workflow_id) + "' in " + where());
    }
    rocksdb::ReadOptions read_options;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read_options, events));
    const std::string prefix = event_prefix(workflow_id);
    it->SeekForPrev(slice(event_key(workflow_id, std::numeric_limits<uint64_t>::max())));
    if (!it->status().ok()) {
      return to_error(it->status(), "reading the history of workflow '" +
                                        std::string(workflow_id) + "' in " + where());
    }
    if (!it->Valid() || !it->key().starts_with(slice(prefix))) return uint64_t{0};
    auto key = parse_event_key(view(it->key()));
    if (!key) {
      return fail(Errc::CORRUPTION, where() + " has a malformed events key " +
                                        describe_event_key(view(it->key())));
    }
    return key->sequence;
  }

  /// Up to `limit` entries of `id` from `from_sequence` on in `family`, whose keys are laid out
  /// as events keys (events, worker_journal); `owner` names the id in messages ("workflow").
  Result<std::vector<StoredEvent>> read_keyed(rocksdb::ColumnFamilyHandle* family, std::string_view id,
                                              uint64_t from_sequence, size_t limit, std::string_view owner) {
    std::vector<StoredEvent> out;
    std::string upper = std::string(id);
    upper.push_back('\x01');
    const rocksdb::Slice upper_bound = slice(upper);
    rocksdb::ReadOptions read_options;
    read_options.iterate_upper_bound = &upper_bound;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read_options, family));
    for (it->Seek(slice(event_key(id, from_sequence))); it->Valid() && out.size() < limit; it->Next()) {
      auto key = parse_event_key(view(it->key()));
      if (!key) {
        return fail(Errc::CORRUPTION, where() + " has a malformed key " + describe_event_key(view(it->key()), owner));
      }
      auto event = DecodedEvent::decode(view(it->value()));
      if (!event) {
        return fail(Errc::CORRUPTION, "history record at " + describe_event_key(view(it->key()), owner) + " in " +
                                          where() + " is damaged: " + event.error().message);
      }
      if (event->get().getSequence() != key->sequence) {
        return fail(Errc::CORRUPTION, "history record at " + describe_event_key(view(it->key()), owner) + " in " +
                                          where() + " claims sequence " + std::to_string(event->get().getSequence()));
      }
      out.push_back(StoredEvent{key->sequence, std::string(view(it->value()))});
    }
    if (!it->status().ok()) {
      return to_error(it->status(), "reading " + std::string(owner) + " '" + std::string(id) + "' in " + where());
    }
    return out;
  }

  /// The first and last sequence of `shard_id`'s journal in the database ({0, 0}: empty).
  Result<std::pair<uint64_t, uint64_t>> read_journal_span(std::string_view shard_id) {
    const std::string prefix = event_prefix(shard_id);
    std::string upper = std::string(shard_id);
    upper.push_back('\x01');
    const rocksdb::Slice upper_bound = slice(upper);
    rocksdb::ReadOptions read_options;
    read_options.iterate_upper_bound = &upper_bound;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read_options, worker_journal));
    const std::string context = "reading the journal of worker '" + std::string(shard_id) + "' in " + where();
    it->Seek(slice(prefix));
    if (!it->status().ok()) return to_error(it->status(), context);
    if (!it->Valid()) return std::pair<uint64_t, uint64_t>{0, 0};
    auto first = parse_event_key(view(it->key()));
    it->SeekToLast();  // the upper bound keeps it within this shard
    if (!it->status().ok()) return to_error(it->status(), context);
    auto last = it->Valid() ? parse_event_key(view(it->key())) : std::nullopt;
    if (!first || !last) {
      return fail(Errc::CORRUPTION, where() + " has a malformed key in the journal of worker '" +
                                        std::string(shard_id) + "'; restore the directory from a backup");
    }
    return std::pair<uint64_t, uint64_t>{first->sequence, last->sequence};
  }

  /// An iterator over `family` (within `snapshot`, if given) at the first key sorting after
  /// `after`, or at the first key if `after` is empty: how a paged scan resumes from the last
  /// id of the previous page.
  std::unique_ptr<rocksdb::Iterator> iterate_after(rocksdb::ColumnFamilyHandle* family,
                                                   std::string_view after,
                                                   const rocksdb::Snapshot* snapshot = nullptr) {
    rocksdb::ReadOptions read_options;
    read_options.snapshot = snapshot;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read_options, family));
    if (after.empty()) {
      it->SeekToFirst();
    } else {
      it->Seek(slice(after));
      if (it->Valid() && view(it->key()) == after) it->Next();
    }
    return it;
  }

  Result<std::optional<WorkflowRecord>> read_workflow(std::string_view workflow_id,
                                                      const rocksdb::Snapshot* snapshot) {
    rocksdb::ReadOptions read_options;
    read_options.snapshot = snapshot;
    std::string value;
    auto status = db->Get(read_options, workflows, slice(workflow_id), &value);
    if (status.IsNotFound()) return std::optional<WorkflowRecord>{};
    const std::string context = "reading workflow '" + std::string(workflow_id) + "' in " + where();
    if (!status.ok()) return to_error(status, context);
    auto record = decode_workflow_record(value);
    if (!record) return fail(Errc::CORRUPTION, context + ": " + record.error().message);
    return std::optional<WorkflowRecord>(std::move(*record));
  }

  /// list_workflows() in the order of the `created` index, which starts at the query's
  /// created_to_us and ends at its created_from_us (keys sort newest first).
  Result<ListPage> list_newest_first(const ListQuery& query) {
    ListPage page;
    std::string upper;
    rocksdb::Slice upper_bound;
    rocksdb::ReadOptions read_options;
    if (query.created_from_us != 0 && query.created_from_us != std::numeric_limits<int64_t>::min()) {
      upper = created_key(query.created_from_us - 1, "");  // before every older workflow's key
      upper_bound = slice(upper);
      read_options.iterate_upper_bound = &upper_bound;
    }
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read_options, created));
    std::string start;
    bool skip_start = false;
    if (auto cursor = parse_newest_first_cursor(query.after)) {
      start = created_key(cursor->first, cursor->second);
      skip_start = true;
    }
    if (query.created_to_us != 0 && query.created_to_us != std::numeric_limits<int64_t>::min()) {
      if (std::string to = created_key(query.created_to_us - 1, ""); to > start) {
        start = std::move(to);
        skip_start = false;
      }
    }
    it->Seek(slice(start));
    if (skip_start && it->Valid() && view(it->key()) == start) it->Next();
    size_t examined = 0;
    for (; it->Valid(); it->Next()) {
      auto key = parse_created_key(view(it->key()));
      if (!key) return fail(Errc::CORRUPTION, where() + " has a malformed created-index key");
      auto record = decode_workflow_record(view(it->value()));
      if (!record) {
        return fail(Errc::CORRUPTION, "workflow '" + std::string(key->workflow_id) + "' in the created index of " +
                                          where() + ": " + record.error().message);
      }
      ++examined;
      if (query.matches(*record)) page.entries.push_back(WorkflowEntry{std::string(key->workflow_id), *record});
      if (page.entries.size() == query.limit || examined == query.scan_budget) {
        page.next_cursor = newest_first_cursor(key->created_us, key->workflow_id);
        it->Next();  // only to learn whether anything is left
        break;
      }
    }
    if (!it->status().ok()) return to_error(it->status(), "listing workflows in " + where());
    if (!it->Valid()) page.next_cursor.clear();  // the end of the index: no next page
    return page;
  }

  // --- the writer thread ---------------------------------------------------------------

  /// Index records written earlier in the batch being built (nullopt: deleted), so later
  /// operations of the same batch see them before they reach the database.
  using PendingRecords = std::unordered_map<std::string, std::optional<WorkflowRecord>>;

  Result<std::optional<WorkflowRecord>> effective_record(const std::string& id,
                                                         const PendingRecords& pending) {
    if (auto it = pending.find(id); it != pending.end()) return it->second;
    return read_workflow(id, nullptr);
  }

  void put_record(rocksdb::WriteBatch& batch, PendingRecords& pending, const std::string& id,
                  const WorkflowRecord& record) {
    const std::string value = encode_workflow_record(record);
    (void)batch.Put(workflows, slice(id), slice(value));
    // A record's creation time never changes, so its key in `created` stays the same.
    (void)batch.Put(created, slice(created_key(record.created_us, id)), slice(value));
    if (record.status == WorkflowStatus::OPEN) {
      (void)batch.Put(open_index, slice(id), rocksdb::Slice());
    } else {
      (void)batch.Delete(open_index, slice(id));
    }
    pending[id] = record;
  }

  Outcome prepare(AppendOp& op, rocksdb::WriteBatch& batch, PendingRecords& pending) {
    uint64_t last;
    if (auto it = last_assigned.find(op.workflow_id); it != last_assigned.end()) {
      last = it->second;
    } else {
      auto read = read_last_sequence(op.workflow_id);
      if (!read) return read.error();
      last = *read;
    }
    // Compose every event before touching the batch, so a bad one leaves no trace.
    std::vector<std::string> composed;
    composed.reserve(op.events.size());
    for (size_t i = 0; i < op.events.size(); ++i) {
      auto event = compose_event(last + 1 + i, op.events[i]);
      if (!event) {
        return fail(event.error().code, "event " + std::to_string(i) + " appended to workflow '" +
                                            op.workflow_id + "': " + event.error().message);
      }
      composed.push_back(std::move(*event));
    }
    if (last == 0) {
      // No history: only a submission may start one (see check_history_start).
      auto record = effective_record(op.workflow_id, pending);
      if (!record) return record.error();
      if (!*record) {
        auto starts = check_history_start(op.workflow_id, composed.empty() ? nullptr : &composed.front());
        if (!starts) return starts.error();
      }
    }
    for (size_t i = 0; i < composed.size(); ++i) {
      (void)batch.Put(events, slice(event_key(op.workflow_id, last + 1 + i)), slice(composed[i]));
    }
    if (op.record) put_record(batch, pending, op.workflow_id, *op.record);
    last_assigned[op.workflow_id] = last + composed.size();
    events_written += composed.size();
    return AppendReceipt{last + 1, static_cast<uint32_t>(composed.size())};
  }

  Outcome prepare(CloseOp& op, rocksdb::WriteBatch& batch, PendingRecords& pending) {
    auto current = effective_record(op.workflow_id, pending);
    if (!current) return current.error();
    if (!*current) {
      return fail(Errc::NOT_FOUND, "cannot close workflow '" + op.workflow_id +
                                       "': it has no record in " + where());
    }
    WorkflowRecord record = **current;
    if (record.status == WorkflowStatus::CLOSED) return std::monostate{};  // already closed
    record.status = WorkflowStatus::CLOSED;
    record.closed_us = op.closed_us;
    record.live_state.clear();
    put_record(batch, pending, op.workflow_id, record);
    return std::monostate{};
  }

  Outcome prepare(PutWorkerOp& op, rocksdb::WriteBatch& batch, PendingRecords&) {
    (void)batch.Put(workers, slice(op.shard_id), slice(encode_worker_record(op.record)));
    return std::monostate{};
  }

  /// The entry goes after the shard's last one; the oldest go while more than
  /// `worker_journal_entries` are left. Entries are deleted one by one from the front (normally
  /// the one the new entry displaces), so the journal stays contiguous.
  Outcome prepare(JournalOp& op, rocksdb::WriteBatch& batch, PendingRecords&) {
    auto cached = journal_spans.find(op.shard_id);
    if (cached == journal_spans.end()) {
      auto read = read_journal_span(op.shard_id);
      if (!read) return read.error();
      cached = journal_spans.emplace(op.shard_id, *read).first;
    }
    auto& [first, last] = cached->second;
    auto composed = compose_event(last + 1, op.event);
    if (!composed) {
      return fail(composed.error().code,
                  "journal entry of worker '" + op.shard_id + "': " + composed.error().message);
    }
    (void)batch.Put(worker_journal, slice(event_key(op.shard_id, last + 1)), slice(*composed));
    last += 1;
    if (first == 0) first = last;
    const size_t keep = std::max<size_t>(options.worker_journal_entries, 1);
    while (last - first + 1 > keep) {
      (void)batch.Delete(worker_journal, slice(event_key(op.shard_id, first)));
      ++first;
    }
    return AppendReceipt{last, 1};
  }

  Outcome prepare(PurgeOp& op, rocksdb::WriteBatch& batch, PendingRecords& pending) {
    // Check every candidate before deleting any, so a failed read leaves no partial purge.
    std::vector<std::pair<const std::string*, int64_t /* created_us */>> eligible;
    for (const auto& id : op.workflow_ids) {
      auto current = effective_record(id, pending);
      if (!current) return current.error();
      if (*current && (*current)->status == WorkflowStatus::CLOSED &&
          (*current)->closed_us < op.closed_before_us) {
        eligible.emplace_back(&id, (*current)->created_us);  // not reopened or gone since it was picked
      }
    }
    uint64_t purged = 0;
    for (const auto& [candidate, created_us] : eligible) {
      const std::string& id = *candidate;
      (void)batch.Delete(created, slice(created_key(created_us, id)));
      std::string end = id;
      end.push_back('\x01');  // just past every key of event_prefix(id)
      (void)batch.DeleteRange(events, slice(event_prefix(id)), slice(end));
      (void)batch.Delete(workflows, slice(id));
      (void)batch.Delete(open_index, slice(id));
      pending[id] = std::nullopt;
      last_assigned[id] = 0;  // a later append in this batch may only start a new history
      ++purged;
    }
    return purged;
  }

  void commit(std::vector<WriteOp>& ops) {
    if (failed.load(std::memory_order_acquire)) {
      const Error error = stopped_error();
      for (auto& op : ops) op.fail_with(error);
      return;
    }
    rocksdb::WriteBatch batch;
    PendingRecords pending;
    std::vector<Outcome> outcomes;
    outcomes.reserve(ops.size());
    const uint64_t events_before = events_written;
    for (auto& op : ops) {
      outcomes.push_back(std::visit([&](auto& o) { return prepare(o, batch, pending); }, op.op));
    }

    if (batch.Count() > 0) {
      rocksdb::WriteOptions write_options;
      write_options.sync = options.sync;
      const auto write_start = std::chrono::steady_clock::now();
      auto status = db->Write(write_options, &batch);
      // Once per batch, on this thread: two clock reads and four relaxed increments.
      meters.write_us.observe(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - write_start)
              .count()));
      meters.batch_operations.observe(ops.size());
      if (!status.ok()) {
        const Error error = fail_stop(status, "writing to " + where());
        events_written = events_before;
        for (auto& op : ops) op.fail_with(error);
        return;
      }
      bytes_written += batch.GetDataSize();
    }
    // Durable: forget the caches of workflows that left the open set, then report.
    for (const auto& [id, record] : pending) {
      if (!record || record->status == WorkflowStatus::CLOSED) last_assigned.erase(id);
    }
    events_written_shared.store(events_written, std::memory_order_relaxed);
    bytes_written_shared.store(bytes_written, std::memory_order_relaxed);
    for (size_t i = 0; i < ops.size(); ++i) deliver(ops[i], outcomes[i]);
  }

  static void deliver(WriteOp& op, Outcome& outcome) {
    if (auto* error = std::get_if<Error>(&outcome)) return op.fail_with(*error);
    if (auto* a = std::get_if<AppendOp>(&op.op)) return a->done(std::get<AppendReceipt>(outcome));
    if (auto* j = std::get_if<JournalOp>(&op.op)) return j->done(std::get<AppendReceipt>(outcome));
    if (auto* p = std::get_if<PurgeOp>(&op.op)) return p->done(std::get<uint64_t>(outcome));
    if (auto* c = std::get_if<CloseOp>(&op.op)) return c->done(ok());
    if (auto* w = std::get_if<PutWorkerOp>(&op.op)) return w->done(ok());
  }
};

// --- opening ------------------------------------------------------------------------------

namespace {

/// Records this build's format version, synced.
Result<void> write_format_version(RocksHistoryStore::Impl& impl) {
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  auto status =
      impl.db->Put(write_options, impl.meta, format_version_key, std::to_string(history_format_version));
  if (!status.ok()) {
    return status.IsNoSpace() ? write_error(status, "initialising " + impl.where(), impl.directory)
                              : to_error(status, "initialising " + impl.where());
  }
  return ok();
}

/// Format 1 -> 2: the `created` index of every record of `workflows`, a page per synced write.
/// The format version is raised only afterwards, so an interrupted run is done again at the next
/// open (its puts are idempotent).
Result<void> add_created_index(RocksHistoryStore::Impl& impl) {
  const std::string context = "adding the creation-time index to " + impl.where();
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  rocksdb::WriteBatch batch;
  auto write = [&]() -> Result<void> {
    if (batch.Count() == 0) return ok();
    auto status = impl.db->Write(write_options, &batch);
    if (!status.ok()) {
      return status.IsNoSpace() ? write_error(status, context, impl.directory) : to_error(status, context);
    }
    batch.Clear();
    return ok();
  };
  // What an interrupted conversion wrote goes first: meanwhile an older troupe may have purged
  // workflows without knowing this index, and their entries must not survive as ghosts.
  {
    std::unique_ptr<rocksdb::Iterator> old(impl.db->NewIterator(rocksdb::ReadOptions(), impl.created));
    for (old->SeekToFirst(); old->Valid(); old->Next()) {
      (void)batch.Delete(impl.created, old->key());
      if (batch.Count() >= migration_page) {
        if (auto written = write(); !written) return written.error();
      }
    }
    if (!old->status().ok()) return to_error(old->status(), context);
    if (auto written = write(); !written) return written.error();
  }
  std::unique_ptr<rocksdb::Iterator> it(impl.db->NewIterator(rocksdb::ReadOptions(), impl.workflows));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view id = view(it->key());
    auto record = decode_workflow_record(view(it->value()));
    if (!record) {
      return fail(Errc::CORRUPTION, context + ": workflow '" + std::string(id) + "': " + record.error().message);
    }
    (void)batch.Put(impl.created, slice(created_key(record->created_us, id)), it->value());
    if (batch.Count() >= migration_page) {
      if (auto written = write(); !written) return written.error();
    }
  }
  if (!it->status().ok()) return to_error(it->status(), context);
  return write();
}

Result<void> check_format(RocksHistoryStore::Impl& impl) {
  std::string value;
  auto status = impl.db->Get(rocksdb::ReadOptions(), impl.meta, format_version_key, &value);
  if (status.IsNotFound()) return write_format_version(impl);
  if (!status.ok()) return to_error(status, "reading the format version of " + impl.where());
  int version = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), version);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return fail(Errc::CORRUPTION, impl.where() + " has an unreadable format version '" + value +
                                      "'; restore the directory from a backup");
  }
  if (version > history_format_version) {
    return fail(Errc::UNIMPLEMENTED,
                impl.where() + " has format version " + std::to_string(version) +
                    ", but this troupe reads format " + std::to_string(history_format_version) +
                    " at most; run the newer troupe that wrote it");
  }
  if (version < 2) {
    if (auto added = add_created_index(impl); !added) return added.error();
  }
  if (version < history_format_version) return write_format_version(impl);
  return ok();
}

/// The workflow part of an events key, for the memtable's insert hints. A group commit holds
/// the events of many workflows, so without a hint every insert searches the skip list from
/// its top; with one, an event lands next to its workflow's previous one, which is where it
/// belongs (a workflow's events arrive in sequence order). Only events keys are in the domain
/// (parse_event_key's test): a purge's range deletion keys go to the memtable's other skip
/// list, and sharing a workflow's hint with it would corrupt the hint.
class WorkflowOfEventKey final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "troupe.WorkflowOfEventKey"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), key.size() - 8);
  }
  bool InDomain(const rocksdb::Slice& key) const override { return parse_event_key(view(key)).has_value(); }
};

/// RocksDB's background errors (a failed write-ahead log write, flush or compaction) fail-stop
/// the store at once, so the node stops even if no write of its own fails next. RocksDB's own
/// recovery stays off: it would flush and rewrite files on the disk that just failed, reusing
/// file writers that hold the error (which asserts), for a store that takes no more writes
/// anyway; the restarted node's open recovers instead.
class FailStopOnBackgroundError final : public rocksdb::EventListener {
 public:
  explicit FailStopOnBackgroundError(RocksHistoryStore::Impl& store) : store_(store) {}

  const char* Name() const override { return "troupe.FailStopOnBackgroundError"; }

  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override {
    if (error != nullptr && !error->ok()) store_.fail_stop(*error, what(reason) + " " + store_.where());
  }

  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status, bool* auto_recovery) override {
    *auto_recovery = false;
  }

 private:
  static std::string what(rocksdb::BackgroundErrorReason reason) {
    switch (reason) {
      case rocksdb::BackgroundErrorReason::kFlush:
      case rocksdb::BackgroundErrorReason::kFlushNoWAL: return "flushing a memtable of";
      case rocksdb::BackgroundErrorReason::kCompaction: return "compacting";
      case rocksdb::BackgroundErrorReason::kManifestWrite:
      case rocksdb::BackgroundErrorReason::kManifestWriteNoWAL: return "writing the manifest of";
      default: return "writing to";
    }
  }

  RocksHistoryStore::Impl& store_;  // outlives the database, which calls this
};

rocksdb::ColumnFamilyOptions column_family_options(const StoreOptions& options,
                                                   const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = options.write_buffer_bytes;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return cf;
}

}  // namespace

Result<std::unique_ptr<RocksHistoryStore>> RocksHistoryStore::open(
    const std::string& directory, const StoreOptions& options, std::shared_ptr<rocksdb::Env> env) {
  auto impl = std::make_unique<Impl>();
  impl->directory = directory;
  impl->options = options;
  impl->env = std::move(env);

  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    return fail(Errc::UNAVAILABLE, "cannot create history store directory '" + directory +
                                       "': " + ec.message() +
                                       "; check the path and its permissions");
  }

  if (auto space = std::filesystem::space(directory, ec); !ec && space.available < options.min_free_bytes) {
    return disk_full("cannot open " + impl->where(),
                     "less than the " + size_text(options.min_free_bytes) + " it needs to start", directory);
  }

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  if (impl->env) db_options.env = impl->env.get();
  db_options.max_background_jobs = 2;
  // Our own LOG writer: RocksDB's aborts the process on the line after a failed LOG write.
  db_options.info_log = detail::open_info_log(
      impl->env ? impl->env->GetFileSystem() : rocksdb::FileSystem::Default(), directory,
      options.info_log_bytes);
  db_options.listeners.push_back(std::make_shared<FailStopOnBackgroundError>(*impl));
  // No automatic resume after a retryable I/O error either (see FailStopOnBackgroundError).
  db_options.max_bgerror_resume_count = 0;
  db_options.bytes_per_sync = size_t{1} << 20;
  // Reuse old WAL files instead of creating new ones: a sync of a recycled (overwritten)
  // file commits no size or extent change, which about doubles synced commits per second on
  // ext4. Recycled records carry their log number, so stale tails are recognised at recovery.
  db_options.recycle_log_file_num = 4;
  // Flushes and compactions run at a low CPU priority: on a small machine they otherwise take
  // a core from the actors for a few hundred milliseconds at a time, which every workflow in
  // flight then waits out. They still get every cycle the foreground leaves, and writes stall
  // (RocksDB's own back-pressure) only if they fall a whole memtable behind.
  {
    rocksdb::Env* background = impl->env ? impl->env.get() : rocksdb::Env::Default();
    (void)background->LowerThreadPoolCPUPriority(rocksdb::Env::HIGH, rocksdb::CpuPriority::kLow);
    (void)background->LowerThreadPoolCPUPriority(rocksdb::Env::LOW, rocksdb::CpuPriority::kLow);
  }

  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  auto cf_options = column_family_options(options, cache);
  auto index_options = cf_options;
  index_options.write_buffer_size = options.index_write_buffer_bytes;
  cf_options.memtable_insert_with_hint_prefix_extractor = std::make_shared<WorkflowOfEventKey>();

  // Open every column family that exists, so a store written by a newer build with more of
  // them still opens far enough to read its format version and refuse it clearly.
  std::vector<std::string> names = {rocksdb::kDefaultColumnFamilyName, cf_events, cf_workflows,
                                    cf_open, cf_workers, cf_meta, cf_created, cf_worker_journal};
  if (std::filesystem::exists(std::filesystem::path(directory) / "CURRENT")) {
    std::vector<std::string> existing;
    auto status = rocksdb::DB::ListColumnFamilies(db_options, directory, &existing);
    if (!status.ok()) return to_error(status, "opening " + impl->where());
    for (const auto& name : existing) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const auto& name : names) {
    descriptors.emplace_back(name, name == cf_events ? cf_options : index_options);
  }

  rocksdb::DB* raw_db = nullptr;
  auto status = rocksdb::DB::Open(db_options, directory, descriptors, &impl->handles, &raw_db);
  if (!status.ok()) {
    if (is_lock_error(status)) {
      return fail(Errc::UNAVAILABLE,
                  impl->where() + " is in use by another process (" + status.ToString() +
                      "); stop the other troupe node using this directory, or use another one");
    }
    if (status.IsCorruption()) return to_error(status, "opening " + impl->where());
    // A full disk gets the message a full disk gets at run time.
    auto error = status.IsNoSpace() ? write_error(status, "cannot open " + impl->where(), directory)
                                    : to_error(status, "cannot open " + impl->where());
    if (error.code == Errc::INTERNAL) error.code = Errc::UNAVAILABLE;
    return error;
  }
  impl->db.reset(raw_db);
  impl->events = impl->handles[1];
  impl->workflows = impl->handles[2];
  impl->open_index = impl->handles[3];
  impl->workers = impl->handles[4];
  impl->meta = impl->handles[5];
  impl->created = impl->handles[6];
  impl->worker_journal = impl->handles[7];  // created on first open by a build that keeps journals

  if (auto checked = check_format(*impl); !checked) return checked.error();
  {
    // From now on a failure stops the node; one while opening is open()'s error instead.
    std::lock_guard lock(impl->failure_mutex);
    if (impl->failed.load(std::memory_order_acquire)) return impl->failure;
    impl->on_fail_stop = options.on_fail_stop;
  }

  Impl* raw = impl.get();
  impl->committer = std::make_unique<GroupCommitter<WriteOp>>(
      GroupCommitLimits{options.max_batch_ops, options.max_batch_bytes},
      [raw](std::vector<WriteOp>& batch) { raw->commit(batch); });
  return std::unique_ptr<RocksHistoryStore>(new RocksHistoryStore(std::move(impl)));
}

RocksHistoryStore::RocksHistoryStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RocksHistoryStore::~RocksHistoryStore() = default;

const std::string& RocksHistoryStore::directory() const { return impl_->directory; }

const CommitMeters& RocksHistoryStore::commit_meters() const { return impl_->meters; }

StoreSizes RocksHistoryStore::sizes() const {
  // A property RocksDB cannot give leaves its figure 0: a metric, not worth failing a scrape.
  StoreSizes out;
  uint64_t value = 0;
  if (impl_->db->GetAggregatedIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &value)) {
    out.sst_bytes = value;
  }
  if (impl_->db->GetAggregatedIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &value)) {
    out.memtable_bytes = value;
  }
  return out;
}

// --- writes ---------------------------------------------------------------------------------

void RocksHistoryStore::append(std::string workflow_id, std::vector<NewEvent> events,
                               std::optional<WorkflowRecord> record, AppendCallback done) {
  if (auto checked = check_id(workflow_id, "workflow id"); !checked) return done(checked.error());
  impl_->submit(WriteOp{AppendOp{std::move(workflow_id), std::move(events), std::move(record),
                                 std::move(done)}});
}

void RocksHistoryStore::close(std::string workflow_id, int64_t closed_us, DoneCallback done) {
  if (auto checked = check_id(workflow_id, "workflow id"); !checked) return done(checked.error());
  impl_->submit(WriteOp{CloseOp{std::move(workflow_id), closed_us, std::move(done)}});
}

void RocksHistoryStore::put_worker(std::string shard_id, WorkerRecord record, DoneCallback done) {
  if (auto checked = check_id(shard_id, "shard id"); !checked) return done(checked.error());
  impl_->submit(WriteOp{PutWorkerOp{std::move(shard_id), std::move(record), std::move(done)}});
}

void RocksHistoryStore::append_worker_journal(std::string shard_id, NewEvent event, AppendCallback done) {
  if (auto checked = check_id(shard_id, "shard id"); !checked) return done(checked.error());
  impl_->submit(WriteOp{JournalOp{std::move(shard_id), std::move(event), std::move(done)}});
}

Result<uint64_t> RocksHistoryStore::purge_closed(int64_t closed_before_us) {
  uint64_t purged = 0;
  std::string after;
  bool first_page = true;
  for (;;) {
    // Pick a page of candidates from a consistent view, then let the writer thread delete
    // those still eligible, interleaved with other writes.
    std::vector<std::string> candidates;
    std::string last_seen;
    {
      rocksdb::ReadOptions read_options;
      std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(read_options, impl_->workflows));
      if (first_page) {
        it->SeekToFirst();
      } else {
        it->Seek(slice(after));
        if (it->Valid() && view(it->key()) == after) it->Next();
      }
      size_t examined = 0;
      for (; it->Valid() && examined < purge_page; it->Next(), ++examined) {
        last_seen.assign(it->key().data(), it->key().size());
        auto record = decode_workflow_record(view(it->value()));
        if (!record) {
          return fail(Errc::CORRUPTION, "workflow '" + last_seen + "' in " + impl_->where() +
                                            ": " + record.error().message);
        }
        if (record->status == WorkflowStatus::CLOSED && record->closed_us < closed_before_us) {
          candidates.push_back(last_seen);
        }
      }
      if (!it->status().ok()) return to_error(it->status(), "scanning " + impl_->where());
      if (examined == 0) break;
    }
    if (!candidates.empty()) {
      std::promise<Result<uint64_t>> promise;
      auto future = promise.get_future();
      impl_->submit(WriteOp{PurgeOp{std::move(candidates), closed_before_us,
                                    [&promise](Result<uint64_t> r) { promise.set_value(r); }}});
      auto page = future.get();
      if (!page) return page.error();
      purged += *page;
    }
    after = std::move(last_seen);
    first_page = false;
  }
  return purged;
}

// --- reads ----------------------------------------------------------------------------------

Result<std::vector<StoredEvent>> RocksHistoryStore::read(std::string_view workflow_id,
                                                         uint64_t from_sequence, size_t limit) {
  if (auto checked = check_id(workflow_id, "workflow id"); !checked) return checked.error();
  return impl_->read_keyed(impl_->events, workflow_id, from_sequence, limit, "workflow");
}

Result<std::vector<StoredEvent>> RocksHistoryStore::read_worker_journal(std::string_view shard_id,
                                                                        uint64_t from_sequence, size_t limit) {
  if (auto checked = check_id(shard_id, "shard id"); !checked) return checked.error();
  return impl_->read_keyed(impl_->worker_journal, shard_id, from_sequence, limit, "journal of worker");
}

Result<uint64_t> RocksHistoryStore::last_sequence(std::string_view workflow_id) {
  if (auto checked = check_id(workflow_id, "workflow id"); !checked) return checked.error();
  return impl_->read_last_sequence(workflow_id);
}

Result<std::optional<WorkflowRecord>> RocksHistoryStore::find_workflow(
    std::string_view workflow_id) {
  if (auto checked = check_id(workflow_id, "workflow id"); !checked) return checked.error();
  return impl_->read_workflow(workflow_id, nullptr);
}

Result<std::vector<WorkflowEntry>> RocksHistoryStore::scan_open(std::string_view after,
                                                               size_t limit) {
  std::vector<WorkflowEntry> page;
  if (limit == 0) return page;
  const rocksdb::Snapshot* snapshot = impl_->db->GetSnapshot();
  struct Release {
    rocksdb::DB* db;
    const rocksdb::Snapshot* snapshot;
    ~Release() { db->ReleaseSnapshot(snapshot); }
  } release{impl_->db.get(), snapshot};

  auto it = impl_->iterate_after(impl_->open_index, after, snapshot);
  for (; it->Valid() && page.size() < limit; it->Next()) {
    page.push_back(WorkflowEntry{std::string(view(it->key())), {}});
  }
  if (!it->status().ok()) return to_error(it->status(), "scanning " + impl_->where());
  for (auto& entry : page) {
    auto record = impl_->read_workflow(entry.id, snapshot);
    if (!record) return record.error();
    if (!*record) {
      return fail(Errc::CORRUPTION, impl_->where() + " lists workflow '" + entry.id +
                                        "' as open but has no record of it");
    }
    entry.record = std::move(**record);
  }
  return page;
}

Result<ListPage> RocksHistoryStore::list_workflows(const ListQuery& query) {
  if (auto checked = query.check(); !checked) return checked.error();
  if (query.order == ListOrder::NEWEST_FIRST) return impl_->list_newest_first(query);
  ListPage page;
  // One iterator sees one consistent view; records are decoded one at a time and only the
  // matches kept, so memory follows the page, not the index.
  auto it = impl_->iterate_after(impl_->workflows, query.after);
  size_t examined = 0;
  for (; it->Valid(); it->Next()) {
    std::string id(view(it->key()));
    auto record = decode_workflow_record(view(it->value()));
    if (!record) {
      return fail(Errc::CORRUPTION, "workflow '" + id + "' in " + impl_->where() + ": " +
                                        record.error().message);
    }
    ++examined;
    if (query.matches(*record)) page.entries.push_back(WorkflowEntry{id, std::move(*record)});
    if (page.entries.size() == query.limit || examined == query.scan_budget) {
      page.next_cursor = std::move(id);
      it->Next();  // only to learn whether anything is left
      break;
    }
  }
  if (!it->status().ok()) return to_error(it->status(), "listing workflows in " + impl_->where());
  if (!it->Valid()) page.next_cursor.clear();  // the end of the index: no next page
  return page;
}

Result<std::optional<WorkerRecord>> RocksHistoryStore::find_worker(std::string_view shard_id) {
  if (auto checked = check_id(shard_id, "shard id"); !checked) return checked.error();
  std::string value;
  auto status = impl_->db->Get(rocksdb::ReadOptions(), impl_->workers, slice(shard_id), &value);
  if (status.IsNotFound()) return std::optional<WorkerRecord>{};
  const std::string context = "reading worker '" + std::string(shard_id) + "' in " + impl_->where();
  if (!status.ok()) return to_error(status, context);
  auto record = decode_worker_record(value);
  if (!record) return fail(Errc::CORRUPTION, context + ": " + record.error().message);
  return std::optional<WorkerRecord>(std::move(*record));
}

Result<std::vector<WorkerEntry>> RocksHistoryStore::list_workers() {
  std::vector<WorkerEntry> out;
  std::unique_ptr<rocksdb::Iterator> it(
      impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->workers));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string shard(view(it->key()));
    auto record = decode_worker_record(view(it->value()));
    if (!record) {
      return fail(Errc::CORRUPTION, "reading worker '" + shard + "' in " + impl_->where() + ": " +
                                        record.error().message);
    }
    out.push_back(WorkerEntry{std::move(shard), std::move(*record)});
  }
  if (!it->status().ok()) return to_error(it->status(), "listing workers in " + impl_->where());
  return out;
}

StoreStats RocksHistoryStore::stats() const {
  auto group = impl_->committer->stats();
  StoreStats out;
  out.batches = group.batches;
  out.operations = group.operations;
  out.largest_batch = group.largest_batch;
  out.events = impl_->events_written_shared.load(std::memory_order_relaxed);
  out.bytes_written = impl_->bytes_written_shared.load(std::memory_order_relaxed);
  return out;
}

std::vector<std::pair<std::string, std::string>> RocksHistoryStore::engine_properties() const {
  // Sizes are the store's, summed over its column families; stalls and rates are the
  // database's, the same whichever family is asked.
  struct Property {
    const char* label;
    const char* name;
    bool per_family;
  };
  static const std::vector<Property> properties = {
      {"live data bytes (estimate)", "rocksdb.estimate-live-data-size", true},
      {"SST file bytes", "rocksdb.total-sst-files-size", true},
      {"keys (estimate)", "rocksdb.estimate-num-keys", true},
      {"memtable bytes", "rocksdb.cur-size-all-mem-tables", true},
      {"immutable memtables", "rocksdb.num-immutable-mem-table", true},
      {"pending compaction bytes", "rocksdb.estimate-pending-compaction-bytes", true},
      {"compactions running", "rocksdb.num-running-compactions", false},
      {"flushes running", "rocksdb.num-running-flushes", false},
      {"write stopped (1: yes)", "rocksdb.is-write-stopped", false},
      {"delayed write rate (bytes/s, 0: none)", "rocksdb.actual-delayed-write-rate", false},
  };
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : properties) {
    uint64_t value = 0;
    const bool known = p.per_family ? impl_->db->GetAggregatedIntProperty(p.name, &value)
                                    : impl_->db->GetIntProperty(p.name, &value);
    if (known) out.emplace_back(p.label, std::to_string(value));
  }
  return out;
}

}  // namespace troupe::storage
