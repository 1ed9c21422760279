// What the client library's connections share: the TCP connection and its RPC system, the
// thread's KJ event loop, and reading the scheduler's answers. Included by the client's .cpp
// files only (it brings in Cap'n Proto and KJ).
#pragma once

#include <memory>
#include <string>

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include "runtime/client/gateway_client.hpp"
#include "runtime/net/tls.hpp"
#include "runtime/wire.hpp"
#include "schema/gateway.capnp.h"

namespace troupe::client {

/// The RPC system over one TCP connection (TLS over it, or not), made once the connection is up.
struct Connection {
  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyClient rpc;
  explicit Connection(kj::Own<kj::AsyncIoStream> tcp);
};

/// The TLS endpoint `options` ask for to reach `host`: nullptr for plaintext, which only a
/// loopback host may be spoken to in; INVALID_ARGUMENT otherwise, or naming a file that cannot
/// be used (NOT_FOUND when it does not exist).
Result<std::shared_ptr<runtime::TlsEndpoint>> client_tls(const std::string& host, const ConnectOptions& options);

/// A thread has one KJ event loop at most: the clients made on one thread share it.
struct ThreadIo {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  static std::shared_ptr<ThreadIo> of_this_thread();
};

/// Connects to host:port and bootstraps the scheduler's Gateway; `connection` holds the
/// connection once it is made.
/// `tls` (nullptr: plaintext) must live as long as the connection.
kj::Promise<schema::Gateway::Client> connect_gateway(kj::AsyncIoContext& io, const std::string& host, uint16_t port,
                                                     runtime::TlsEndpoint* tls, kj::Own<Connection>& connection);

/// The scheduler's error in a response, if it set one.
template <class Response>
bool has_error(Response& response) {
  return response.hasError() && response.getError().getCode() != schema::ErrorCode::NONE;
}

template <class Response>
Error error_of(Response& response) {
  auto e = response.getError();
  return fail(static_cast<Errc>(static_cast<uint16_t>(e.getCode())), runtime::text(e.getMessage()));
}

Error lost(const std::string& address, const kj::Exception& e);

/// A history event as the client hands it out: its body in words, and packed whole.
WatchedEvent watched_event(schema::HistoryEvent::Reader e);

}  // namespace troupe::client
