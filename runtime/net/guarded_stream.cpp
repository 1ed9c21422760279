#include "runtime/net/guarded_stream.hpp"

#include <algorithm>

#include <kj/debug.h>

namespace troupe::runtime {

GuardedStream::GuardedStream(kj::Own<kj::AsyncIoStream> inner, std::shared_ptr<ConnectionTicket> ticket,
                             uint64_t max_unadmitted_bytes)
    : inner_(kj::mv(inner)), ticket_(std::move(ticket)), max_unadmitted_bytes_(max_unadmitted_bytes) {}

kj::Promise<size_t> GuardedStream::tryRead(void* buffer, size_t min_bytes, size_t max_bytes) {
  // A refused connection is closed soon; until then it is not heard, so calls it pipelined
  // behind the refused one are never read.
  if (ticket_->refused()) return kj::NEVER_DONE;
  ticket_->reading();
  // Once admitted, straight through: this is every message a busy worker sends.
  if (ticket_->admitted()) return inner_->tryRead(buffer, min_bytes, max_bytes);
  return read_unadmitted(static_cast<kj::byte*>(buffer), 0, min_bytes, max_bytes);
}

kj::Promise<size_t> GuardedStream::read_unadmitted(kj::byte* out, size_t have, size_t min_bytes, size_t max_bytes) {
  // Cap'n Proto reads a message's whole body in one call, so the read is cut into pieces no
  // larger than what the connection may still send: a large message is refused as it
  // arrives, not once all of it is held.
  const uint64_t used = ticket_->unadmitted_bytes();
  const uint64_t left = used >= max_unadmitted_bytes_ ? 0 : max_unadmitted_bytes_ - used;
  const size_t piece = static_cast<size_t>(std::min<uint64_t>(max_bytes - have, left + 1));
  return inner_->tryRead(out + have, 1, piece).then([this, out, have, min_bytes, max_bytes](size_t n) -> kj::Promise<size_t> {
    ticket_->unadmitted_read(n);
    if (!ticket_->admitted() && ticket_->unadmitted_bytes() > max_unadmitted_bytes_) {
      return KJ_EXCEPTION(DISCONNECTED,
                          "closed: the connection sent more than it may before it presented a credential",
                          max_unadmitted_bytes_);
    }
    const size_t total = have + n;
    if (n == 0 || total >= min_bytes) return total;
    if (ticket_->admitted()) {
      return inner_->tryRead(out + total, min_bytes - total, max_bytes - total).then([total](size_t more) {
        return total + more;
      });
    }
    return read_unadmitted(out, total, min_bytes, max_bytes);
  });
}

}  // namespace troupe::runtime
