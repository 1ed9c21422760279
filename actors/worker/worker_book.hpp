// The scheduler's durable account of its workers: each shard's record (the store's `workers`)
// and its journal of registrations and health changes (`worker_journal`). Not an actor: the
// dispatcher and the worker actors call it from their own threads, and the store's group commit
// makes each write durable without any of them waiting for it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actors/worker/health_machine.hpp"
#include "actors/worker/worker_link.hpp"
#include "storage/history_store.hpp"

namespace troupe {
class NodeLog;
}  // namespace troupe

namespace troupe::actors {

/// The status a worker's record holds after an accepted registration.
inline constexpr const char* worker_status_started = "STARTED";

class WorkerBook {
 public:
  /// `store` must take writes until the actor system stops; `now_us` is the wall clock in
  /// microseconds since the Unix epoch (a test passes its own); `log` hears of records that
  /// could not be read or written, and of workers whose identity changed (nullptr: nowhere).
  WorkerBook(std::shared_ptr<storage::HistoryStore> store, std::function<int64_t()> now_us,
             std::shared_ptr<NodeLog> log = nullptr);

  /// The dispatcher accepted a registration of `info` (a new instance, a replacement or a
  /// reconnection): the shard's record counts it, takes the instance's details, and becomes
  /// STARTED; the journal gets a workerRegistered entry. Any thread; does not wait for the write.
  void registered(const WorkerInfo& info);

  /// The one place a worker's status is written: the shard's record takes `status` and is
  /// seen now, if the record is instance `instance_id`'s (see update). For the status machine's
  /// transitions; a shard without a record is ignored (its registration writes one). Any
  /// thread; does not wait for the write.
  void set_status(const std::string& shard_id, const std::string& instance_id, std::string status);

  /// The instance of `shard_id` went from health `from` to `to`: the journal gets a
  /// workerHealthChanged entry. Any thread; does not wait for the write.
  void health_changed(const std::string& shard_id, HealthState from, HealthState to);

  /// Applies `change` to the shard's record and writes it; false (nothing written, `written`
  /// never called) if the shard has no record, or `instance_id` is given and the record is
  /// another instance's (the shard's newest registration): an instance a newer one replaced
  /// cannot overwrite the newer one's record with what its mailbox still held. For standing and
  /// failures, which outlive the worker's processes. Any thread; does not wait for the write:
  /// `written` (if any) is told its outcome on the store's thread.
  bool update(const std::string& shard_id, const std::string& instance_id,
              const std::function<void(storage::WorkerRecord&)>& change, storage::DoneCallback written = {});

  /// The shard's record as last written (nullopt: none). Any thread.
  std::optional<storage::WorkerRecord> find(const std::string& shard_id);
  /// Every shard's record, by shard id. Any thread; reads the store.
  Result<std::vector<storage::WorkerEntry>> all();

 private:
  /// The shard's record as last written by this book, else as the store holds it; nullopt if
  /// there is none (or it is unreadable, which is logged). Called with mutex_ held.
  std::optional<storage::WorkerRecord> current(const std::string& shard_id);
  /// Writes `record` of `shard_id` to the store and the cache. Called with mutex_ held, so the
  /// store takes a shard's records in the order they were made.
  void put(const std::string& shard_id, storage::WorkerRecord record, storage::DoneCallback written = {});
  void journal(const std::string& shard_id, storage::NewEvent event);

  std::shared_ptr<storage::HistoryStore> store_;
  std::function<int64_t()> now_us_;
  std::shared_ptr<NodeLog> log_;
  std::mutex mutex_;
  /// The records this book wrote, by shard: the store's value may not be durable yet, so a
  /// record is read from the store only the first time a shard comes up.
  std::map<std::string, storage::WorkerRecord> records_;
};

}  // namespace troupe::actors
