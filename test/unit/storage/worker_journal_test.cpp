// Worker records and worker journals, through both stores: what one keeps the other keeps, a
// journal is trimmed to its newest entries, and the RocksDB store keeps both across a reopen.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/codec.hpp"
#include "storage/memory_history_store.hpp"
#include "storage/rocks_history_store.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::storage;

namespace {

/// A journal entry: a health change of `shard` whose from/to encode `n` (so entries differ).
NewEvent health_entry(const std::string& shard, uint32_t n) {
  NewEvent event;
  event.timestamp_us = 1000 + n;
  event.actor_kind = ActorKind::WORKER;
  event.actor_id = shard;
  event.body = make_body([&](schema::EventBody::Builder b) {
    auto h = b.initWorkerHealthChanged();
    h.setWorkerShard(shard);
    h.setFrom(static_cast<schema::WorkerHealth>(n % 4));
    h.setTo(static_cast<schema::WorkerHealth>((n + 1) % 4));
  });
  return event;
}

WorkerRecord full_record() {
  WorkerRecord r;
  r.worker_id = "wkr-00112233445566ff";
  r.hostname = "host-a";
  r.resource_id = "gpu0";
  r.first_registered_us = 10;
  r.last_registered_us = 20;
  r.pid = 777;
  r.instance_id = "instance-9";
  r.task_lists = {{"default", 4}, {"gpu", 1}};
  r.last_seen_us = 21;
  r.registrations = 2;
  r.status = "STARTED";
  return r;
}

/// The timestamps of every journal entry of `shard`, in order, checking each decodes with the
/// sequence it was stored under.
std::vector<int64_t> journal_times(HistoryStore& store, const std::string& shard, uint64_t from = 1) {
  auto entries = store.read_worker_journal(shard, from, 100000);
  REQUIRE_MESSAGE(entries, test::why(entries));
  std::vector<int64_t> out;
  for (const auto& entry : *entries) {
    auto decoded = DecodedEvent::decode(entry.packed);
    REQUIRE(decoded);
    REQUIRE(decoded->get().getSequence() == entry.sequence);
    REQUIRE(decoded->get().getActorKind() == schema::ActorKind::WORKER);
    out.push_back(decoded->get().getTimestampUs());
  }
  return out;
}

std::unique_ptr<RocksHistoryStore> open_rocks(const std::string& dir, size_t journal_entries) {
  StoreOptions options;
  options.sync = false;  // durability is not what these tests are about; speed is
  options.worker_journal_entries = journal_entries;
  auto store = RocksHistoryStore::open(dir, options);
  if (!store) FAIL("open failed: " << store.error().to_string());
  return std::move(*store);
}

/// Runs `check` on a memory store and on a RocksDB store that keep `journal_entries` entries.
template <class Check>
void on_both_stores(size_t journal_entries, Check check) {
  SUBCASE("memory") {
    MemoryHistoryStore store(journal_entries);
    check(store);
  }
  SUBCASE("rocksdb") {
    test::TempDir dir;
    auto store = open_rocks(dir.path(), journal_entries);
    check(*store);
  }
}

}  // namespace

TEST_SUITE("storage.worker_journal") {
  TEST_CASE("a worker record keeps every field") {
    on_both_stores(default_worker_journal_entries, [](HistoryStore& store) {
      REQUIRE(store.put_worker_wait("gpu-1", full_record()));
      auto found = store.find_worker("gpu-1");
      REQUIRE_MESSAGE(found, test::why(found));
      REQUIRE(*found);
      CHECK(**found == full_record());
      auto all = store.list_workers();
      REQUIRE(all);
      REQUIRE(all->size() == 1);
      CHECK((*all)[0].record == full_record());
    });
  }

  TEST_CASE("journal entries get consecutive sequences per worker and read back in order") {
    on_both_stores(default_worker_journal_entries, [](HistoryStore& store) {
      for (uint32_t n = 0; n < 3; ++n) {
        auto a = store.append_worker_journal_wait("a", health_entry("a", n));
        REQUIRE_MESSAGE(a, test::why(a));
        CHECK(a->first_sequence == n + 1);
        CHECK(a->count == 1);
      }
      REQUIRE(store.append_worker_journal_wait("b", health_entry("b", 7)));
      CHECK(journal_times(store, "a") == std::vector<int64_t>{1000, 1001, 1002});
      CHECK(journal_times(store, "a", 2) == std::vector<int64_t>{1001, 1002});
      CHECK(journal_times(store, "b") == std::vector<int64_t>{1007});
      CHECK(journal_times(store, "nobody").empty());
      // A journal is no workflow history.
      CHECK(store.read("a", 1, 10)->empty());
    });
  }

  TEST_CASE("a journal keeps only its newest entries, and sequences go on after a trim") {
    on_both_stores(5, [](HistoryStore& store) {
      for (uint32_t n = 0; n < 12; ++n) REQUIRE(store.append_worker_journal_wait("a", health_entry("a", n)));
      REQUIRE(store.append_worker_journal_wait("b", health_entry("b", 0)));
      CHECK(journal_times(store, "a") == std::vector<int64_t>{1007, 1008, 1009, 1010, 1011});
      auto entries = store.read_worker_journal("a", 1, 100);
      REQUIRE(entries);
      REQUIRE(entries->size() == 5);
      CHECK(entries->front().sequence == 8);
      CHECK(entries->back().sequence == 12);
      CHECK(journal_times(store, "b") == std::vector<int64_t>{1000});  // untouched by a's trim
    });
  }

  TEST_CASE("a malformed journal entry fails alone and takes no sequence") {
    on_both_stores(default_worker_journal_entries, [](HistoryStore& store) {
      auto bad = health_entry("a", 0);
      bad.body = std::string(24, 'x');
      auto refused = store.append_worker_journal_wait("a", bad);
      REQUIRE_FALSE(refused);
      CHECK(refused.error().code == Errc::INVALID_ARGUMENT);
      CHECK(refused.error().message.find("journal entry of worker 'a'") != std::string::npos);
      auto next = store.append_worker_journal_wait("a", health_entry("a", 1));
      REQUIRE_MESSAGE(next, test::why(next));
      CHECK(next->first_sequence == 1);
      CHECK_FALSE(store.append_worker_journal_wait("", health_entry("", 1)));
    });
  }

  TEST_CASE("the RocksDB store keeps records and trimmed journals across a reopen") {
    test::TempDir dir;
    {
      auto store = open_rocks(dir.path(), 4);
      REQUIRE(store->put_worker_wait("gpu-1", full_record()));
      for (uint32_t n = 0; n < 6; ++n) REQUIRE(store->append_worker_journal_wait("gpu-1", health_entry("gpu-1", n)));
    }
    // Reopened with a smaller bound: the next entry trims down to it from what is on disk.
    auto store = open_rocks(dir.path(), 2);
    auto found = store->find_worker("gpu-1");
    REQUIRE(found);
    REQUIRE(*found);
    CHECK(**found == full_record());
    CHECK(journal_times(*store, "gpu-1") == std::vector<int64_t>{1002, 1003, 1004, 1005});
    auto next = store->append_worker_journal_wait("gpu-1", health_entry("gpu-1", 6));
    REQUIRE(next);
    CHECK(next->first_sequence == 7);
    CHECK(journal_times(*store, "gpu-1") == std::vector<int64_t>{1005, 1006});
  }
}
