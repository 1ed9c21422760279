#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <rocksdb/db.h>

#include "storage/codec.hpp"
#include "storage/keys.hpp"
#include "storage/rocks_history_store.hpp"
#include "test/support/sample_events.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::storage;

namespace {

std::unique_ptr<RocksHistoryStore> open_store(const std::string& dir, StoreOptions options = {}) {
  auto store = RocksHistoryStore::open(dir, options);
  if (!store) FAIL("open failed: " << store.error().to_string());
  return std::move(*store);
}

WorkflowRecord open_record(std::string name, int64_t created_us = 1) {
  return WorkflowRecord{WorkflowStatus::OPEN, std::move(name), "digest", created_us, 0, "", ""};
}

/// Decodes every event of `workflow` and checks sequences are 1..n with no gap.
std::vector<DecodedEvent> read_all(HistoryStore& store, const std::string& workflow) {
  auto events = store.read(workflow, 1, 1'000'000);
  REQUIRE_MESSAGE(events, test::why(events));
  std::vector<DecodedEvent> out;
  for (size_t i = 0; i < events->size(); ++i) {
    REQUIRE((*events)[i].sequence == i + 1);
    auto decoded = DecodedEvent::decode((*events)[i].packed);
    REQUIRE(decoded);
    REQUIRE(decoded->get().getSequence() == i + 1);
    out.push_back(std::move(*decoded));
  }
  return out;
}

/// Opens the store's RocksDB directly, with every column family, to damage it on purpose.
struct RawDb {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::map<std::string, rocksdb::ColumnFamilyHandle*> by_name;

  explicit RawDb(const std::string& dir) {
    std::vector<std::string> names;
    REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
    for (const auto& name : names) descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), dir, descriptors, &handles, &raw).ok());
    db.reset(raw);
    for (size_t i = 0; i < names.size(); ++i) by_name[names[i]] = handles[i];
  }
  ~RawDb() {
    for (auto* handle : handles) CHECK(db->DestroyColumnFamilyHandle(handle).ok());
  }
  void put(const std::string& cf, const std::string& key, const std::string& value) {
    REQUIRE(db->Put(rocksdb::WriteOptions(), by_name.at(cf), key, value).ok());
  }
};

}  // namespace

