// The retention thread: scheduled purges and operators' requests, one at a time.
#include "runtime/retention.hpp"

#include <algorithm>

#include "storage/history_store.hpp"

namespace troupe::runtime {

Retention::Retention(std::shared_ptr<storage::HistoryStore> store, RetentionOptions options)
    : store_(std::move(store)), options_(std::move(options)) {
  thread_ = std::thread([this] { run(); });
}

Retention::~Retention() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Retention::purge(int64_t closed_before_us, Done done) {
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(Request{closed_before_us, std::move(done)});
  }
  wake_.notify_all();
}

Duration Retention::check_interval(Duration retention) {
  return std::clamp<Duration>(retention / 10, std::chrono::seconds(1), std::chrono::hours(1));
}

void Retention::run() {
  using Clock = std::chrono::steady_clock;
  auto next_scheduled = Clock::now();  // the first scheduled purge runs at start
  std::unique_lock lock(mutex_);
  for (;;) {
    const bool scheduled = options_.retention.has_value();
    auto due = [&] { return stopping_ || !requests_.empty() || (scheduled && Clock::now() >= next_scheduled); };
    if (scheduled) {
      wake_.wait_until(lock, next_scheduled, due);
    } else {
      wake_.wait(lock, due);
    }
    if (stopping_) {
      // Answer what is still queued, so no caller waits on a scheduler that is going away.
      for (auto& request : requests_) request.done(fail(Errc::UNAVAILABLE, "the scheduler is stopping"));
      return;
    }
    if (!requests_.empty()) {
      Request request = std::move(requests_.front());
      requests_.pop_front();
      lock.unlock();
      request.done(store_->purge_closed(request.closed_before_us));
      lock.lock();
      continue;
    }
    if (scheduled && Clock::now() >= next_scheduled) {
      next_scheduled = Clock::now() + check_interval(*options_.retention);
      const int64_t before = options_.now_us() - options_.retention->count();
      lock.unlock();
      auto purged = store_->purge_closed(before);
      // A failed purge is retried at the next interval; a failed store fail-stops the node anyway.
      if (purged && *purged > 0 && options_.on_purged) options_.on_purged(*purged, before);
      lock.lock();
    }
  }
}

}  // namespace troupe::runtime
