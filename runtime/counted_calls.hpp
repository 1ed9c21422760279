// A Cap'n Proto server that tells its connection's ticket when each call starts and ends, so
// that a connection waiting on a long call (a watch, a long `result`) does not count as idle.
// For the scheduler's servers only; it includes capnp headers.
#pragma once

#include <memory>
#include <utility>

#include <capnp/capability.h>
#include <kj/common.h>

#include "runtime/net/connection_ticket.hpp"

namespace troupe::runtime {

template <class Server>
class CountedCalls final : public Server {
 public:
  /// `ticket`: the connection the server is handed to; nullptr counts nothing.
  template <class... Args>
  explicit CountedCalls(std::shared_ptr<ConnectionTicket> ticket, Args&&... args)
      : Server(std::forward<Args>(args)...), ticket_(std::move(ticket)) {}

  capnp::Capability::Server::DispatchCallResult dispatchCall(
      uint64_t interface_id, uint16_t method_id,
      capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer> context) override {
    if (!ticket_) return Server::dispatchCall(interface_id, method_id, context);
    ticket_->call_started();
    // Runs when the call's promise is done or dropped, and if dispatching throws.
    auto ended = kj::defer([ticket = ticket_] { ticket->call_ended(); });
    auto result = Server::dispatchCall(interface_id, method_id, context);
    result.promise = result.promise.attach(kj::mv(ended));
    return result;
  }

 private:
  std::shared_ptr<ConnectionTicket> ticket_;
};

}  // namespace troupe::runtime