TEST_SUITE("storage.history_store") {
  TEST_CASE("appends get consecutive sequences per workflow and read back in order") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    auto first = store->append_wait("wf-a", {test::submitted_event(), test::sample_event(0, 1, 1)},
                                    open_record("a"));
    REQUIRE(first);
    CHECK(first->first_sequence == 1);
    CHECK(first->count == 2);
    auto other = store->append_wait("wf-b", {test::submitted_event()}, open_record("b"));
    REQUIRE(other);
    CHECK(other->first_sequence == 1);
    auto second = store->append_wait("wf-a", {test::sample_event(0, 2, 0)});
    REQUIRE(second);
    CHECK(second->first_sequence == 3);

    auto events = read_all(*store, "wf-a");
    REQUIRE(events.size() == 3);
    for (size_t i = 1; i < events.size(); ++i) CHECK(test::is_intact_sample(events[i].get()));
    CHECK(store->last_sequence("wf-a").value() == 3);
    CHECK(store->last_sequence("wf-none").value() == 0);

    auto page = store->read("wf-a", 2, 1);
    REQUIRE(page);
    REQUIRE(page->size() == 1);
    CHECK((*page)[0].sequence == 2);
  }

  TEST_CASE("sequences continue after the store is reopened") {
    test::TempDir dir;
    {
      auto store = open_store(dir.path());
      REQUIRE(store->append_wait("wf", {test::submitted_event(), test::sample_event(0, 1, 1)},
                                 open_record("x")));
    }
    auto store = open_store(dir.path());
    auto next = store->append_wait("wf", {test::sample_event(0, 2, 0)});
    REQUIRE(next);
    CHECK(next->first_sequence == 3);
    CHECK(read_all(*store, "wf").size() == 3);
  }

  TEST_CASE("appends from 16 threads are atomic, ordered and gap-free") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    constexpr int threads = 16;
    constexpr int appends_per_thread = 40;
    struct Acked {
      uint64_t first;
      uint32_t count;
      uint32_t counter;
    };
    std::mutex mutex;
    std::map<int, std::vector<Acked>> acked;  // thread -> its appends to the shared workflow

    REQUIRE(store->append_wait("shared", {test::submitted_event()}, open_record("shared")));
    for (int t = 0; t < threads; ++t) {
      REQUIRE(store->append_wait("own-" + std::to_string(t), {test::submitted_event()}, open_record("own")));
    }
    const uint64_t submissions = threads + 1;

    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (uint32_t i = 0; i < appends_per_thread; ++i) {
          // 1..3 events per append, so atomicity shows as contiguous runs.
          std::vector<NewEvent> events;
          for (uint32_t e = 0; e <= i % 3; ++e) events.push_back(test::sample_event(t, i, e));
          auto shared = store->append_wait("shared", events, open_record("shared"));
          auto own = store->append_wait("own-" + std::to_string(t), events, open_record("own"));
          std::lock_guard lock(mutex);
          REQUIRE_MESSAGE(shared, test::why(shared));
          REQUIRE(own);
          acked[t].push_back(Acked{shared->first_sequence, shared->count, i});
        }
      });
    }
    for (auto& w : workers) w.join();

    auto shared = read_all(*store, "shared");
    size_t expected_events = 0;
    for (uint32_t i = 0; i < appends_per_thread; ++i) expected_events += i % 3 + 1;
    CHECK(shared.size() == expected_events * threads + 1);

    for (const auto& [t, appends] : acked) {
      uint64_t previous_first = 0;
      for (const auto& a : appends) {
        // A thread's appends land in the order it made them...
        CHECK(a.first > previous_first);
        previous_first = a.first;
        // ...and each append's events are contiguous and its own.
        CHECK(a.count == a.counter % 3 + 1);
        for (uint32_t e = 0; e < a.count; ++e) {
          auto event = shared[a.first - 1 + e].get();
          CHECK(test::is_intact_sample(event));
          CHECK(std::string(event.getActorId().cStr()) ==
                "writer-" + std::to_string(t) + "/" + std::to_string(e));
          CHECK(event.getAttempt() == a.counter);
        }
      }
      CHECK(read_all(*store, "own-" + std::to_string(t)).size() == expected_events + 1);
    }
    // Group commit: threads waiting on one sync share it.
    auto stats = store->stats();
    CHECK(stats.operations == threads * appends_per_thread * 2 + submissions);
    CHECK(stats.batches < stats.operations);
    CHECK(stats.events == expected_events * threads * 2 + submissions);
  }

  TEST_CASE("the open index lists open workflows a page at a time and forgets closed ones") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    for (int i = 0; i < 25; ++i) {
      char id[16];
      std::snprintf(id, sizeof id, "wf-%02d", i);
      REQUIRE(store->append_wait(id, {test::submitted_event()}, open_record("n", i)));
    }
    REQUIRE(store->close_wait("wf-03", 500));
    // Closing through an append's record update works the same way.
    REQUIRE(store->append_wait(
        "wf-07", {}, WorkflowRecord{WorkflowStatus::CLOSED, "n", "digest", 7, 600, "SUCCESS", ""}));

    std::vector<std::string> seen;
    std::string after;
    for (;;) {
      auto page = store->scan_open(after, 10);
      REQUIRE(page);
      CHECK(page->size() <= 10);
      if (page->empty()) break;
      for (auto& entry : *page) {
        CHECK(entry.record.status == WorkflowStatus::OPEN);
        seen.push_back(entry.id);
      }
      after = page->back().id;
    }
    CHECK(seen.size() == 23);
    CHECK(std::is_sorted(seen.begin(), seen.end()));
    CHECK(std::find(seen.begin(), seen.end(), "wf-03") == seen.end());
    CHECK(std::find(seen.begin(), seen.end(), "wf-07") == seen.end());

    auto closed = store->find_workflow("wf-03");
    REQUIRE(closed);
    REQUIRE(*closed);
    CHECK((*closed)->status == WorkflowStatus::CLOSED);
    CHECK((*closed)->closed_us == 500);
    CHECK((*closed)->created_us == 3);
    CHECK_FALSE(store->find_workflow("wf-99").value());
  }

  TEST_CASE("closing a workflow without a record is NOT_FOUND") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    auto closed = store->close_wait("ghost", 1);
    REQUIRE_FALSE(closed);
    CHECK(closed.error().code == Errc::NOT_FOUND);
    CHECK(closed.error().message.find("ghost") != std::string::npos);
  }

  TEST_CASE("purge deletes closed workflows older than the cut-off, history and all") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    for (int i = 0; i < 30; ++i) {
      std::string id = "wf-" + std::to_string(i);
      REQUIRE(store->append_wait(id, {test::submitted_event(), test::sample_event(0, 2, 0)},
                                 open_record("n")));
      if (i < 20) REQUIRE(store->close_wait(id, i < 10 ? 100 : 900));
    }
    auto purged = store->purge_closed(500);
    REQUIRE(purged);
    CHECK(*purged == 10);
    CHECK_FALSE(store->find_workflow("wf-5").value());
    CHECK(store->read("wf-5", 1, 100)->empty());
    CHECK(store->find_workflow("wf-15").value());
    CHECK(read_all(*store, "wf-15").size() == 2);
    CHECK(read_all(*store, "wf-25").size() == 2);
    // A purged id starts a new history from 1.
    auto again = store->append_wait("wf-5", {test::submitted_event()}, open_record("n"));
    REQUIRE(again);
    CHECK(again->first_sequence == 1);
  }

  TEST_CASE("workflows purged and started again keep their histories apart, in one memtable") {
    // The memtable keeps an insert hint per workflow; a purge's range deletion must not use
    // it (ids of every length, as the hint is cut from the key's end).
    test::TempDir dir;
    auto store = open_store(dir.path());
    std::vector<std::string> ids;
    for (int i = 0; i < 12; ++i) ids.push_back(std::string(size_t(1 + i * 3), 'w') + "-" + std::to_string(i));
    for (int round = 0; round < 3; ++round) {
      for (const auto& id : ids) {
        for (uint64_t seq = 1; seq <= 3; ++seq) {
          REQUIRE(store->append_wait(id, {seq == 1 ? test::submitted_event() : test::sample_event(0, seq, 0)}, open_record("n")));
        }
        REQUIRE(store->close_wait(id, 100));
      }
      auto purged = store->purge_closed(500);
      REQUIRE(purged);
      CHECK(*purged == ids.size());
      for (const auto& id : ids) CHECK(store->read(id, 1, 100)->empty());
    }
    for (const auto& id : ids) {
      auto again = store->append_wait(id, {test::submitted_event(), test::sample_event(0, 2, 0)}, open_record("n"));
      REQUIRE(again);
      CHECK(again->first_sequence == 1);
      CHECK(read_all(*store, id).size() == 2);
    }
  }

  TEST_CASE("worker records are kept by shard id") {
    test::TempDir dir;
    {
      auto store = open_store(dir.path());
      auto record = [](std::string id, std::string resource, int64_t first, int64_t last) {
        WorkerRecord r;
        r.worker_id = std::move(id);
        r.hostname = "host";
        r.resource_id = std::move(resource);
        r.first_registered_us = first;
        r.last_registered_us = last;
        return r;
      };
      REQUIRE(store->put_worker_wait("gpu-1", record("id-1", "gpu0", 1, 2)));
      REQUIRE(store->put_worker_wait("cpu-1", record("id-2", "", 3, 4)));
      REQUIRE(store->put_worker_wait("gpu-1", record("id-1", "gpu0", 1, 9)));
    }
    auto store = open_store(dir.path());
    auto gpu = store->find_worker("gpu-1");
    REQUIRE(gpu);
    REQUIRE(*gpu);
    CHECK((*gpu)->last_registered_us == 9);
    auto all = store->list_workers();
    REQUIRE(all);
    REQUIRE(all->size() == 2);
    CHECK((*all)[0].shard_id == "cpu-1");
    CHECK_FALSE(store->find_worker("nobody").value());
  }

  TEST_CASE("a malformed event fails its own append and leaves no trace") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    auto bad_event = test::sample_event(0, 1, 0);
    bad_event.body = std::string(24, 'x');
    auto bad = store->append_wait("wf", {test::submitted_event(), bad_event}, open_record("x"));
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == Errc::INVALID_ARGUMENT);
    CHECK(bad.error().message.find("event 1 appended to workflow 'wf'") != std::string::npos);
    CHECK(store->read("wf", 1, 10)->empty());
    CHECK_FALSE(store->find_workflow("wf").value());
    auto good = store->append_wait("wf", {test::submitted_event()}, open_record("x"));
    REQUIRE(good);
    CHECK(good->first_sequence == 1);
  }

  TEST_CASE("bad ids are refused with the reason") {
    test::TempDir dir;
    auto store = open_store(dir.path());
    auto empty = store->append_wait("", {test::sample_event(0, 1, 0)});
    REQUIRE_FALSE(empty);
    CHECK(empty.error().to_string() == "invalid_argument: workflow id is empty");
    auto nul = store->read(std::string("a\0b", 3), 1, 1);
    REQUIRE_FALSE(nul);
    CHECK(nul.error().message == "workflow id contains a NUL byte");
  }
}

