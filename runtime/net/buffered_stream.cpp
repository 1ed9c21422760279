#include "runtime/net/buffered_stream.hpp"

#include <algorithm>
#include <cstring>

namespace troupe::runtime {

BufferedStream::BufferedStream(kj::Own<kj::AsyncIoStream> inner, Backlog backlog)
    : inner_(kj::mv(inner)), backlog_policy_(backlog), tasks_(*this) {}

BufferedStream::~BufferedStream() noexcept(false) = default;

// --- reading ---------------------------------------------------------------------------

size_t BufferedStream::take_read_ahead(kj::byte* out, size_t max) {
  const size_t n = std::min(max, read_end_ - read_begin_);
  if (n > 0) {
    std::memcpy(out, read_ahead_.data() + read_begin_, n);
    read_begin_ += n;
  }
  if (read_begin_ == read_end_) read_begin_ = read_end_ = 0;
  return n;
}

kj::Promise<size_t> BufferedStream::tryRead(void* buffer, size_t min_bytes, size_t max_bytes) {
  if (backlog_policy_ == Backlog::HOLD_READS && backlog() > max_buffered_bytes && write_error_ == nullptr) {
    auto paf = kj::newPromiseAndFulfiller<void>();
    read_waiters_.push_back(kj::mv(paf.fulfiller));
    return paf.promise.then([this, buffer, min_bytes, max_bytes] { return tryRead(buffer, min_bytes, max_bytes); });
  }
  auto* out = static_cast<kj::byte*>(buffer);
  const size_t have = take_read_ahead(out, max_bytes);
  if (have >= min_bytes) return have;
  return read_more(out, have, min_bytes, max_bytes);
}

kj::Promise<size_t> BufferedStream::read_more(kj::byte* out, size_t have, size_t min_bytes, size_t max_bytes) {
  // The read-ahead buffer is empty here. A read as large as the buffer goes straight into the
  // caller's memory: copying it would gain nothing.
  if (max_bytes - have >= read_ahead_bytes) {
    return inner_->tryRead(out + have, min_bytes - have, max_bytes - have).then([have](size_t n) {
      return have + n;
    });
  }
  if (read_ahead_.empty()) read_ahead_.resize(read_ahead_bytes);
  return inner_->tryRead(read_ahead_.data(), min_bytes - have, read_ahead_.size())
      .then([this, out, have, max_bytes](size_t n) {
        read_begin_ = 0;
        read_end_ = n;
        // At least what was missing, unless the stream ended: then the caller sees the short
        // count, as from the socket itself.
        return have + take_read_ahead(out + have, max_bytes - have);
      });
}

// --- writing ---------------------------------------------------------------------------

kj::Promise<void> BufferedStream::write(const void* buffer, size_t size) {
  KJ_IF_MAYBE(error, write_error_) { return kj::cp(*error); }
  const auto* bytes = static_cast<const kj::byte*>(buffer);
  pending_.insert(pending_.end(), bytes, bytes + size);
  return after_append();
}

kj::Promise<void> BufferedStream::write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  KJ_IF_MAYBE(error, write_error_) { return kj::cp(*error); }
  for (auto piece : pieces) pending_.insert(pending_.end(), piece.begin(), piece.end());
  return after_append();
}

kj::Promise<void> BufferedStream::after_append() {
  if (!flushing_) {
    flushing_ = true;
    // Not now: more messages of the same burst are probably on their way.
    tasks_.add(kj::evalLast([this] { return flush(); }));
  }
  if (pending_.size() <= max_buffered_bytes) return kj::READY_NOW;
  auto paf = kj::newPromiseAndFulfiller<void>();
  drain_waiters_.push_back(kj::mv(paf.fulfiller));
  return kj::mv(paf.promise);
}

kj::Promise<void> BufferedStream::flush() {
  if (pending_.empty()) {
    flushing_ = false;
    if (shutdown_requested_) inner_->shutdownWrite();
    return kj::READY_NOW;
  }
  writing_.swap(pending_);
  pending_.clear();
  if (pending_.capacity() > 4 * max_buffered_bytes) pending_.shrink_to_fit();
  // Writers held back wait for the bytes they added, which are now the ones being written.
  auto released = kj::mv(drain_waiters_);
  drain_waiters_.clear();
  return inner_->write(writing_.data(), writing_.size()).then([this, released = kj::mv(released)]() mutable {
    writing_.clear();
    for (auto& waiter : released) waiter->fulfill();
    if (backlog() <= max_buffered_bytes) release_reads();
    return flush();
  });
}

void BufferedStream::taskFailed(kj::Exception&& exception) {
  // A failed write: later writes fail with it, and the reader will see the connection end.
  flushing_ = false;
  pending_.clear();
  for (auto& waiter : drain_waiters_) waiter->reject(kj::cp(exception));
  drain_waiters_.clear();
  write_error_ = kj::mv(exception);
  // The reader will see the connection end rather than wait for writes that cannot happen.
  release_reads();
}

void BufferedStream::release_reads() {
  auto waiters = kj::mv(read_waiters_);
  read_waiters_.clear();
  for (auto& waiter : waiters) waiter->fulfill();
}

void BufferedStream::shutdownWrite() {
  if (flushing_) {
    shutdown_requested_ = true;
    return;
  }
  inner_->shutdownWrite();
}

// --- the rest is the socket's ----------------------------------------------------------

kj::Promise<void> BufferedStream::whenWriteDisconnected() { return inner_->whenWriteDisconnected(); }
void BufferedStream::abortRead() { inner_->abortRead(); }
void BufferedStream::getsockopt(int level, int option, void* value, kj::uint* length) {
  inner_->getsockopt(level, option, value, length);
}
void BufferedStream::setsockopt(int level, int option, const void* value, kj::uint length) {
  inner_->setsockopt(level, option, value, length);
}
void BufferedStream::getsockname(struct sockaddr* addr, kj::uint* length) { inner_->getsockname(addr, length); }
void BufferedStream::getpeername(struct sockaddr* addr, kj::uint* length) { inner_->getpeername(addr, length); }
kj::Maybe<int> BufferedStream::getFd() const { return inner_->getFd(); }

}  // namespace troupe::runtime
