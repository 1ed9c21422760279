// FaultInjectionFs: tracked writable files and the power-loss simulation.
#include "test/support/fault_fs.hpp"

#include <filesystem>

namespace troupe::test {
namespace {

using rocksdb::IOStatus;

class TrackedFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  TrackedFile(std::unique_ptr<rocksdb::FSWritableFile> file, FaultInjectionFs& fs, std::string name,
              uint64_t size)
      : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs), name_(std::move(name)), size_(size) {}

  IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                  rocksdb::IODebugContext* dbg) override {
    return appended(data.size(), [&] { return target()->Append(data, options, dbg); });
  }
  IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                  const rocksdb::DataVerificationInfo& info, rocksdb::IODebugContext* dbg) override {
    return appended(data.size(), [&] { return target()->Append(data, options, info, dbg); });
  }
  IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                            const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
    return written_at(offset + data.size(),
                      [&] { return target()->PositionedAppend(data, offset, options, dbg); });
  }
  IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                            const rocksdb::IOOptions& options,
                            const rocksdb::DataVerificationInfo& info,
                            rocksdb::IODebugContext* dbg) override {
    return written_at(offset + data.size(), [&] {
      return target()->PositionedAppend(data, offset, options, info, dbg);
    });
  }
  IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& options,
                    rocksdb::IODebugContext* dbg) override {
    if (auto refused = fs_.before_append(name_); !refused.ok()) return refused;
    auto status = target()->Truncate(size, options, dbg);
    if (status.ok()) {
      size_ = size;
      fs_.on_truncated(name_, size);
    }
    return status;
  }
  IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    return synced([&] { return target()->Sync(options, dbg); });
  }
  IOStatus Fsync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    return synced([&] { return target()->Fsync(options, dbg); });
  }
  IOStatus RangeSync(uint64_t, uint64_t, const rocksdb::IOOptions&,
                     rocksdb::IODebugContext*) override {
    return IOStatus::OK();  // a hint, not a durability point; modelled as doing nothing
  }

 private:
  template <class Write>
  IOStatus appended(uint64_t bytes, Write&& write) {
    return written_at(size_ + bytes, write);
  }
  template <class Write>
  IOStatus written_at(uint64_t end, Write&& write) {
    if (auto refused = fs_.before_append(name_); !refused.ok()) {
      fs_.on_refused(name_);
      return refused;
    }
    auto status = write();
    if (status.ok()) {
      size_ = std::max(size_, end);
      fs_.on_written(name_, size_);
    }
    return status;
  }
  template <class Sync>
  IOStatus synced(Sync&& sync) {
    if (auto refused = fs_.before_sync(); !refused.ok()) {
      fs_.on_refused(name_);
      return refused;
    }
    auto status = sync();
    if (status.ok()) fs_.on_synced(name_);
    return status;
  }

  FaultInjectionFs& fs_;
  std::string name_;
  uint64_t size_;
};

}  // namespace

FaultInjectionFs::FaultInjectionFs(std::shared_ptr<rocksdb::FileSystem> base)
    : FileSystemWrapper(std::move(base)) {}

std::shared_ptr<rocksdb::Env> FaultInjectionFs::env_for(const std::shared_ptr<FaultInjectionFs>& fs) {
  return std::shared_ptr<rocksdb::Env>(rocksdb::NewCompositeEnv(fs));
}

IOStatus FaultInjectionFs::wrap(const std::string& name, IOStatus opened, uint64_t existing,
                                std::unique_ptr<rocksdb::FSWritableFile>* result) {
  if (!opened.ok()) return opened;
  {
    std::lock_guard lock(mutex_);
    files_[name] = FileState{existing, existing};
  }
  *result = std::make_unique<TrackedFile>(std::move(*result), *this, name, existing);
  return opened;
}

IOStatus FaultInjectionFs::NewWritableFile(const std::string& name,
                                           const rocksdb::FileOptions& options,
                                           std::unique_ptr<rocksdb::FSWritableFile>* result,
                                           rocksdb::IODebugContext* dbg) {
  if (auto refused = before_append(name); !refused.ok()) return refused;
  return wrap(name, target()->NewWritableFile(name, options, result, dbg), 0, result);
}

IOStatus FaultInjectionFs::ReopenWritableFile(const std::string& name,
                                              const rocksdb::FileOptions& options,
                                              std::unique_ptr<rocksdb::FSWritableFile>* result,
                                              rocksdb::IODebugContext* dbg) {
  if (auto refused = before_append(name); !refused.ok()) return refused;
  std::error_code ec;
  auto existing = std::filesystem::file_size(name, ec);
  return wrap(name, target()->ReopenWritableFile(name, options, result, dbg), ec ? 0 : existing,
              result);
}

