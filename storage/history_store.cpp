// The blocking conveniences of HistoryStore, built on its callback interface.
#include "storage/history_store.hpp"

#include <future>

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

}  // namespace troupe::storage
