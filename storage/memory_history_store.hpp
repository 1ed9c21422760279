// HistoryStore in memory, for actor tests: the same contract as RocksHistoryStore, callbacks
// run synchronously on the caller's thread (so a deterministic actor test stays on its one
// thread), and failures can be injected.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "storage/history_store.hpp"

namespace troupe::storage {

class MemoryHistoryStore final : public HistoryStore {
 public:
  /// `worker_journal_entries`: the newest entries of each worker's journal kept, >= 1.
  explicit MemoryHistoryStore(size_t worker_journal_entries = default_worker_journal_entries)
      : journal_entries_(worker_journal_entries < 1 ? 1 : worker_journal_entries) {}

  void append(std::string workflow_id, std::vector<NewEvent> events,
              std::optional<WorkflowRecord> record, AppendCallback done) override;
  void close(std::string workflow_id, int64_t closed_us, DoneCallback done) override;
  void put_worker(std::string shard_id, WorkerRecord record, DoneCallback done) override;
  void append_worker_journal(std::string shard_id, NewEvent event, AppendCallback done) override;
  Result<std::vector<StoredEvent>> read_worker_journal(std::string_view shard_id, uint64_t from_sequence,
                                                       size_t limit) override;
  Result<std::vector<StoredEvent>> read(std::string_view workflow_id, uint64_t from_sequence,
                                        size_t limit) override;
  Result<uint64_t> last_sequence(std::string_view workflow_id) override;
  Result<std::optional<WorkflowRecord>> find_workflow(std::string_view workflow_id) override;
  Result<std::vector<WorkflowEntry>> scan_open(std::string_view after, size_t limit) override;
  Result<ListPage> list_workflows(const ListQuery& query) override;
  Result<uint64_t> purge_closed(int64_t closed_before_us) override;
  Result<std::optional<WorkerRecord>> find_worker(std::string_view shard_id) override;
  Result<std::vector<WorkerEntry>> list_workers() override;
  StoreStats stats() const override;

  /// Every later write fails with `error` and the store stays failed, as a fail-stopped
  /// RocksHistoryStore does.
  void fail_writes(Error error);

  /// A group commit by hand. From hold() on, writes take effect at once but their callbacks
  /// wait; release() runs the waiting ones in the order the writes came, as a group commit
  /// reports the operations of one batch, and callbacks run at once again.
  void hold();
  void release();

  /// A copy of everything written so far: what a restarted process finds after a crash,
  /// whatever the crashed one's threads do afterwards.
  std::shared_ptr<MemoryHistoryStore> snapshot() const;

 private:
  Result<void> check_writable();
  /// Runs `report` now, or at release() while held.
  void report(std::function<void()> report);

  mutable std::mutex mutex_;
  std::map<std::string, std::vector<StoredEvent>, std::less<>> events_;
  std::map<std::string, WorkflowRecord, std::less<>> workflows_;
  std::map<std::string, WorkerRecord, std::less<>> workers_;
  /// A worker's journal: its newest entries, and the last sequence it ever had.
  struct Journal {
    uint64_t last = 0;
    std::deque<StoredEvent> entries;
  };
  std::map<std::string, Journal, std::less<>> journals_;
  const size_t journal_entries_;
  std::optional<Error> failure_;
  StoreStats stats_;
  bool holding_ = false;
  std::vector<std::function<void()>> held_;
};

}  // namespace troupe::storage
