// Accepts the connections to the scheduler's gateway and keeps each within the cluster's
// [connections] limits: how many at once (in all and per peer address), how long one may take
// to be admitted, how long an admitted one may stay silent, what it may send before, and how
// much of its calls and answers the scheduler holds. Every connection gets a ticket, which the
// gateway serving it admits or refuses. Lives on the RPC thread.
#pragma once

#include <functional>
#include <memory>

#include <capnp/capability.h>

#include "runtime/config/cluster_config.hpp"
#include "runtime/net/connection_ticket.hpp"
#include "runtime/rpc_meters.hpp"

namespace kj {
struct AsyncIoContext;
class TaskSet;
}  // namespace kj

namespace troupe {
class NodeLog;
}  // namespace troupe

namespace troupe::runtime {

class TlsEndpoint;

struct GatewayListenerSetup {
  ConnectionLimits limits;
  std::shared_ptr<NodeLog> log;      ///< nullptr: nowhere
  std::shared_ptr<RpcMeters> meters;  ///< nullptr: not counted
  /// Every connection is TLS with this server endpoint; nullptr: plaintext (loopback only, as
  /// the config checks).
  std::shared_ptr<TlsEndpoint> tls;
  /// The bootstrap capability of one new connection, which admits or refuses `ticket`.
  std::function<capnp::Capability::Client(std::shared_ptr<ConnectionTicket> ticket)> gateway;
};

/// Listens on `listen` and serves every connection with its own RPC system until it ends or a
/// limit closes it. The returned teardown stops listening and drops every connection; call it
/// on the RPC thread. `bound_port` receives the port bound. UNAVAILABLE when it cannot listen.
Result<std::function<void()>> serve_gateway_connections(kj::AsyncIoContext& io, GatewayListenerSetup setup,
                                                        const Address& listen, uint16_t* bound_port);

}  // namespace troupe::runtime
