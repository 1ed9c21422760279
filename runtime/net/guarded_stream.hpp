// The scheduler's side of one connection, between Cap'n Proto and its buffered stream: tells
// the connection's ticket what arrives, ends the connection when it sends more than an
// unadmitted connection may, and reads nothing more once its credential was refused. Above the
// buffer, not below it, so that a refusal stops the very next message.
#pragma once

#include <cstdint>
#include <memory>

#include <kj/async-io.h>

#include "runtime/net/connection_ticket.hpp"

namespace troupe::runtime {

class GuardedStream final : public kj::AsyncIoStream {
 public:
  /// `max_unadmitted_bytes`: what the connection may send before its ticket is admitted; more
  /// fails the read with DISCONNECTED, which ends the connection.
  GuardedStream(kj::Own<kj::AsyncIoStream> inner, std::shared_ptr<ConnectionTicket> ticket,
                uint64_t max_unadmitted_bytes);

  kj::Promise<size_t> tryRead(void* buffer, size_t min_bytes, size_t max_bytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override { return inner_->write(buffer, size); }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    return inner_->write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }
  void abortRead() override { inner_->abortRead(); }
  void getsockopt(int level, int option, void* value, kj::uint* length) override {
    inner_->getsockopt(level, option, value, length);
  }
  void setsockopt(int level, int option, const void* value, kj::uint length) override {
    inner_->setsockopt(level, option, value, length);
  }
  void getsockname(struct sockaddr* addr, kj::uint* length) override { inner_->getsockname(addr, length); }
  void getpeername(struct sockaddr* addr, kj::uint* length) override { inner_->getpeername(addr, length); }
  kj::Maybe<int> getFd() const override { return inner_->getFd(); }

 private:
  kj::Promise<size_t> read_unadmitted(kj::byte* out, size_t have, size_t min_bytes, size_t max_bytes);

  kj::Own<kj::AsyncIoStream> inner_;
  std::shared_ptr<ConnectionTicket> ticket_;
  uint64_t max_unadmitted_bytes_;
};

}  // namespace troupe::runtime
