// The client library's shared plumbing (client_rpc.hpp).
#include "runtime/client/client_rpc.hpp"

#include <capnp/dynamic.h>
#include <capnp/serialize-packed.h>
#include <kj/io.h>

#include "runtime/net/buffered_stream.hpp"
#include "schema/host.hpp"

namespace troupe::client {

using runtime::text;

Connection::Connection(kj::Own<kj::AsyncIoStream> tcp)
    : stream(kj::heap<runtime::BufferedStream>(kj::mv(tcp))), rpc(*stream) {}

std::shared_ptr<ThreadIo> ThreadIo::of_this_thread() {
  thread_local std::weak_ptr<ThreadIo> current;
  if (auto existing = current.lock()) return existing;
  auto made = std::make_shared<ThreadIo>();
  current = made;
  return made;
}

Result<std::shared_ptr<runtime::TlsEndpoint>> client_tls(const std::string& host, const ConnectOptions& options) {
  if (!options.tls) {
    // A scheduler speaks plaintext only on a loopback address (its config is refused
    // otherwise), so plaintext anywhere else would only hand the token to whoever answers.
    if (!is_loopback_host(host)) {
      return fail(Errc::INVALID_ARGUMENT, "refusing to connect to " + host +
                                              " without TLS: set ConnectOptions.tls (the CA that signs the "
                                              "scheduler's certificate; a scheduler speaks plaintext only on a "
                                              "loopback address)");
    }
    return std::shared_ptr<runtime::TlsEndpoint>();
  }
  auto endpoint = runtime::TlsEndpoint::client(
      {options.tls->ca_file, options.tls->certificate_file, options.tls->key_file});
  if (!endpoint) return endpoint.error();
  return std::shared_ptr<runtime::TlsEndpoint>(std::move(*endpoint));
}

kj::Promise<schema::Gateway::Client> connect_gateway(kj::AsyncIoContext& io, const std::string& host, uint16_t port,
                                                     runtime::TlsEndpoint* tls, kj::Own<Connection>& connection) {
  return io.provider->getNetwork()
      .parseAddress(host, port)
      .then([](kj::Own<kj::NetworkAddress> where) { return where->connect().attach(kj::mv(where)); })
      .then([tls, host](kj::Own<kj::AsyncIoStream> tcp) -> kj::Promise<kj::Own<kj::AsyncIoStream>> {
        if (tls == nullptr) return kj::mv(tcp);
        return tls->context().wrapClient(kj::mv(tcp), host);
      })
      .then([&connection](kj::Own<kj::AsyncIoStream> tcp) {
        connection = kj::heap<Connection>(kj::mv(tcp));
        return connection->rpc.bootstrap().castAs<schema::Gateway>();
      });
}

Error lost(const std::string& address, const kj::Exception& e) {
  return fail(Errc::UNAVAILABLE, "lost the scheduler at " + address + ": " + std::string(e.getDescription().cStr()));
}

WatchedEvent watched_event(schema::HistoryEvent::Reader e) {
  WatchedEvent out;
  out.sequence = e.getSequence();
  out.timestamp_us = e.getTimestampUs();
  switch (e.getActorKind()) {
    case schema::ActorKind::WORKFLOW: out.actor_kind = "workflow"; break;
    case schema::ActorKind::TASK: out.actor_kind = "task"; break;
    case schema::ActorKind::SESSION: out.actor_kind = "session"; break;
    case schema::ActorKind::WORKER: out.actor_kind = "worker"; break;
  }
  out.actor_id = text(e.getActorId());
  out.attempt = e.getAttempt();
  auto body = capnp::toDynamic(e.getBody());
  KJ_IF_MAYBE(field, body.which()) {
    out.kind = field->getProto().getName().cStr();
    out.detail = kj::str(body.get(*field)).cStr();
    if (out.detail == "void") out.detail.clear();
  }
  capnp::MallocMessageBuilder message;
  message.setRoot(e);
  kj::VectorOutputStream packed;
  capnp::writePackedMessage(packed, message);
  auto bytes = packed.getArray();
  out.packed.assign(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
  return out;
}

}  // namespace troupe::client
