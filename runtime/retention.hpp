// Retention: closed workflows older than the cluster's `retention` are purged from the history
// store (history, index record and all), on a schedule and when an operator asks. Purging reads
// and deletes pages of the index, which can take long on a big store, so it runs on a thread of
// its own, never on an actor or the RPC thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "schema/duration.hpp"
#include "schema/result.hpp"

namespace troupe::storage {
class HistoryStore;
}

namespace troupe::runtime {

struct RetentionOptions {
  /// Closed workflows are purged this long after they closed; nullopt keeps them forever.
  std::optional<Duration> retention;
  /// The wall clock, in µs since the epoch (a test passes its own).
  std::function<int64_t()> now_us;
  /// Told how many workflows each scheduled purge removed, when it removed any.
  std::function<void(uint64_t purged, int64_t closed_before_us)> on_purged;
};

class Retention {
 public:
  using Done = std::function<void(Result<uint64_t>)>;

  Retention(std::shared_ptr<storage::HistoryStore> store, RetentionOptions options);
  ~Retention();
  Retention(const Retention&) = delete;
  Retention& operator=(const Retention&) = delete;

  /// Purges every workflow closed before `closed_before_us`; `done` gets how many, on the
  /// retention thread. Requests run one at a time, in order.
  void purge(int64_t closed_before_us, Done done);

  /// How often a scheduled purge runs for a retention: a tenth of it, between 1 s and 1 h, so
  /// a workflow outlives its retention by at most that.
  static Duration check_interval(Duration retention);

 private:
  void run();

  struct Request {
    int64_t closed_before_us;
    Done done;
  };

  std::shared_ptr<storage::HistoryStore> store_;
  RetentionOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Request> requests_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace troupe::runtime
