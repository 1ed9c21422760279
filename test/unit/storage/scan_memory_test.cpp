// Recovery scans the open-workflow index a page at a time: its memory must depend on the
// page size, not on how many workflows are open.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <future>

#include "storage/rocks_history_store.hpp"
#include "test/support/alloc_counter.hpp"
#include "test/support/sample_events.hpp"
#include "test/support/temp_dir.hpp"

using namespace troupe;
using namespace troupe::storage;

TEST_SUITE("storage.scan_memory") {
  TEST_CASE("a paged scan over 100k open workflows stays within a fixed memory bound") {
    constexpr int workflows = 100'000;
    constexpr size_t page_size = 500;
    // Each record carries a 200-byte name, so the open set is far bigger than the bound.
    const std::string name(200, 'n');
    test::TempDir dir;
    StoreOptions options;
    options.block_cache_bytes = size_t{4} << 20;
    options.write_buffer_bytes = size_t{4} << 20;
    {
      options.sync = false;  // loading the fixture; durability is not under test here
      auto store = RocksHistoryStore::open(dir.path(), options);
      REQUIRE(store);
      std::atomic<int> pending{workflows};
      std::promise<void> all_done;
      std::atomic<int> failures{0};
      for (int i = 0; i < workflows; ++i) {
        char id[32];
        std::snprintf(id, sizeof id, "workflow-%07d", i);
        (*store)->append(id, {test::submitted_event()},
                         WorkflowRecord{WorkflowStatus::OPEN, name + std::to_string(i), "d", i,
                                        0, "", ""},
                         [&](Result<AppendReceipt> r) {
                           if (!r) ++failures;
                           if (--pending == 0) all_done.set_value();
                         });
      }
      all_done.get_future().wait();
      REQUIRE(failures == 0);
    }
    options.sync = true;
    auto store = RocksHistoryStore::open(dir.path(), options);
    REQUIRE(store);

    const size_t baseline = test::live_heap_bytes();
    test::reset_heap_peak();
    size_t seen = 0;
    size_t record_bytes = 0;
    std::string after;
    std::string previous;
    for (;;) {
      auto page = (*store)->scan_open(after, page_size);
      REQUIRE(page);
      REQUIRE(page->size() <= page_size);
      if (page->empty()) break;
      for (const auto& entry : *page) {
        REQUIRE(entry.id > previous);
        previous = entry.id;
        record_bytes += entry.id.size() + entry.record.definition_name.size();
      }
      seen += page->size();
      after = page->back().id;
    }
    const size_t growth = test::peak_heap_bytes() - baseline;
    MESSAGE("scanned " << seen << " workflows (" << record_bytes / 1024
                       << " KiB of ids and names); heap peak grew by " << growth / 1024 << " KiB");
    CHECK(seen == workflows);
    CHECK(record_bytes > size_t{20} << 20);
    // Page + iterator + a block cache capped at 4 MiB; nowhere near the 20+ MiB scanned.
    CHECK(growth < size_t{10} << 20);
  }
}
