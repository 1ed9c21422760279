// The RocksDB implementation of HistoryStore. RocksDB itself stays inside the .cpp; only a
// forward declaration of rocksdb::Env appears here, for tests that inject faults.
#pragma once

#include <memory>
#include <string>

#include "schema/meters.hpp"
#include "storage/history_store.hpp"
#include "storage/store_options.hpp"

namespace rocksdb {
class Env;
}

namespace troupe::storage {

/// How the group commit has gone since the store opened, for the node's metrics. Written by the
/// store's writer thread once per committed batch; read from any thread.
struct CommitMeters {
  /// Operations (appends, closes, worker writes...) per batch that reached the database.
  meters::Histogram batch_operations{meters::size_bounds()};
  /// How long each such batch's write took, sync included when StoreOptions::sync is on, in µs.
  meters::Histogram write_us{meters::sync_bounds_us()};
};

/// What the store's files and memory hold now, in bytes, summed over its column families.
struct StoreSizes {
  uint64_t sst_bytes = 0;       ///< table files on disk (what flushes and compactions left)
  uint64_t memtable_bytes = 0;  ///< memtables not yet flushed (their data is also in the log)
};

/// The on-disk format this build writes and the newest it reads. 2 added the `created` index
/// (a store of format 1 gets it when first opened, see open()).
inline constexpr int history_format_version = 2;

class RocksHistoryStore final : public HistoryStore {
 public:
  /// Opens the store in `directory`, creating it (and missing parents) if needed. `env`
  /// replaces RocksDB's default environment; tests pass one that injects faults.
  /// Errors, each naming the directory: UNAVAILABLE (cannot create or write the directory,
  /// another process holds it, disk full), UNIMPLEMENTED (written by a newer troupe),
  /// CORRUPTION (damaged files). A store of an older format is brought up to this one first
  /// (format 1: the `created` index is built from the `workflows` index, a page per sync).
  static Result<std::unique_ptr<RocksHistoryStore>> open(const std::string& directory,
                                                         const StoreOptions& options = {},
                                                         std::shared_ptr<rocksdb::Env> env = {});

  /// Commits every queued write, then closes the database.
  ~RocksHistoryStore() override;

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
  std::vector<std::pair<std::string, std::string>> engine_properties() const override;

  /// The directory the store lives in.
  const std::string& directory() const;

  /// The group commit's batch sizes and write latencies since open. Lives as long as the store.
  const CommitMeters& commit_meters() const;
  /// RocksDB's own figures of the store's size now (cheap: no file is read). Any thread.
  StoreSizes sizes() const;

  struct Impl;

 private:
  explicit RocksHistoryStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe::storage
