// Options of the history store. Every field says its trade-off and its default.
#pragma once

#include <cstddef>
#include <functional>

#include "schema/result.hpp"
#include "storage/history_store.hpp"

namespace troupe::storage {

struct StoreOptions {
  /// Sync the write-ahead log before an append is acknowledged. With `false`, an
  /// acknowledged append survives a process crash but the last moments before a power
  /// loss or kernel crash may be lost; appends get cheaper by about one disk flush.
  /// Default: true.
  bool sync = true;

  /// Most operations (appends, closes, …) combined into one WriteBatch and one sync.
  /// Larger batches raise throughput under load and the latency of the batch's last caller.
  /// Default: 4096.
  size_t max_batch_ops = 4096;

  /// Approximate size at which a batch stops taking operations, in bytes. Bounds the memory
  /// and the latency of one group commit. Default: 8 MiB.
  size_t max_batch_bytes = size_t{8} << 20;

  /// Size of the block cache shared by all column families, in bytes. Reads of histories
  /// that are not in memtables are served from here. Default: 32 MiB.
  size_t block_cache_bytes = size_t{32} << 20;

  /// Size of each memtable of the events column family, in bytes. Larger memtables flush less
  /// often and cost that much memory (twice, while one flushes). Default: 16 MiB.
  size_t write_buffer_bytes = size_t{16} << 20;

  /// Size of each memtable of the small index column families (workflows, open, workers,
  /// worker_journal, meta), in bytes. Default: 4 MiB.
  size_t index_write_buffer_bytes = size_t{4} << 20;

  /// The newest entries of each worker's journal kept (at least 1): an append past it deletes
  /// the oldest. More keeps a longer past of a worker's registrations and health changes, at
  /// about 100 bytes an entry. Default: 1000 (default_worker_journal_entries).
  size_t worker_journal_entries = default_worker_journal_entries;

  /// Called once when the store fail-stops (see HistoryStore): a write, or RocksDB's own
  /// background work (a flush or compaction), failed, typically on a full disk. It gets the
  /// error every later write gets, which names the directory, the free space left there and
  /// what to do. Runs on the store's writer thread or a RocksDB thread, with no lock of the
  /// store held; keep it short and do not call the store from it. A node stops on it.
  /// Default: none (writes just fail).
  std::function<void(const Error&)> on_fail_stop;

  /// The free space the store's filesystem must have for the store to open, in bytes. Below
  /// it, open() refuses as for a full disk: the first writes would fail anyway, and a node
  /// that refuses to start says so more clearly than one that starts and stops at once.
  /// Default: 1 MiB.
  size_t min_free_bytes = size_t{1} << 20;

  /// The size at which the store's RocksDB info log (LOG) is moved to LOG.old and begun
  /// anew, in bytes; the two files stay under twice this. Default: 8 MiB.
  size_t info_log_bytes = size_t{8} << 20;
};

}  // namespace troupe::storage
