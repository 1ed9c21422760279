// The store under injected I/O faults: power loss, failing syncs, a full disk.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "storage/codec.hpp"
#include "storage/rocks_history_store.hpp"
#include "test/support/fault_fs.hpp"
#include "test/support/sample_events.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::storage;

namespace {

WorkflowRecord open_record() { return WorkflowRecord{WorkflowStatus::OPEN, "n", "d", 1, 0, "", ""}; }

struct FaultyStore {
  std::shared_ptr<test::FaultInjectionFs> fs = std::make_shared<test::FaultInjectionFs>();
  std::unique_ptr<RocksHistoryStore> store;

  FaultyStore(const std::string& dir, StoreOptions options = {}) {
    auto opened = RocksHistoryStore::open(dir, options, test::FaultInjectionFs::env_for(fs));
    REQUIRE_MESSAGE(opened, test::why(opened));
    store = std::move(*opened);
  }
};

/// What StoreOptions::on_fail_stop was told, from whichever thread told it.
struct FailStops {
  std::mutex mutex;
  std::vector<Error> seen;

  StoreOptions options(StoreOptions base = {}) {
    base.on_fail_stop = [this](const Error& error) {
      std::lock_guard lock(mutex);
      seen.push_back(error);
    };
    return base;
  }
  size_t count() {
    std::lock_guard lock(mutex);
    return seen.size();
  }
  Error first() {
    std::lock_guard lock(mutex);
    REQUIRE_FALSE(seen.empty());
    return seen.front();
  }
};

/// Polls `condition` every 10 ms for up to 10 s.
template <class F>
bool within_10s(F condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The message of a full disk: the store's directory, the free space left and what to do.
void check_disk_full_message(const std::string& message, const std::string& dir) {
  CAPTURE(message);
  CHECK(has(message, "'" + dir + "'"));
  CHECK(has(message, "the disk is full"));
  CHECK(has(message, " free there"));
  CHECK(has(message, "free space, then restart the node"));
  CHECK(has(message, "nothing it acknowledged is lost"));
}

const rocksdb::IOStatus no_space = rocksdb::IOStatus::NoSpace("No space left on device (injected)");

/// Reopens `dir` without faults and returns each workflow's events, checking that they are
/// gap-free from 1 and intact.
std::map<std::string, size_t> surviving_events(const std::string& dir,
                                               const std::vector<std::string>& workflows) {
  auto store = RocksHistoryStore::open(dir);
  REQUIRE_MESSAGE(store, test::why(store));
  std::map<std::string, size_t> out;
  for (const auto& wf : workflows) {
    auto events = (*store)->read(wf, 1, 1'000'000);
    REQUIRE_MESSAGE(events, test::why(events));
    for (size_t i = 0; i < events->size(); ++i) {
      REQUIRE((*events)[i].sequence == i + 1);
      auto decoded = DecodedEvent::decode((*events)[i].packed);
      REQUIRE(decoded);
      // Every history begins with its submission.
      CHECK((i == 0 ? decoded->get().getBody().isWorkflowSubmitted() : test::is_intact_sample(decoded->get())));
    }
    out[wf] = events->size();
  }
  return out;
}

}  // namespace

TEST_SUITE("storage.faults") {
  TEST_CASE("every append acknowledged with sync on survives a power loss, none torn") {
    StoreOptions options;
    int acks_before_outage = 300;
    SUBCASE("in the first write-ahead log") {}
    SUBCASE("across flushes and recycled write-ahead logs") {
      options.write_buffer_bytes = 64 << 10;  // a memtable flush every ~250 events
      acks_before_outage = 3000;
    }
    test::TempDir dir;
    constexpr int threads = 6;
    std::vector<std::string> workflows;
    for (int t = 0; t < threads; ++t) workflows.push_back("wf-" + std::to_string(t));
    std::mutex mutex;
    std::map<std::string, uint64_t> acked;  // workflow -> last acknowledged sequence
    std::atomic<int> acks{0};
    std::atomic<int> refused{0};
    FaultyStore faulty(dir.path(), options);
    for (const auto& wf : workflows) REQUIRE(faulty.store->append_wait(wf, {test::submitted_event()}, open_record()));
    {
      std::atomic<bool> stop{false};
      std::vector<std::thread> writers;
      for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&, t] {
          for (uint32_t i = 0; !stop; ++i) {
            auto receipt = faulty.store->append_wait(
                workflows[t], {test::sample_event(t, i, 0), test::sample_event(t, i, 1)},
                open_record());
            if (!receipt) {
              ++refused;
              continue;
            }
            std::lock_guard lock(mutex);
            acked[workflows[t]] = receipt->first_sequence + receipt->count - 1;
            ++acks;
          }
        });
      }
      while (acks < acks_before_outage) std::this_thread::yield();
      faulty.fs->pull_plug();
      while (refused < threads) std::this_thread::yield();  // every writer saw the outage
      stop = true;
      for (auto& w : writers) w.join();
    }
    faulty.store.reset();  // closes with the power still off: nothing more reaches the disk
    faulty.fs->drop_unsynced_data();
    auto survivors = surviving_events(dir.path(), workflows);
    for (const auto& wf : workflows) {
      CAPTURE(wf);
      CHECK(survivors[wf] >= acked[wf]);
    }
  }

  TEST_CASE("without sync, acknowledged appends are lost on power loss (the simulation bites)") {
    test::TempDir dir;
    size_t acked = 0;
    {
      StoreOptions options;
      options.sync = false;
      FaultyStore faulty(dir.path(), options);
      for (uint32_t i = 0; i < 50; ++i) {
        REQUIRE(faulty.store->append_wait("wf", {i == 0 ? test::submitted_event() : test::sample_event(0, i, 0)},
                                          open_record()));
        ++acked;
      }
      faulty.fs->pull_plug();
      auto dropped = faulty.fs->drop_unsynced_data();
      CHECK(dropped > 0);
      faulty.fs->pull_plug();  // keep the disk as it is while the store closes
    }
    auto survivors = surviving_events(dir.path(), {"wf"});
    CHECK(survivors["wf"] < acked);
  }

  TEST_CASE("a failed sync fails every waiting append and stops the store until reopened") {
    test::TempDir dir;
    {
      FaultyStore faulty(dir.path());
      REQUIRE(faulty.store->append_wait("wf", {test::submitted_event()}, open_record()));
      faulty.fs->fail_syncs(rocksdb::IOStatus::IOError("injected fsync failure"));

      constexpr int threads = 8;
      std::vector<Result<AppendReceipt>> outcomes(threads, fail(Errc::INTERNAL, "not run"));
      std::vector<std::thread> writers;
      for (int t = 0; t < threads; ++t) {
        writers.emplace_back([&, t] {
          outcomes[t] = faulty.store->append_wait("wf", {test::sample_event(0, 1, t)});
        });
      }
      for (auto& w : writers) w.join();
      for (auto& outcome : outcomes) {
        REQUIRE_FALSE(outcome);
        const auto& message = outcome.error().message;
        CAPTURE(message);
        // The first batch carries the sync's own error; later ones the fail-stop.
        CHECK((message.find("injected fsync failure") != std::string::npos));
      }

      // The disk recovers, but the store does not pretend it did: no retried sync.
      faulty.fs->fail_syncs(std::nullopt);
      auto after = faulty.store->append_wait("wf", {test::sample_event(0, 2, 0)});
      REQUIRE_FALSE(after);
      CHECK(after.error().code == Errc::UNAVAILABLE);
      CHECK(after.error().message.find("stopped accepting writes after a failed write") !=
            std::string::npos);
      CHECK(after.error().message.find("restart the node to reopen it") != std::string::npos);
      auto closing = faulty.store->close_wait("wf", 5);
      CHECK_FALSE(closing);
    }
    // Reopened, it is consistent and writable again.
    auto store = RocksHistoryStore::open(dir.path());
    REQUIRE(store);
    auto last = (*store)->last_sequence("wf");
    REQUIRE(last);
    CHECK(*last >= 1);
    auto next = (*store)->append_wait("wf", {test::sample_event(0, 3, 0)});
    REQUIRE(next);
    CHECK(next->first_sequence == *last + 1);
  }

  TEST_CASE("a full disk is reported as such") {
    test::TempDir dir;
    FaultyStore faulty(dir.path());
    faulty.fs->fail_appends(rocksdb::IOStatus::NoSpace("No space left on device (injected)"));
    auto outcome = faulty.store->append_wait("wf", {test::submitted_event()}, open_record());
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().code == Errc::UNAVAILABLE);
    CHECK(outcome.error().message.find("the disk is full") != std::string::npos);
    CHECK(outcome.error().message.find("free space, then restart") != std::string::npos);
    faulty.fs->fail_appends(std::nullopt);
  }
}

