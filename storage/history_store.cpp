// The blocking conveniences of HistoryStore, built on its callback interface, and the checks
// and filters of ListQuery both stores share.
#include "storage/history_store.hpp"

#include <charconv>
#include <future>
#include <string>

namespace troupe::storage {
namespace {

template <class T, class Start>
Result<T> wait_for(Start&& start) {
  std::promise<Result<T>> promise;
  auto future = promise.get_future();
  start([&promise](Result<T> outcome) { promise.set_value(std::move(outcome)); });
  return future.get();
}

}  // namespace

std::string newest_first_cursor(int64_t created_us, std::string_view id) {
  return std::to_string(created_us) + ":" + std::string(id);
}

std::optional<std::pair<int64_t, std::string>> parse_newest_first_cursor(std::string_view cursor) {
  const auto colon = cursor.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  int64_t created_us = 0;
  auto [end, ec] = std::from_chars(cursor.data(), cursor.data() + colon, created_us);
  if (ec != std::errc() || end != cursor.data() + colon) return std::nullopt;
  return std::make_pair(created_us, std::string(cursor.substr(colon + 1)));
}

Result<void> ListQuery::check() const {
  if (limit == 0) {
    return fail(Errc::INVALID_ARGUMENT, "listing workflows: limit is 0; ask for at least 1 entry");
  }
  if (scan_budget == 0) {
    return fail(Errc::INVALID_ARGUMENT,
                "listing workflows: scan_budget is 0, so no call would make progress; allow at "
                "least 1 record");
  }
  if (created_from_us != 0 && created_to_us != 0 && created_to_us <= created_from_us) {
    return fail(Errc::INVALID_ARGUMENT,
                "listing workflows: created_to_us " + std::to_string(created_to_us) +
                    " is not after created_from_us " + std::to_string(created_from_us) +
                    ", so no workflow can match; swap or widen the bounds");
  }
  // Caught here rather than answered with an empty list after scanning the whole index.
  if (status == WorkflowStatus::OPEN && !final_state.empty()) {
    return fail(Errc::INVALID_ARGUMENT, "listing workflows: final_state '" + final_state +
                                            "' only matches closed workflows, but status asks "
                                            "for open ones; drop one of the two");
  }
  if (!live_state.empty() && (status == WorkflowStatus::CLOSED || !final_state.empty())) {
    return fail(Errc::INVALID_ARGUMENT, "listing workflows: live_state '" + live_state +
                                            "' only matches open workflows, but the query asks "
                                            "for closed ones; drop one of the two");
  }
  if (order == ListOrder::NEWEST_FIRST && !after.empty() && !parse_newest_first_cursor(after)) {
    return fail(Errc::INVALID_ARGUMENT, "listing workflows newest first: '" + after +
                                            "' is not a cursor of such a listing; pass the "
                                            "next_cursor of its previous page");
  }
  return ok();
}

bool ListQuery::matches(const WorkflowRecord& record) const {
  if (status && record.status != *status) return false;
  if (!final_state.empty() &&
      (record.status != WorkflowStatus::CLOSED || record.final_state != final_state)) {
    return false;
  }
  if (!live_state.empty() &&
      (record.status != WorkflowStatus::OPEN || (!record.live_state.empty() && record.live_state != live_state))) {
    return false;
  }
  if (!definition_name.empty() && record.definition_name != definition_name) return false;
  if (created_from_us != 0 && record.created_us < created_from_us) return false;
  if (created_to_us != 0 && record.created_us >= created_to_us) return false;
  return true;
}

Result<AppendReceipt> HistoryStore::append_wait(std::string workflow_id,
                                                std::vector<NewEvent> events,
                                                std::optional<WorkflowRecord> record) {
  return wait_for<AppendReceipt>([&](AppendCallback done) {
    append(std::move(workflow_id), std::move(events), std::move(record), std::move(done));
  });
}

Result<void> HistoryStore::close_wait(std::string workflow_id, int64_t closed_us) {
  return wait_for<void>(
      [&](DoneCallback done) { close(std::move(workflow_id), closed_us, std::move(done)); });
}

Result<void> HistoryStore::put_worker_wait(std::string shard_id, WorkerRecord record) {
  return wait_for<void>([&](DoneCallback done) {
    put_worker(std::move(shard_id), std::move(record), std::move(done));
  });
}

Result<AppendReceipt> HistoryStore::append_worker_journal_wait(std::string shard_id, NewEvent event) {
  return wait_for<AppendReceipt>([&](AppendCallback done) {
    append_worker_journal(std::move(shard_id), std::move(event), std::move(done));
  });
}

}  // namespace troupe::storage