TEST_SUITE("storage.history_store.errors") {
  TEST_CASE("a directory that cannot be created is named with the reason") {
    test::TempDir dir;
    std::ofstream(dir / "a-file") << "x";
    auto store = RocksHistoryStore::open(dir / "a-file/store");
    REQUIRE_FALSE(store);
    CHECK(store.error().code == Errc::UNAVAILABLE);
    CHECK(store.error().message.find("cannot create history store directory '" + (dir / "a-file/store") +
                                     "'") == 0);
    CHECK(store.error().message.find("Not a directory") != std::string::npos);
  }

  TEST_CASE("a store already open is refused as in use") {
    test::TempDir dir;
    auto first = open_store(dir.path());
    auto second = RocksHistoryStore::open(dir.path());
    REQUIRE_FALSE(second);
    CHECK(second.error().code == Errc::UNAVAILABLE);
    CHECK(second.error().message.find("is in use by another process") != std::string::npos);
  }

  TEST_CASE("a store written in a newer format is refused") {
    test::TempDir dir;
    { open_store(dir.path()); }
    {
      RawDb raw(dir.path());
      raw.put("meta", "format_version", "7");
      CHECK(raw.db
                ->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "from_the_future",
                                     &raw.handles.emplace_back())
                .ok());
    }
    auto store = RocksHistoryStore::open(dir.path());
    REQUIRE_FALSE(store);
    CHECK(store.error().code == Errc::UNIMPLEMENTED);
    CHECK(store.error().message ==
          "history store at '" + dir.path() +
              "' has format version 7, but this troupe reads format 2 at most; run the newer "
              "troupe that wrote it");
  }

  TEST_CASE("a damaged record is reported with its key") {
    test::TempDir dir;
    {
      auto store = open_store(dir.path());
      REQUIRE(store->append_wait("wf", {test::submitted_event(), test::sample_event(0, 1, 1),
                                        test::sample_event(0, 1, 2)},
                                 open_record("x")));
    }
    { RawDb(dir.path()).put("events", event_key("wf", 2), "garbage that is not a packed event"); }
    auto store = open_store(dir.path());
    auto events = store->read("wf", 1, 10);
    REQUIRE_FALSE(events);
    CHECK(events.error().code == Errc::CORRUPTION);
    CHECK(events.error().message.find("history record at workflow 'wf' sequence 2") == 0);
    // Reading around the damage still works.
    auto before = store->read("wf", 1, 1);
    REQUIRE(before);
    CHECK(before->size() == 1);
  }

  TEST_CASE("a damaged workflow record fails a listing that reaches it, naming the workflow") {
    test::TempDir dir;
    {
      auto store = open_store(dir.path());
      for (const char* id : {"wf-a", "wf-b", "wf-c"}) {
        REQUIRE(store->append_wait(id, {test::submitted_event()}, open_record("x")));
      }
    }
    { RawDb(dir.path()).put("workflows", "wf-b", "garbage that is not a packed record"); }
    auto store = open_store(dir.path());
    auto listed = store->list_workflows({});
    REQUIRE_FALSE(listed);
    CHECK(listed.error().code == Errc::CORRUPTION);
    CHECK(listed.error().message.find("workflow 'wf-b' in history store at '" + dir.path() + "'") ==
          0);
    // A page that ends before the damage still works.
    ListQuery first;
    first.limit = 1;
    auto page = store->list_workflows(first);
    REQUIRE_MESSAGE(page, test::why(page));
    REQUIRE(page->entries.size() == 1);
    CHECK(page->entries[0].id == "wf-a");
    CHECK(page->next_cursor == "wf-a");
  }

  TEST_CASE("a record stored under the wrong key is reported as damaged") {
    test::TempDir dir;
    {
      auto store = open_store(dir.path());
      REQUIRE(store->append_wait("wf", {test::submitted_event()}, open_record("x")));
    }
    auto moved = compose_event(9, test::sample_event(0, 1, 0));
    REQUIRE(moved);
    { RawDb(dir.path()).put("events", event_key("wf", 2), *moved); }
    auto store = open_store(dir.path());
    auto events = store->read("wf", 1, 10);
    REQUIRE_FALSE(events);
    CHECK(events.error().message.find("claims sequence 9") != std::string::npos);
  }
}
