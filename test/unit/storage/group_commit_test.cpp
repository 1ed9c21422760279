#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "storage/group_commit.hpp"

using namespace troupe::storage;

namespace {

struct Op {
  int thread = 0;
  int counter = 0;
  size_t size_bytes() const { return 10; }
};

}  // namespace

TEST_SUITE("storage.group_commit") {
  TEST_CASE("operations queued during a commit are committed together, in submission order") {
    std::mutex mutex;
    std::condition_variable cv;
    bool release_first = false;
    std::vector<std::vector<Op>> batches;
    GroupCommitter<Op> committer({100, 1 << 20}, [&](std::vector<Op>& batch) {
      std::unique_lock lock(mutex);
      batches.push_back(batch);
      cv.notify_all();
      // Hold the first commit until the rest are queued, as a slow sync would.
      cv.wait(lock, [&] { return release_first; });
    });

    REQUIRE(committer.submit(Op{0, 0}));
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return batches.size() == 1; });
    }
    for (int i = 1; i <= 5; ++i) REQUIRE(committer.submit(Op{0, i}));
    {
      std::lock_guard lock(mutex);
      release_first = true;
    }
    cv.notify_all();
    committer.stop();

    REQUIRE(batches.size() == 2);
    CHECK(batches[0].size() == 1);
    REQUIRE(batches[1].size() == 5);
    for (int i = 0; i < 5; ++i) CHECK(batches[1][i].counter == i + 1);
    auto stats = committer.stats();
    CHECK(stats.batches == 2);
    CHECK(stats.operations == 6);
    CHECK(stats.largest_batch == 5);
  }

  TEST_CASE("a batch never exceeds its operation limit") {
    std::atomic<size_t> largest{0};
    std::atomic<int> committed{0};
    {
      GroupCommitter<Op> committer({3, 1 << 20}, [&](std::vector<Op>& batch) {
        largest = std::max(largest.load(), batch.size());
        committed += static_cast<int>(batch.size());
      });
      for (int i = 0; i < 50; ++i) REQUIRE(committer.submit(Op{0, i}));
    }
    CHECK(committed == 50);
    CHECK(largest <= 3);
  }

  TEST_CASE("each thread's operations are committed in the order it submitted them") {
    std::map<int, int> last_seen;
    bool in_order = true;
    int total = 0;
    {
      GroupCommitter<Op> committer({64, 1 << 20}, [&](std::vector<Op>& batch) {
        for (const auto& op : batch) {
          auto [it, inserted] = last_seen.emplace(op.thread, op.counter);
          if (!inserted) {
            in_order = in_order && op.counter == it->second + 1;
            it->second = op.counter;
          }
          ++total;
        }
      });
      std::vector<std::thread> threads;
      for (int t = 0; t < 16; ++t) {
        threads.emplace_back([&, t] {
          for (int i = 0; i < 200; ++i) REQUIRE(committer.submit(Op{t, i}));
        });
      }
      for (auto& thread : threads) thread.join();
    }
    CHECK(in_order);
    CHECK(total == 16 * 200);
  }

  TEST_CASE("after stop, submit refuses and leaves the operation untouched") {
    GroupCommitter<Op> committer({8, 1 << 20}, [](std::vector<Op>&) {});
    committer.stop();
    Op op{3, 4};
    CHECK_FALSE(committer.submit(std::move(op)));
    CHECK(op.thread == 3);
    CHECK(op.counter == 4);
  }
}