TEST_SUITE("storage.faults") {
  TEST_CASE("a full disk fail-stops the store once, with a message, and nothing in RocksDB asserts") {
    // The whole disk fails, its LOG file included: RocksDB's own info log asserted (aborting
    // the process) on the first line it logged after one of its writes had failed.
    test::TempDir dir;
    FailStops stops;
    std::vector<uint64_t> acked;
    {
      FaultyStore faulty(dir.path(), stops.options());
      for (uint32_t i = 0; i < 20; ++i) {
        auto receipt = faulty.store->append_wait(
            "wf", {i == 0 ? test::submitted_event() : test::sample_event(0, i, 0)}, open_record());
        REQUIRE_MESSAGE(receipt, test::why(receipt));
        acked.push_back(receipt->first_sequence);
      }
      faulty.fs->fail_appends(no_space);
      faulty.fs->fail_syncs(no_space);
      auto outcome = faulty.store->append_wait("wf", {test::sample_event(0, 99, 0)});
      REQUIRE_FALSE(outcome);
      CHECK(outcome.error().code == Errc::UNAVAILABLE);
      check_disk_full_message(outcome.error().message, dir.path());
      REQUIRE(stops.count() == 1);
      check_disk_full_message(stops.first().message, dir.path());

      // RocksDB has logged since, and been refused: the state in which its next line aborted.
      CHECK(within_10s([&] { return faulty.fs->refused_writes(dir.path() + "/LOG") > 0; }));
      auto later = faulty.store->close_wait("wf", 5);
      REQUIRE_FALSE(later);
      CHECK(has(later.error().message, "stopped accepting writes after a failed write"));
      CHECK(stops.count() == 1);  // told once
    }  // closes on the full disk, logging as it goes
    CHECK(stops.count() == 1);

    // Space is back: everything acknowledged is there, and the store writes again.
    auto store = RocksHistoryStore::open(dir.path());
    REQUIRE_MESSAGE(store, test::why(store));
    auto events = (*store)->read("wf", 1, 1000);
    REQUIRE(events);
    CHECK(events->size() >= acked.size());
    auto next = (*store)->append_wait("wf", {test::sample_event(0, 100, 0)});
    REQUIRE_MESSAGE(next, test::why(next));
    CHECK(next->first_sequence == events->size() + 1);
  }

  TEST_CASE("a failed flush fail-stops the store before any write of its own fails") {
    test::TempDir dir;
    FailStops stops;
    StoreOptions small;
    small.write_buffer_bytes = 64 << 10;  // a memtable flush every ~250 events
    size_t acked = 0;
    {
      FaultyStore faulty(dir.path(), stops.options(small));
      faulty.fs->fail_appends(no_space, ".sst");  // the write-ahead log still works
      for (uint32_t i = 0; i < 5000 && stops.count() == 0; ++i) {
        auto receipt = faulty.store->append_wait("wf", {i == 0 ? test::submitted_event() : test::sample_event(0, i, 0), test::sample_event(0, i, 1)},
                                                 open_record());
        if (receipt) acked = receipt->first_sequence + receipt->count - 1;
      }
      REQUIRE(within_10s([&] { return stops.count() == 1; }));
      const auto error = stops.first();
      check_disk_full_message(error.message, dir.path());
      CHECK(has(error.message, "flushing a memtable of history store"));
      auto after = faulty.store->append_wait("wf", {test::sample_event(1, 0, 0)});
      REQUIRE_FALSE(after);
      CHECK(after.error().code == Errc::UNAVAILABLE);
      CHECK(has(after.error().message, "the disk is full"));
    }
    CHECK(acked > 0);
    auto survivors = surviving_events(dir.path(), {"wf"});
    CHECK(survivors["wf"] >= acked);
  }

  TEST_CASE("opening on a full disk is refused with the same message; once space is freed it opens") {
    test::TempDir dir;
    {
      auto store = RocksHistoryStore::open(dir.path());
      REQUIRE(store);
      REQUIRE((*store)->append_wait("wf", {test::submitted_event()}, open_record()));
    }
    FailStops stops;
    auto fs = std::make_shared<test::FaultInjectionFs>();
    fs->fail_appends(no_space);
    auto refused = RocksHistoryStore::open(dir.path(), stops.options(), test::FaultInjectionFs::env_for(fs));
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Errc::UNAVAILABLE);
    check_disk_full_message(refused.error().message, dir.path());
    CHECK(stops.count() == 0);  // an open's failure is its error, not a stop

    // So is an open with less room than the store needs to start (RocksDB alone may still open
    // in a little room, only to fail at the first writes).
    StoreOptions greedy = stops.options();
    greedy.min_free_bytes = size_t{1} << 60;
    auto too_little = RocksHistoryStore::open(dir.path(), greedy);
    REQUIRE_FALSE(too_little);
    CHECK(too_little.error().code == Errc::UNAVAILABLE);
    check_disk_full_message(too_little.error().message, dir.path());
    CHECK(has(too_little.error().message, "it needs to start"));

    fs->fail_appends(std::nullopt);
    auto opened = RocksHistoryStore::open(dir.path(), stops.options(), test::FaultInjectionFs::env_for(fs));
    REQUIRE_MESSAGE(opened, test::why(opened));
    auto last = (*opened)->last_sequence("wf");
    REQUIRE(last);
    CHECK(*last == 1);
    CHECK((*opened)->append_wait("wf", {test::sample_event(0, 1, 0)}));
  }
}
