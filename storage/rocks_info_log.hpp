// The history store's RocksDB info log (its LOG file). RocksDB's own logger writes through a
// WritableFileWriter, which after one failed write asserts on the next (Debian's librocksdb
// keeps assertions on): on a full disk, the first line logged after a LOG write failed aborted
// the node. This logger drops the lines it cannot write instead. Used by rocks_history_store.cpp
// only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace rocksdb {
class FileSystem;
class Logger;
}  // namespace rocksdb

namespace troupe::storage::detail {

/// A logger writing `directory`/LOG through `fs`, each line written and flushed as it comes;
/// a line that cannot be written is dropped. The previous LOG becomes LOG.old, and so does
/// LOG itself once it grows past `max_bytes`, so the two together stay under twice that.
/// Never fails: without a LOG file it logs nothing. Thread-safe.
std::shared_ptr<rocksdb::Logger> open_info_log(std::shared_ptr<rocksdb::FileSystem> fs,
                                               const std::string& directory, size_t max_bytes);

}  // namespace troupe::storage::detail
