// A RocksDB FileSystem that can fail syncs and appends on demand and simulate a power loss:
// it tracks, for every file written through it, how many bytes were synced, and can cut
// every such file back to that length, the way a machine that lost power loses page cache.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

namespace troupe::test {

class FaultInjectionFs : public rocksdb::FileSystemWrapper {
 public:
  explicit FaultInjectionFs(std::shared_ptr<rocksdb::FileSystem> base = rocksdb::FileSystem::Default());

  static const char* kClassName() { return "TroupeFaultInjectionFs"; }
  const char* Name() const override { return kClassName(); }

  /// An Env that does its file work through `fs` (keep both alive while a store uses it).
  static std::shared_ptr<rocksdb::Env> env_for(const std::shared_ptr<FaultInjectionFs>& fs);

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& name, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;
  /// RocksDB's own info log, but over a file of this FileSystem (the wrapper would hand the call
  /// to the real one), so injected faults reach the LOG file as a full disk would.
  rocksdb::IOStatus NewLogger(const std::string& name, const rocksdb::IOOptions& options,
                              std::shared_ptr<rocksdb::Logger>* result,
                              rocksdb::IODebugContext* dbg) override;

  /// From now on every sync fails with `status` (nullopt: syncs work again).
  void fail_syncs(std::optional<rocksdb::IOStatus> status);
  /// From now on every append (and file creation, rename, delete) fails with `status`, or
  /// only those of files whose name ends with `only_suffix` (".sst": flushes and compactions
  /// fail while the write-ahead log works). nullopt: they work again.
  void fail_appends(std::optional<rocksdb::IOStatus> status, std::string only_suffix = "");

  /// The power goes out: every later write, sync, create, rename and delete fails, so
  /// nothing more reaches the disk.
  void pull_plug();

  /// How many writes and syncs of file `name` (a full path) were refused so far.
  uint64_t refused_writes(const std::string& name);

  /// Cuts every file written through this FileSystem back to its synced length and turns
  /// the power back on. Returns the number of bytes dropped.
  uint64_t drop_unsynced_data();

  // Called by the tracked files.
  rocksdb::IOStatus before_append(const std::string& name);
  rocksdb::IOStatus before_sync();
  void on_written(const std::string& name, uint64_t end);
  void on_synced(const std::string& name);
  void on_truncated(const std::string& name, uint64_t size);
  void on_refused(const std::string& name);

 private:
  struct FileState {
    uint64_t size = 0;
    uint64_t synced = 0;
  };
  rocksdb::IOStatus wrap(const std::string& name, rocksdb::IOStatus opened, uint64_t existing,
                         std::unique_ptr<rocksdb::FSWritableFile>* result);

  std::mutex mutex_;
  std::map<std::string, FileState> files_;
  std::map<std::string, uint64_t> refused_;
  bool powered_ = true;
  std::optional<rocksdb::IOStatus> sync_failure_;
  std::optional<rocksdb::IOStatus> append_failure_;
  std::string append_failure_suffix_;
};

}  // namespace troupe::test
