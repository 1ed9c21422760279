// WorkerBook: a worker's record read once, kept, updated and written back; journal entries built.
#include "actors/worker/worker_book.hpp"

#include <utility>

#include "actors/history_events.hpp"
#include "schema/node_log.hpp"

namespace troupe::actors {
namespace {

static_assert(static_cast<int>(HealthState::NEW) == static_cast<int>(schema::WorkerHealth::NEW));
static_assert(static_cast<int>(HealthState::HEALTHY) == static_cast<int>(schema::WorkerHealth::HEALTHY));
static_assert(static_cast<int>(HealthState::UNHEALTHY) == static_cast<int>(schema::WorkerHealth::UNHEALTHY));
static_assert(static_cast<int>(HealthState::MUST_DIE) == static_cast<int>(schema::WorkerHealth::MUST_DIE));
static_assert(static_cast<int>(HealthState::STOPPING) == static_cast<int>(schema::WorkerHealth::STOPPING));
static_assert(HealthMachineTraits::states == 5, "a new health state needs its WorkerHealth enumerant");

schema::WorkerHealth to_schema(HealthState health) { return static_cast<schema::WorkerHealth>(health); }

/// What a failed write leaves: a line in the node's log. The store fail-stops on a failed
/// write, and the node stops with it, so there is nothing to retry here.
storage::DoneCallback log_failure(std::shared_ptr<NodeLog> log, std::string shard_id) {
  return [log = std::move(log), shard_id = std::move(shard_id)](Result<void> done) {
    if (!done) log_or_none(log).error("could not record a worker", {{"worker", shard_id}, {"error", done.error().message}});
  };
}

}  // namespace

WorkerBook::WorkerBook(std::shared_ptr<storage::HistoryStore> store, std::function<int64_t()> now_us,
                       std::shared_ptr<NodeLog> log)
    : store_(std::move(store)), now_us_(std::move(now_us)), log_(std::move(log)) {}

void WorkerBook::registered(const WorkerInfo& info) {
  const int64_t now = now_us_();
  std::lock_guard lock(mutex_);
  storage::WorkerRecord record;
  if (auto previous = current(info.shard_id)) {
    record = std::move(*previous);
    if (!record.worker_id.empty() && !info.worker_id.empty() && record.worker_id != info.worker_id) {
      // Not refused: Bistro's rules decide who holds a shard. But worth a line: a worker whose
      // identity changes lost its data directory, or another machine took its name.
      log_or_none(log_).warn("worker presents a new worker id: its data directory is new, or another machine took its name",
                             {{"worker", info.shard_id},
                              {"host", info.hostname},
                              {"pid", info.pid},
                              {"worker_id", info.worker_id},
                              {"previous_worker_id", record.worker_id}});
    }
  } else {
    record.first_registered_us = now;
  }
  record.worker_id = info.worker_id;
  record.hostname = info.hostname;
  record.resource_id = info.resource_id;
  record.pid = info.pid;
  record.instance_id = info.instance_id;
  record.task_lists = info.task_lists;
  record.last_registered_us = now;
  record.last_seen_us = now;
  record.registrations += 1;
  record.status = worker_status_started;
  put(info.shard_id, std::move(record));

  journal(info.shard_id, make_event(storage::ActorKind::WORKER, info.shard_id, 0, now, [&](auto body) {
            auto r = body.initWorkerRegistered();
            r.setWorkerShard(info.shard_id);
            r.setHostname(info.hostname);
            r.setPid(info.pid);
            storage::write_task_list_slots(r.initTaskLists(static_cast<unsigned>(info.task_lists.size())),
                                           info.task_lists);
            r.setResourceId(info.resource_id);
            r.setMaxConcurrentSessions(info.max_concurrent_sessions);
            r.setWorkerId(info.worker_id);
            r.setInstanceId(info.instance_id);
          }));
}

void WorkerBook::set_status(const std::string& shard_id, const std::string& instance_id, std::string status) {
  const int64_t now = now_us_();
  std::lock_guard lock(mutex_);
  auto record = current(shard_id);
  if (!record || record->instance_id != instance_id) return;
  record->status = std::move(status);
  record->last_seen_us = now;
  put(shard_id, std::move(*record));
}

void WorkerBook::health_changed(const std::string& shard_id, HealthState from, HealthState to) {
  const int64_t now = now_us_();
  std::lock_guard lock(mutex_);
  journal(shard_id, make_event(storage::ActorKind::WORKER, shard_id, 0, now, [&](auto body) {
            auto h = body.initWorkerHealthChanged();
            h.setWorkerShard(shard_id);
            h.setFrom(to_schema(from));
            h.setTo(to_schema(to));
          }));
}

bool WorkerBook::update(const std::string& shard_id, const std::string& instance_id,
                        const std::function<void(storage::WorkerRecord&)>& change, storage::DoneCallback written) {
  std::lock_guard lock(mutex_);
  auto record = current(shard_id);
  if (!record || (!instance_id.empty() && record->instance_id != instance_id)) return false;
  change(*record);
  put(shard_id, std::move(*record), std::move(written));
  return true;
}

std::optional<storage::WorkerRecord> WorkerBook::find(const std::string& shard_id) {
  std::lock_guard lock(mutex_);
  return current(shard_id);
}

Result<std::vector<storage::WorkerEntry>> WorkerBook::all() {
  auto stored = store_->list_workers();
  if (!stored) return stored.error();
  std::lock_guard lock(mutex_);
  // What this book wrote may not be durable (and so listed) yet: its own copy wins.
  std::map<std::string, storage::WorkerRecord> records;
  for (auto& entry : *stored) records[entry.shard_id] = std::move(entry.record);
  for (const auto& [shard, record] : records_) records[shard] = record;
  std::vector<storage::WorkerEntry> out;
  out.reserve(records.size());
  for (auto& [shard, record] : records) out.push_back({shard, std::move(record)});
  return out;
}

std::optional<storage::WorkerRecord> WorkerBook::current(const std::string& shard_id) {
  if (auto it = records_.find(shard_id); it != records_.end()) return it->second;
  // A point lookup, once per shard and scheduler start.
  auto stored = store_->find_worker(shard_id);
  if (!stored) {
    log_or_none(log_).error("the record of a worker is unreadable: a new one replaces it",
                            {{"worker", shard_id}, {"error", stored.error().message}});
    return std::nullopt;
  }
  return std::move(*stored);
}

void WorkerBook::put(const std::string& shard_id, storage::WorkerRecord record, storage::DoneCallback written) {
  records_[shard_id] = record;
  auto logged = log_failure(log_, shard_id);
  store_->put_worker(shard_id, std::move(record), [logged, written = std::move(written)](Result<void> done) {
    if (written) written(done);
    logged(std::move(done));
  });
}

void WorkerBook::journal(const std::string& shard_id, storage::NewEvent event) {
  store_->append_worker_journal(shard_id, std::move(event), [shard_id, log = log_](Result<storage::AppendReceipt> done) {
    if (!done) log_or_none(log).error("could not journal a worker", {{"worker", shard_id}, {"error", done.error().message}});
  });
}

}  // namespace troupe::actors
