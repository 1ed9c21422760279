// The in-memory history store. Events are composed and packed exactly as on disk, so decoding
// code sees the same bytes.
#include "storage/memory_history_store.hpp"

#include <iterator>

#include "storage/codec.hpp"
#include "storage/keys.hpp"

namespace troupe::storage {

void MemoryHistoryStore::fail_writes(Error error) {
  std::lock_guard lock(mutex_);
  failure_ = std::move(error);
}

std::shared_ptr<MemoryHistoryStore> MemoryHistoryStore::snapshot() const {
  std::lock_guard lock(mutex_);
  auto copy = std::make_shared<MemoryHistoryStore>(journal_entries_);
  copy->events_ = events_;
  copy->workflows_ = workflows_;
  copy->workers_ = workers_;
  copy->journals_ = journals_;
  return copy;
}

Result<void> MemoryHistoryStore::check_writable() {
  if (failure_) return *failure_;
  return ok();
}

void MemoryHistoryStore::append(std::string workflow_id, std::vector<NewEvent> events,
                                std::optional<WorkflowRecord> record, AppendCallback done) {
  Result<AppendReceipt> outcome = AppendReceipt{};
  {
    std::lock_guard lock(mutex_);
    if (auto checked = check_id(workflow_id, "workflow id"); !checked) {
      outcome = checked.error();
    } else if (auto writable = check_writable(); !writable) {
      outcome = writable.error();
    } else {
      auto& history = events_[workflow_id];
      const uint64_t first = history.size() + 1;
      std::vector<StoredEvent> composed;
      for (size_t i = 0; i < events.size() && outcome; ++i) {
        auto packed = compose_event(first + i, events[i]);
        if (!packed) {
          outcome = fail(packed.error().code, "event " + std::to_string(i) + " appended to workflow '" +
                                                  workflow_id + "': " + packed.error().message);
        } else {
          composed.push_back(StoredEvent{first + i, std::move(*packed)});
        }
      }
      if (outcome && history.empty() && !workflows_.count(workflow_id)) {
        // As RocksHistoryStore: only a submission may start a history.
        auto starts = check_history_start(workflow_id, composed.empty() ? nullptr : &composed.front().packed);
        if (!starts) {
          outcome = starts.error();
          events_.erase(workflow_id);  // leaves no empty history behind
        }
      }
      if (outcome) {
        for (auto& e : composed) {
          stats_.bytes_written += e.packed.size();
          history.push_back(std::move(e));
        }
        if (record) workflows_[workflow_id] = *record;
        stats_.batches += 1;
        stats_.operations += 1;
        stats_.events += events.size();
        outcome = AppendReceipt{first, static_cast<uint32_t>(events.size())};
      }
    }
  }
  report([done = std::move(done), outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
}

void MemoryHistoryStore::close(std::string workflow_id, int64_t closed_us, DoneCallback done) {
  Result<void> outcome = ok();
  {
    std::lock_guard lock(mutex_);
    auto it = workflows_.find(workflow_id);
    if (auto writable = check_writable(); !writable) {
      outcome = writable.error();
    } else if (it == workflows_.end()) {
      outcome = fail(Errc::NOT_FOUND, "cannot close workflow '" + workflow_id + "': it has no record");
    } else if (it->second.status == WorkflowStatus::OPEN) {
      it->second.status = WorkflowStatus::CLOSED;
      it->second.closed_us = closed_us;
      it->second.live_state.clear();
    }
  }
  report([done = std::move(done), outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
}

void MemoryHistoryStore::put_worker(std::string shard_id, WorkerRecord record, DoneCallback done) {
  Result<void> outcome = ok();
  {
    std::lock_guard lock(mutex_);
    if (auto writable = check_writable(); !writable) {
      outcome = writable.error();
    } else {
      workers_[shard_id] = std::move(record);
    }
  }
  report([done = std::move(done), outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
}

void MemoryHistoryStore::append_worker_journal(std::string shard_id, NewEvent event, AppendCallback done) {
  Result<AppendReceipt> outcome = AppendReceipt{};
  {
    std::lock_guard lock(mutex_);
    if (auto checked = check_id(shard_id, "shard id"); !checked) {
      outcome = checked.error();
    } else if (auto writable = check_writable(); !writable) {
      outcome = writable.error();
    } else {
      auto& journal = journals_[shard_id];
      auto packed = compose_event(journal.last + 1, event);
      if (!packed) {
        outcome = fail(packed.error().code, "journal entry of worker '" + shard_id + "': " + packed.error().message);
      } else {
        journal.last += 1;
        stats_.bytes_written += packed->size();
        journal.entries.push_back(StoredEvent{journal.last, std::move(*packed)});
        while (journal.entries.size() > journal_entries_) journal.entries.pop_front();
        stats_.batches += 1;
        stats_.operations += 1;
        outcome = AppendReceipt{journal.last, 1};
      }
    }
  }
  report([done = std::move(done), outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
}

Result<std::vector<StoredEvent>> MemoryHistoryStore::read_worker_journal(std::string_view shard_id,
                                                                         uint64_t from_sequence, size_t limit) {
  std::lock_guard lock(mutex_);
  std::vector<StoredEvent> out;
  auto it = journals_.find(shard_id);
  if (it == journals_.end()) return out;
  for (const auto& e : it->second.entries) {
    if (e.sequence >= from_sequence && out.size() < limit) out.push_back(e);
  }
  return out;
}

void MemoryHistoryStore::report(std::function<void()> report) {
  {
    std::lock_guard lock(mutex_);
    if (holding_) {
      held_.push_back(std::move(report));
      return;
    }
  }
  report();
}

void MemoryHistoryStore::hold() {
  std::lock_guard lock(mutex_);
  holding_ = true;
}

void MemoryHistoryStore::release() {
  std::vector<std::function<void()>> reports;
  {
    std::lock_guard lock(mutex_);
    holding_ = false;
    reports.swap(held_);
  }
  for (auto& report : reports) report();
}

Result<std::vector<StoredEvent>> MemoryHistoryStore::read(std::string_view workflow_id,
                                                          uint64_t from_sequence, size_t limit) {
  std::lock_guard lock(mutex_);
  std::vector<StoredEvent> out;
  auto it = events_.find(workflow_id);
  if (it == events_.end()) return out;
  for (const auto& e : it->second) {
    if (e.sequence >= from_sequence && out.size() < limit) out.push_back(e);
  }
  return out;
}

Result<uint64_t> MemoryHistoryStore::last_sequence(std::string_view workflow_id) {
  std::lock_guard lock(mutex_);
  auto it = events_.find(workflow_id);
  return it == events_.end() ? uint64_t{0} : uint64_t{it->second.size()};
}

Result<std::optional<WorkflowRecord>> MemoryHistoryStore::find_workflow(std::string_view workflow_id) {
  std::lock_guard lock(mutex_);
  auto it = workflows_.find(workflow_id);
  if (it == workflows_.end()) return std::optional<WorkflowRecord>{};
  return std::optional<WorkflowRecord>(it->second);
}

Result<std::vector<WorkflowEntry>> MemoryHistoryStore::scan_open(std::string_view after, size_t limit) {
  std::lock_guard lock(mutex_);
  std::vector<WorkflowEntry> out;
  for (auto it = workflows_.upper_bound(after); it != workflows_.end() && out.size() < limit; ++it) {
    if (it->second.status == WorkflowStatus::OPEN) out.push_back({it->first, it->second});
  }
  return out;
}

Result<ListPage> MemoryHistoryStore::list_workflows(const ListQuery& query) {
  if (auto checked = query.check(); !checked) return checked.error();
  std::lock_guard lock(mutex_);
  ListPage page;
  if (query.order == ListOrder::NEWEST_FIRST) {
    // The creation order, as the on-disk index keeps it (a test double: sorted per call).
    std::map<std::string, const std::pair<const std::string, WorkflowRecord>*> by_created;
    for (const auto& entry : workflows_) by_created.emplace(created_key(entry.second.created_us, entry.first), &entry);
    auto it = by_created.begin();
    if (auto cursor = parse_newest_first_cursor(query.after)) {
      it = by_created.upper_bound(created_key(cursor->first, cursor->second));
    }
    size_t examined = 0;
    for (; it != by_created.end(); ++it) {
      const auto& [id, record] = *it->second;
      ++examined;
      if (query.matches(record)) page.entries.push_back({id, record});
      if (page.entries.size() == query.limit || examined == query.scan_budget) {
        if (std::next(it) != by_created.end()) page.next_cursor = newest_first_cursor(record.created_us, id);
        break;
      }
    }
    return page;
  }
  size_t examined = 0;
  for (auto it = workflows_.upper_bound(query.after); it != workflows_.end(); ++it) {
    ++examined;
    if (query.matches(it->second)) page.entries.push_back({it->first, it->second});
    if (page.entries.size() == query.limit || examined == query.scan_budget) {
      // As RocksHistoryStore: resume after the last id examined, unless nothing is left.
      if (std::next(it) != workflows_.end()) page.next_cursor = it->first;
      break;
    }
  }
  return page;
}

Result<uint64_t> MemoryHistoryStore::purge_closed(int64_t closed_before_us) {
  std::lock_guard lock(mutex_);
  if (auto writable = check_writable(); !writable) return writable.error();
  uint64_t purged = 0;
  for (auto it = workflows_.begin(); it != workflows_.end();) {
    if (it->second.status == WorkflowStatus::CLOSED && it->second.closed_us < closed_before_us) {
      events_.erase(it->first);
      it = workflows_.erase(it);
      ++purged;
    } else {
      ++it;
    }
  }
  return purged;
}

Result<std::optional<WorkerRecord>> MemoryHistoryStore::find_worker(std::string_view shard_id) {
  std::lock_guard lock(mutex_);
  auto it = workers_.find(shard_id);
  if (it == workers_.end()) return std::optional<WorkerRecord>{};
  return std::optional<WorkerRecord>(it->second);
}

Result<std::vector<WorkerEntry>> MemoryHistoryStore::list_workers() {
  std::lock_guard lock(mutex_);
  std::vector<WorkerEntry> out;
  for (const auto& [shard, record] : workers_) out.push_back({shard, record});
  return out;
}

StoreStats MemoryHistoryStore::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace troupe::storage
