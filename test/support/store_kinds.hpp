// The two history stores a storage test runs against, each with a reopen() that plays what a
// restarted node finds: RocksDB in a temporary directory, and the in-memory store (a snapshot).
#pragma once

#include <doctest/doctest.h>

#include <memory>

#include "storage/memory_history_store.hpp"
#include "storage/rocks_history_store.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

namespace troupe::test {

struct OnDisk {
  TempDir dir;
  std::unique_ptr<storage::RocksHistoryStore> rocks = open();

  std::unique_ptr<storage::RocksHistoryStore> open() {
    storage::StoreOptions options;
    options.sync = false;  // loading fixtures; durability is not under test here
    auto opened = storage::RocksHistoryStore::open(dir.path(), options);
    REQUIRE_MESSAGE(opened, why(opened));
    return std::move(*opened);
  }
  storage::HistoryStore& store() { return *rocks; }
  void reopen() {
    rocks.reset();
    rocks = open();
  }
};

struct InMemory {
  std::shared_ptr<storage::MemoryHistoryStore> memory = std::make_shared<storage::MemoryHistoryStore>();
  storage::HistoryStore& store() { return *memory; }
  void reopen() { memory = memory->snapshot(); }
};

}  // namespace troupe::test