IOStatus FaultInjectionFs::ReuseWritableFile(const std::string& name, const std::string& old_name,
                                             const rocksdb::FileOptions& options,
                                             std::unique_ptr<rocksdb::FSWritableFile>* result,
                                             rocksdb::IODebugContext* dbg) {
  if (auto refused = before_append(name); !refused.ok()) return refused;
  {
    std::lock_guard lock(mutex_);
    files_.erase(old_name);
  }
  return wrap(name, target()->ReuseWritableFile(name, old_name, options, result, dbg), 0, result);
}

IOStatus FaultInjectionFs::RenameFile(const std::string& from, const std::string& to,
                                      const rocksdb::IOOptions& options,
                                      rocksdb::IODebugContext* dbg) {
  if (auto refused = before_append(to); !refused.ok()) return refused;
  auto status = target()->RenameFile(from, to, options, dbg);
  if (status.ok()) {
    std::lock_guard lock(mutex_);
    if (auto it = files_.find(from); it != files_.end()) {
      files_[to] = it->second;
      files_.erase(from);
    } else {
      files_.erase(to);
    }
  }
  return status;
}

IOStatus FaultInjectionFs::DeleteFile(const std::string& name, const rocksdb::IOOptions& options,
                                      rocksdb::IODebugContext* dbg) {
  if (auto refused = before_append(name); !refused.ok()) return refused;
  auto status = target()->DeleteFile(name, options, dbg);
  if (status.ok()) {
    std::lock_guard lock(mutex_);
    files_.erase(name);
  }
  return status;
}

IOStatus FaultInjectionFs::NewLogger(const std::string& name, const rocksdb::IOOptions& options,
                                     std::shared_ptr<rocksdb::Logger>* result,
                                     rocksdb::IODebugContext* dbg) {
  // The base class's logger opens its file through this->NewWritableFile.
  return rocksdb::FileSystem::NewLogger(name, options, result, dbg);
}

uint64_t FaultInjectionFs::refused_writes(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = refused_.find(name);
  return it == refused_.end() ? 0 : it->second;
}

void FaultInjectionFs::on_refused(const std::string& name) {
  std::lock_guard lock(mutex_);
  ++refused_[name];
}

void FaultInjectionFs::fail_syncs(std::optional<IOStatus> status) {
  std::lock_guard lock(mutex_);
  sync_failure_ = std::move(status);
}

void FaultInjectionFs::fail_appends(std::optional<IOStatus> status, std::string only_suffix) {
  std::lock_guard lock(mutex_);
  append_failure_ = std::move(status);
  append_failure_suffix_ = std::move(only_suffix);
}

void FaultInjectionFs::pull_plug() {
  std::lock_guard lock(mutex_);
  powered_ = false;
}

uint64_t FaultInjectionFs::drop_unsynced_data() {
  std::lock_guard lock(mutex_);
  uint64_t dropped = 0;
  for (auto& [name, state] : files_) {
    std::error_code ec;
    auto size = std::filesystem::file_size(name, ec);
    if (ec || size <= state.synced) continue;
    std::filesystem::resize_file(name, state.synced, ec);
    if (!ec) dropped += size - state.synced;
    state.size = state.synced;
  }
  powered_ = true;
  return dropped;
}

IOStatus FaultInjectionFs::before_append(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (!powered_) return IOStatus::IOError("power is off (simulated)");
  if (append_failure_ && name.ends_with(append_failure_suffix_)) return *append_failure_;
  return IOStatus::OK();
}

IOStatus FaultInjectionFs::before_sync() {
  std::lock_guard lock(mutex_);
  if (!powered_) return IOStatus::IOError("power is off (simulated)");
  if (sync_failure_) return *sync_failure_;
  return IOStatus::OK();
}

void FaultInjectionFs::on_written(const std::string& name, uint64_t end) {
  std::lock_guard lock(mutex_);
  auto& state = files_[name];
  state.size = std::max(state.size, end);
}

void FaultInjectionFs::on_synced(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& state = files_[name];
  state.synced = state.size;
}

void FaultInjectionFs::on_truncated(const std::string& name, uint64_t size) {
  std::lock_guard lock(mutex_);
  auto& state = files_[name];
  state.size = size;
  state.synced = std::min(state.synced, size);
}

}  // namespace troupe::test
