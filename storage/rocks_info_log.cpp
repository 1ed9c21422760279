// The LOG file of a history store: one write per line, failures dropped, rolled by size.
#include "storage/rocks_info_log.hpp"

#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <mutex>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

namespace troupe::storage::detail {
namespace {

class InfoLog final : public rocksdb::Logger {
 public:
  InfoLog(std::shared_ptr<rocksdb::FileSystem> fs, const std::string& directory, size_t max_bytes)
      : fs_(std::move(fs)), path_(directory + "/LOG"), old_path_(directory + "/LOG.old"),
        max_bytes_(max_bytes) {
    std::lock_guard lock(mutex_);
    reopen();
  }

  ~InfoLog() override {
    if (!closed_) (void)Close();
  }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    char line[1024];
    const size_t prefix = stamp(line, sizeof line);
    va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(line + prefix, sizeof line - prefix, format, copy);
    va_end(copy);
    if (n < 0) return;
    std::string text;
    if (static_cast<size_t>(n) < sizeof line - prefix) {
      text.assign(line, prefix + static_cast<size_t>(n));
    } else {  // a long line (RocksDB's statistics dumps): format it again at its full size
      text.assign(line, prefix);
      text.resize(prefix + static_cast<size_t>(n) + 1);
      std::vsnprintf(text.data() + prefix, static_cast<size_t>(n) + 1, format, ap);
      text.resize(prefix + static_cast<size_t>(n));
    }
    if (text.empty() || text.back() != '\n') text.push_back('\n');
    write(text);
  }

  size_t GetLogFileSize() const override {
    std::lock_guard lock(mutex_);
    return size_;
  }

 protected:
  rocksdb::Status CloseImpl() override {
    std::lock_guard lock(mutex_);
    close_file();
    shut_ = true;
    return rocksdb::Status::OK();
  }

 private:
  /// "2024/05/01-12:00:00.123456 4242 ", as RocksDB's own lines begin; returns its length.
  static size_t stamp(char* out, size_t size) {
    timeval now{};
    ::gettimeofday(&now, nullptr);
    std::tm local{};
    ::localtime_r(&now.tv_sec, &local);
    const int n = std::snprintf(out, size, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld %d ", local.tm_year + 1900,
                                local.tm_mon + 1, local.tm_mday, local.tm_hour, local.tm_min, local.tm_sec,
                                static_cast<long>(now.tv_usec), static_cast<int>(::gettid()));
    return n > 0 ? std::min(static_cast<size_t>(n), size - 1) : 0;
  }

  void write(const std::string& text) {
    std::lock_guard lock(mutex_);
    if (shut_) return;
    if (size_ + text.size() > max_bytes_ && size_ > 0) {
      close_file();
      reopen();
    }
    if (!file_) return;
    // A failure costs this line only: the raw file keeps no error state, so the next line is
    // tried afresh (a full disk may have room again).
    rocksdb::IOOptions options;
    if (file_->Append(text, options, nullptr).ok()) {
      size_ += text.size();
      (void)file_->Flush(options, nullptr).ok();
    }
  }

  /// Moves the current LOG aside and starts a new one; without one, lines are dropped.
  void reopen() {
    rocksdb::IOOptions options;
    (void)fs_->RenameFile(path_, old_path_, options, nullptr).ok();  // no LOG yet is fine
    size_ = 0;
    if (!fs_->NewWritableFile(path_, rocksdb::FileOptions(), &file_, nullptr).ok()) file_.reset();
  }

  void close_file() {
    if (file_) (void)file_->Close(rocksdb::IOOptions(), nullptr).ok();  // nothing to do about it
    file_.reset();
  }

  const std::shared_ptr<rocksdb::FileSystem> fs_;
  const std::string path_;
  const std::string old_path_;
  const size_t max_bytes_;
  mutable std::mutex mutex_;
  std::unique_ptr<rocksdb::FSWritableFile> file_;
  size_t size_ = 0;
  bool shut_ = false;
};

}  // namespace

std::shared_ptr<rocksdb::Logger> open_info_log(std::shared_ptr<rocksdb::FileSystem> fs,
                                               const std::string& directory, size_t max_bytes) {
  return std::make_shared<InfoLog>(std::move(fs), directory, max_bytes);
}

}  // namespace troupe::storage::detail
