// list_workflows newest first: the creation-ordered index, its cursor and bounds, the open
// workflows' states kept in their records, and a store of the format before that index, which
// gets it when opened. Expected results come from a model of what was written.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <rocksdb/db.h>

#include "storage/codec.hpp"
#include "storage/keys.hpp"
#include "storage/memory_history_store.hpp"
#include "storage/rocks_history_store.hpp"
#include "test/support/sample_events.hpp"
#include "test/support/store_kinds.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::storage;

namespace {

using test::InMemory;
using test::OnDisk;

WorkflowRecord open_record(int64_t created_us, std::string live_state = "RUNNING") {
  return WorkflowRecord{WorkflowStatus::OPEN, "def", "digest", created_us, 0, "", std::move(live_state)};
}

WorkflowRecord closed_record(int64_t created_us, std::string final_state = "SUCCESS") {
  return WorkflowRecord{WorkflowStatus::CLOSED, "def", "digest", created_us, created_us + 5, std::move(final_state),
                        ""};
}

void load(HistoryStore& store, const std::vector<WorkflowEntry>& workflows) {
  std::atomic<size_t> pending{workflows.size()};
  std::atomic<size_t> failures{0};
  std::promise<void> all_done;
  for (const auto& w : workflows) {
    store.append(w.id, {test::submitted_event()}, w.record, [&](Result<AppendReceipt> r) {
      if (!r) ++failures;
      if (--pending == 0) all_done.set_value();
    });
  }
  if (!workflows.empty()) all_done.get_future().wait();
  REQUIRE(failures == 0);
}

/// `model` newest first (ties by id), the order the listing must have.
std::vector<WorkflowEntry> newest_first(std::vector<WorkflowEntry> model) {
  std::sort(model.begin(), model.end(), [](const WorkflowEntry& a, const WorkflowEntry& b) {
    return std::make_tuple(-a.record.created_us, a.id) < std::make_tuple(-b.record.created_us, b.id);
  });
  return model;
}

/// Pages through `query` newest first until the cursor runs out; `calls` counts the pages.
std::vector<WorkflowEntry> list_all(HistoryStore& store, ListQuery query, size_t* calls = nullptr) {
  query.order = ListOrder::NEWEST_FIRST;
  std::vector<WorkflowEntry> out;
  for (size_t n = 1;; ++n) {
    auto page = store.list_workflows(query);
    REQUIRE_MESSAGE(page, test::why(page));
    REQUIRE(page->entries.size() <= query.limit);
    for (auto& entry : page->entries) out.push_back(std::move(entry));
    if (page->next_cursor.empty()) {
      if (calls) *calls = n;
      return out;
    }
    REQUIRE(page->next_cursor != query.after);
    query.after = page->next_cursor;
  }
}

std::vector<std::string> ids(const std::vector<WorkflowEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.id);
  return out;
}

/// 1000 workflows with random creation times (many equal, some before the epoch), ids in an
/// order unrelated to them, a third closed.
std::vector<WorkflowEntry> random_workflows() {
  std::mt19937 random(20240611);
  std::uniform_int_distribution<int64_t> created(-50, 400);
  std::vector<WorkflowEntry> model;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = "wf-" + std::to_string(random() % 100000) + "-" + std::to_string(i);
    const int64_t at = created(random) * 1000;
    model.push_back({id, i % 3 == 0 ? closed_record(at) : open_record(at, i % 3 == 1 ? "RUNNING" : "PAUSED")});
  }
  return model;
}

}  // namespace

TEST_SUITE("storage.list_order") {
  TEST_CASE_TEMPLATE("newest first: every workflow once, by creation time then id, across pages and a restart",
                     Store, OnDisk, InMemory) {
    Store s;
    const auto model = random_workflows();
    load(s.store(), model);
    const auto expected = newest_first(model);
    for (size_t limit : {size_t{1000}, size_t{7}, size_t{1}}) {
      CAPTURE(limit);
      ListQuery query;
      query.limit = limit;
      size_t calls = 0;
      auto listed = list_all(s.store(), query, &calls);
      CHECK(ids(listed) == ids(expected));
      CHECK(calls == (1000 + limit - 1) / limit);
    }
    s.reopen();
    auto listed = list_all(s.store(), ListQuery{});
    REQUIRE(listed.size() == expected.size());
    for (size_t i = 0; i < listed.size(); ++i) {
      REQUIRE(listed[i].id == expected[i].id);
      REQUIRE(listed[i].record == expected[i].record);
    }
  }

  TEST_CASE_TEMPLATE("a record changed after it was listed keeps its place; the listing shows the change", Store,
                     OnDisk, InMemory) {
    Store s;
    load(s.store(), {{"wf-a", open_record(10)}, {"wf-b", open_record(20)}, {"wf-c", open_record(30)}});
    ListQuery query;
    query.order = ListOrder::NEWEST_FIRST;
    query.limit = 1;
    auto first = s.store().list_workflows(query);
    REQUIRE(first);
    REQUIRE(ids(first->entries) == std::vector<std::string>{"wf-c"});
    // The workflows change state (a pause, a close by record, a close by close()).
    REQUIRE(s.store().append_wait("wf-b", {test::sample_event(0, 1, 0)}, open_record(20, "PAUSED")));
    REQUIRE(s.store().append_wait("wf-c", {test::sample_event(0, 1, 0)}, closed_record(30, "FAILED")));
    REQUIRE(s.store().close_wait("wf-a", 99));
    query.after = first->next_cursor;
    query.limit = 10;
    auto rest = s.store().list_workflows(query);
    REQUIRE(rest);
    REQUIRE(ids(rest->entries) == std::vector<std::string>{"wf-b", "wf-a"});
    CHECK(rest->entries[0].record.live_state == "PAUSED");
    CHECK(rest->entries[1].record.status == WorkflowStatus::CLOSED);
    CHECK(rest->entries[1].record.live_state.empty());  // close() clears it
    CHECK(rest->next_cursor.empty());
    auto all = list_all(s.store(), ListQuery{});
    REQUIRE(all.size() == 3);  // each once: no stale copy under an old key
    CHECK(all[0].record == closed_record(30, "FAILED"));
  }

  TEST_CASE_TEMPLATE("creation bounds: the listing starts at created_to and ends at created_from", Store, OnDisk,
                     InMemory) {
    Store s;
    const auto model = random_workflows();
    load(s.store(), model);
    ListQuery query;
    query.created_from_us = 0;  // no bound
    query.created_to_us = 100'000;
    std::vector<WorkflowEntry> want;
    for (const auto& w : newest_first(model)) {
      if (w.record.created_us < 100'000) want.push_back(w);
    }
    CHECK(ids(list_all(s.store(), query)) == ids(want));
    query.created_from_us = -20'000;
    want.clear();
    for (const auto& w : newest_first(model)) {
      if (w.record.created_us < 100'000 && w.record.created_us >= -20'000) want.push_back(w);
    }
    query.limit = 13;
    CHECK(ids(list_all(s.store(), query)) == ids(want));
  }

  TEST_CASE_TEMPLATE("an open workflow's state filters the listing; a record without one is let through", Store,
                     OnDisk, InMemory) {
    Store s;
    load(s.store(), {{"wf-running", open_record(1, "RUNNING")},
                     {"wf-paused", open_record(2, "PAUSED")},
                     {"wf-legacy", open_record(3, "")},
                     {"wf-closed", closed_record(4)}});
    for (auto order : {ListOrder::ID, ListOrder::NEWEST_FIRST}) {
      ListQuery query;
      query.order = order;
      query.live_state = "PAUSED";
      auto page = s.store().list_workflows(query);
      REQUIRE(page);
      auto listed = ids(page->entries);
      std::sort(listed.begin(), listed.end());
      CHECK(listed == std::vector<std::string>{"wf-legacy", "wf-paused"});
    }
  }

  TEST_CASE_TEMPLATE("queries no newest-first page can answer are INVALID_ARGUMENT", Store, OnDisk, InMemory) {
    Store s;
    load(s.store(), {{"wf", open_record(1)}});
    ListQuery query;
    query.order = ListOrder::NEWEST_FIRST;
    query.after = "wf";  // an id: a cursor of the id order
    auto page = s.store().list_workflows(query);
    REQUIRE_FALSE(page);
    CHECK(page.error().code == Errc::INVALID_ARGUMENT);
    CHECK(page.error().message.find("'wf' is not a cursor of such a listing") != std::string::npos);
    query.after.clear();
    query.live_state = "RUNNING";
    query.status = WorkflowStatus::CLOSED;
    page = s.store().list_workflows(query);
    REQUIRE_FALSE(page);
    CHECK(page.error().message.find("live_state 'RUNNING' only matches open workflows") != std::string::npos);
  }

  TEST_CASE("a purged workflow leaves the newest-first listing") {
    OnDisk s;
    load(s.store(), {{"wf-old", closed_record(1)}, {"wf-new", closed_record(100'000'000)}, {"wf-open", open_record(2)}});
    auto purged = s.store().purge_closed(50'000'000);
    REQUIRE(purged);
    CHECK(*purged == 1);
    CHECK(ids(list_all(s.store(), ListQuery{})) == std::vector<std::string>{"wf-new", "wf-open"});
  }

  TEST_CASE("a conversion that was interrupted leaves no ghost: the index is rebuilt from the records") {
    test::TempDir dir;
    {
      // Format 1 with part of a `created` family: a conversion stopped half way, after which an
      // older build purged "ghost" from the records alone.
      rocksdb::DBOptions options;
      options.create_if_missing = true;
      options.create_missing_column_families = true;
      std::vector<rocksdb::ColumnFamilyDescriptor> families;
      for (const char* name : {"default", "events", "workflows", "open", "workers", "meta", "created"}) {
        families.emplace_back(name, rocksdb::ColumnFamilyOptions());
      }
      std::vector<rocksdb::ColumnFamilyHandle*> handles;
      rocksdb::DB* raw = nullptr;
      REQUIRE(rocksdb::DB::Open(options, dir.path(), families, &handles, &raw).ok());
      std::unique_ptr<rocksdb::DB> db(raw);
      REQUIRE(db->Put(rocksdb::WriteOptions(), handles[5], "format_version", "1").ok());
      const WorkflowRecord kept = closed_record(2'000'000);
      auto event = compose_event(1, test::sample_event(0, 1, 0));
      REQUIRE(event);
      REQUIRE(db->Put(rocksdb::WriteOptions(), handles[1], event_key("kept", 1), *event).ok());
      REQUIRE(db->Put(rocksdb::WriteOptions(), handles[2], "kept", encode_workflow_record(kept)).ok());
      REQUIRE(db->Put(rocksdb::WriteOptions(), handles[6], created_key(1'000'000, "ghost"),
                      encode_workflow_record(closed_record(1'000'000)))
                  .ok());
      for (auto* handle : handles) REQUIRE(db->DestroyColumnFamilyHandle(handle).ok());
    }
    auto opened = RocksHistoryStore::open(dir.path());
    REQUIRE_MESSAGE(opened, test::why(opened));
    CHECK(ids(list_all(**opened, ListQuery{})) == std::vector<std::string>{"kept"});
  }

  TEST_CASE("a store of format 1 gets its creation-time index when opened, and lists newest first") {
    test::TempDir dir;
    std::vector<WorkflowEntry> model;
    {
      // What a build of format 1 wrote: no `created` family, records without a live state.
      rocksdb::DBOptions options;
      options.create_if_missing = true;
      options.create_missing_column_families = true;
      std::vector<rocksdb::ColumnFamilyDescriptor> families;
      for (const char* name : {"default", "events", "workflows", "open", "workers", "meta"}) {
        families.emplace_back(name, rocksdb::ColumnFamilyOptions());
      }
      std::vector<rocksdb::ColumnFamilyHandle*> handles;
      rocksdb::DB* raw = nullptr;
      REQUIRE(rocksdb::DB::Open(options, dir.path(), families, &handles, &raw).ok());
      std::unique_ptr<rocksdb::DB> db(raw);
      REQUIRE(db->Put(rocksdb::WriteOptions(), handles[5], "format_version", "1").ok());
      // More than one page of the conversion.
      for (int i = 0; i < 5000; ++i) {
        const std::string id = "old-" + std::to_string(i * 7919 % 5000);
        const int64_t created = 1'000'000 + (i * 31 % 977) * 1000;
        WorkflowRecord record = i % 2 ? open_record(created, "") : closed_record(created);
        model.push_back({id, record});
        auto event = compose_event(1, test::sample_event(0, 1, 0));
        REQUIRE(event);
        REQUIRE(db->Put(rocksdb::WriteOptions(), handles[1], event_key(id, 1), *event).ok());
        REQUIRE(db->Put(rocksdb::WriteOptions(), handles[2], id, encode_workflow_record(record)).ok());
        if (record.status == WorkflowStatus::OPEN) REQUIRE(db->Put(rocksdb::WriteOptions(), handles[3], id, "").ok());
      }
      for (auto* handle : handles) REQUIRE(db->DestroyColumnFamilyHandle(handle).ok());
    }
    auto opened = RocksHistoryStore::open(dir.path());
    REQUIRE_MESSAGE(opened, test::why(opened));
    auto& store = **opened;
    auto listed = list_all(store, ListQuery{});
    REQUIRE(listed.size() == model.size());
    const auto expected = newest_first(model);
    for (size_t i = 0; i < listed.size(); ++i) {
      REQUIRE(listed[i].id == expected[i].id);
      REQUIRE(listed[i].record == expected[i].record);
    }
    // The old index and the histories are as they were; new writes keep both indexes.
    ListQuery by_id;
    by_id.limit = 10000;
    auto page = store.list_workflows(by_id);
    REQUIRE(page);
    CHECK(page->entries.size() == model.size());
    CHECK(store.read("old-7", 1, 10)->size() == 1);
    REQUIRE(store.append_wait("new", {test::submitted_event()}, open_record(9'000'000)));
    CHECK(ids(list_all(store, [] {
            ListQuery q;
            q.limit = 1;
            return q;
          }()))
              .front() == "new");
    opened->reset();
    // The format is now 2: reopening converts nothing again and lists the same.
    {
      std::vector<std::string> names;
      REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir.path(), &names).ok());
      CHECK(std::find(names.begin(), names.end(), "created") != names.end());
      std::vector<rocksdb::ColumnFamilyDescriptor> families;
      for (const auto& name : names) families.emplace_back(name, rocksdb::ColumnFamilyOptions());
      std::vector<rocksdb::ColumnFamilyHandle*> handles;
      rocksdb::DB* raw = nullptr;
      REQUIRE(rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), dir.path(), families, &handles, &raw).ok());
      std::unique_ptr<rocksdb::DB> db(raw);
      const auto meta = std::find(names.begin(), names.end(), "meta") - names.begin();
      std::string version;
      REQUIRE(db->Get(rocksdb::ReadOptions(), handles[static_cast<size_t>(meta)], "format_version", &version).ok());
      CHECK(version == "2");
      for (auto* handle : handles) REQUIRE(db->DestroyColumnFamilyHandle(handle).ok());
    }
    auto again = RocksHistoryStore::open(dir.path());
    REQUIRE_MESSAGE(again, test::why(again));
    CHECK(list_all(**again, ListQuery{}).size() == model.size() + 1);
  }
}
