#include "runtime/gateway_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <unordered_map>

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include "runtime/net/buffered_stream.hpp"
#include "runtime/net/guarded_stream.hpp"
#include "runtime/net/tls.hpp"
#include "schema/node_log.hpp"

namespace troupe::runtime {
namespace {

using Clock = ConnectionTicket::Clock;

/// How long accepting waits after accept() failed, first and at most: out of file descriptors
/// (EMFILE), the listening socket stays readable, so retrying at once would spin.
constexpr kj::Duration first_accept_backoff = 10 * kj::MILLISECONDS;
constexpr kj::Duration max_accept_backoff = 1 * kj::SECONDS;
/// How long a refused connection stays open for its refusal to go out.
constexpr kj::Duration refusal_grace = 250 * kj::MILLISECONDS;

kj::Duration to_kj(Duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count() * kj::NANOSECONDS;
}

/// The peer's IP address without its port ("127.0.0.1", "::1"), or "unknown".
std::string peer_address(kj::AsyncIoStream& stream) {
  sockaddr_storage addr{};
  kj::uint length = sizeof addr;
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&] { stream.getpeername(reinterpret_cast<sockaddr*>(&addr), &length); })) {
    return "unknown";
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, text, sizeof text);
  } else {
    return "unknown";
  }
  return text;
}

class Listener {
 public:
  Listener(kj::AsyncIoContext& io, GatewayListenerSetup setup, kj::Own<kj::ConnectionReceiver> receiver)
      : setup_(std::move(setup)), timer_(io.provider->getTimer()), receiver_(kj::mv(receiver)), tasks_(handler_) {}

  void start() {
    tasks_.add(accept_loop());
    tasks_.add(sweep_loop());
  }

 private:
  /// A connection's RPC system and the streams under it, once its TLS handshake is done.
  struct Rpc {
    kj::Own<kj::AsyncIoStream> stream;
    capnp::TwoPartyVatNetwork network;
    capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
    kj::Promise<void> ended = nullptr;  ///< last: cancelled before what it watches goes

    Rpc(kj::Own<kj::AsyncIoStream> s, capnp::Capability::Client bootstrap, const ConnectionLimits& limits)
        : stream(kj::mv(s)),
          network(*stream, capnp::rpc::twoparty::Side::SERVER, reader_options(limits)),
          rpc(capnp::makeRpcServer(network, kj::mv(bootstrap))) {
      rpc.setFlowLimit(limits.max_calls_in_flight_bytes / sizeof(capnp::word));
    }

    static capnp::ReaderOptions reader_options(const ConnectionLimits& limits) {
      capnp::ReaderOptions options;
      options.traversalLimitInWords = limits.max_message_bytes / sizeof(capnp::word);
      return options;
    }
  };

  /// One open connection and everything that lives as long as it does.
  struct Connection {
    std::shared_ptr<ConnectionTicket> ticket;
    kj::Own<Rpc> rpc;  ///< null while the TLS handshake runs
    kj::Promise<void> handshake = nullptr;  ///< last: cancelled (by a close) before the rest goes
  };

  struct ErrorHandler final : kj::TaskSet::ErrorHandler {
    void taskFailed(kj::Exception&&) override {}  // nop: each task handles its own failures
  };

  kj::Promise<void> accept_loop() {
    // evalNow: accept() may fail at once, before it returns a promise.
    return kj::evalNow([this] { return receiver_->acceptAuthenticated(); })
        .then(
            [this](kj::AuthenticatedStream&& stream) {
              accepted(kj::mv(stream));
              return accept_loop();
            },
            [this](kj::Exception&& e) -> kj::Promise<void> {
              // A failed accept (out of file descriptors, a connection reset before it was
              // taken) is waited out: a scheduler that stopped accepting would be deaf for good.
              if (failures_++ == 0) {
                log_or_none(setup_.log).warn("cannot accept connections; retrying, backing off up to 1s",
                                             {{"error", e.getDescription().cStr()}});
              }
              const kj::Duration wait = backoff_;
              backoff_ = std::min(backoff_ * 2, max_accept_backoff);
              return timer_.afterDelay(wait).then([this] { return accept_loop(); });
            });
  }

  void accepted(kj::AuthenticatedStream accepted) {
    if (failures_ > 0) {
      log_or_none(setup_.log).warn("accepting connections again", {{"failed_accepts", failures_}});
      failures_ = 0;
      backoff_ = first_accept_backoff;
    }
    if (setup_.meters) setup_.meters->accepted.add();
    std::string peer = peer_address(*accepted.stream);
    const auto& limits = setup_.limits;
    // At most half the connections may be waiting to be admitted, so that peers without a
    // credential cannot take the slots of the workers and clients that have one; past that,
    // the one that has waited longest makes room, so a flood of them cannot keep a worker
    // that reconnects from its handshake either.
    if (auto waiting = unadmitted(); waiting.count >= std::max<uint32_t>(1, limits.max_connections / 2)) {
      close(waiting.oldest, ConnectionClosed::OVER_LIMIT);
    }
    const bool node_full = open_.size() >= limits.max_connections;
    if (node_full || per_peer_[peer] >= limits.max_connections_per_peer) {
      // Closed at once (the stream goes out of scope): a peer over its limit gets no RPC system.
      if (per_peer_[peer] == 0) per_peer_.erase(peer);
      count_closed(ConnectionClosed::OVER_LIMIT);
      const char* limit = node_full ? "max_connections" : "max_connections_per_peer";
      if (over_limit_logged_ != limit) {
        log_or_none(setup_.log).warn("connection limit reached; closing new connections until some end",
                                     {{"peer", peer}, {"limit", limit}, {"open", open_.size()}});
        over_limit_logged_ = limit;
      }
      return;
    }
    const uint64_t id = ++last_id_;
    auto ticket = std::make_shared<ConnectionTicket>(id, peer, Clock::now());
    ticket->on_refused([this, id] {
      tasks_.add(timer_.afterDelay(refusal_grace).then([this, id] { close(id, ConnectionClosed::REFUSED); }));
    });
    ++per_peer_[peer];
    if (setup_.meters) setup_.meters->open.add(1);
    auto made = kj::heap<Connection>();
    made->ticket = ticket;
    auto& connection = *open_.emplace(id, kj::mv(made)).first->second;
    if (!setup_.tls) {
      serve(connection, kj::mv(accepted.stream));
      return;
    }
    // The handshake counts against handshake_timeout like the rest of admission.
    connection.handshake = setup_.tls->context()
                               .wrapServer(kj::mv(accepted))
                               .then(
                                   [this, id](kj::AuthenticatedStream&& secured) {
                                     auto it = open_.find(id);
                                     if (it == open_.end()) return;
                                     auto* identity = dynamic_cast<kj::TlsPeerIdentity*>(secured.peerIdentity.get());
                                     if (identity != nullptr && identity->hasCertificate()) {
                                       it->second->ticket->certificate_name(identity->getCommonName().cStr());
                                     }
                                     serve(*it->second, kj::mv(secured.stream));
                                   },
                                   [this, id](kj::Exception&& e) {
                                     log_or_none(setup_.log).debug("TLS handshake failed",
                                                                   {{"peer", open_.count(id) ? open_.at(id)->ticket->peer() : ""},
                                                                    {"error", e.getDescription().cStr()}});
                                     tasks_.add(kj::evalLater([this, id] { close(id, ConnectionClosed::TLS_FAILED); }));
                                   })
                               .eagerlyEvaluate(nullptr);
  }

  /// Starts the connection's RPC system over `stream` (the socket's, or TLS's over it).
  void serve(Connection& connection, kj::Own<kj::AsyncIoStream> stream) {
    const auto& ticket = connection.ticket;
    const uint64_t id = ticket->id();
    auto buffered = kj::heap<BufferedStream>(kj::mv(stream), BufferedStream::Backlog::HOLD_READS);
    connection.rpc = kj::heap<Rpc>(kj::heap<GuardedStream>(kj::mv(buffered), ticket, setup_.limits.max_unadmitted_bytes),
                                   setup_.gateway(ticket), setup_.limits);
    connection.rpc->ended = connection.rpc->network.onDisconnect()
                                .then([this, id] {
                                  // Later: the connection must not be destroyed from inside its own callback.
                                  tasks_.add(kj::evalLater([this, id] { close(id, std::nullopt); }));
                                })
                                .eagerlyEvaluate(nullptr);
  }

  /// Drops connection `id` if it is still open; `why` the scheduler closed it (nullopt: it ended).
  void close(uint64_t id, std::optional<ConnectionClosed> why) {
    auto it = open_.find(id);
    if (it == open_.end()) return;
    auto& ticket = *it->second->ticket;
    if (why) {
      count_closed(*why);
      log_or_none(setup_.log).debug("closing a connection",
                                    {{"peer", ticket.peer()},
                                     {"identity", ticket.identity()},
                                     {"why", connection_closed_names[static_cast<size_t>(*why)]}});
    }
    if (ticket.unadmitted_bytes() > setup_.limits.max_unadmitted_bytes && !ticket.admitted() && !why) {
      count_closed(ConnectionClosed::UNADMITTED_BYTES);
      log_or_none(setup_.log).debug("closing a connection",
                                    {{"peer", ticket.peer()}, {"identity", ticket.identity()}, {"why", "unadmitted_bytes"}});
    }
    if (auto peer = per_peer_.find(ticket.peer()); peer != per_peer_.end() && --peer->second == 0) {
      per_peer_.erase(peer);
    }
    if (setup_.meters) setup_.meters->open.add(-1);
    open_.erase(it);
    if (open_.size() < setup_.limits.max_connections) over_limit_logged_.clear();
  }

  /// The connections open and not admitted yet: how many, and the one waiting longest (ids
  /// grow with time). A scan: accepts are rare next to calls.
  struct Unadmitted {
    size_t count = 0;
    uint64_t oldest = 0;
  };
  Unadmitted unadmitted() const {
    Unadmitted waiting;
    for (const auto& [id, connection] : open_) {
      if (connection->ticket->admitted()) continue;
      if (waiting.count++ == 0 || id < waiting.oldest) waiting.oldest = id;
    }
    return waiting;
  }

  void count_closed(ConnectionClosed why) {
    if (setup_.meters) setup_.meters->count_closed(why);
  }

  /// How often connections are checked against the timeouts: often enough that none outlives
  /// its timeout by more than a quarter of it, at most once a second.
  kj::Duration sweep_period() const {
    const Duration shortest = std::min(setup_.limits.handshake_timeout, setup_.limits.idle_timeout);
    return to_kj(std::clamp<Duration>(shortest / 4, std::chrono::milliseconds(10), std::chrono::seconds(1)));
  }

  kj::Promise<void> sweep_loop() {
    return timer_.afterDelay(sweep_period()).then([this] {
      sweep(Clock::now());
      return sweep_loop();
    });
  }

  void sweep(Clock::time_point now) {
    std::vector<std::pair<uint64_t, ConnectionClosed>> expired;
    for (const auto& [id, connection] : open_) {
      const auto& t = *connection->ticket;
      if (!t.admitted()) {
        if (!t.refused() && now - t.accepted_at() >= setup_.limits.handshake_timeout) {
          expired.emplace_back(id, ConnectionClosed::HANDSHAKE_TIMEOUT);
        }
      } else if (connection->ticket->idle_for(setup_.limits.idle_timeout, now)) {
        expired.emplace_back(id, ConnectionClosed::IDLE_TIMEOUT);
      }
    }
    for (const auto& [id, why] : expired) close(id, why);
  }

  GatewayListenerSetup setup_;
  kj::Timer& timer_;
  kj::Own<kj::ConnectionReceiver> receiver_;
  std::unordered_map<uint64_t, kj::Own<Connection>> open_;
  std::unordered_map<std::string, uint32_t> per_peer_;
  uint64_t last_id_ = 0;
  std::string over_limit_logged_;  ///< the limit last said to be reached, until connections end
  /// Failed accepts in a row, and the wait before the next try.
  uint64_t failures_ = 0;
  kj::Duration backoff_ = first_accept_backoff;
  ErrorHandler handler_;
  kj::TaskSet tasks_;  ///< last: its tasks use everything above
};

}  // namespace

Result<std::function<void()>> serve_gateway_connections(kj::AsyncIoContext& io, GatewayListenerSetup setup,
                                                        const Address& listen, uint16_t* bound_port) {
  kj::Own<kj::ConnectionReceiver> receiver;
  KJ_IF_MAYBE(exception, kj::runCatchingExceptions([&] {
    auto address = io.provider->getNetwork().parseAddress(listen.host, listen.port).wait(io.waitScope);
    receiver = address->listen();
  })) {
    return fail(Errc::UNAVAILABLE, "cannot listen on " + listen.to_string() + ": " +
                                       exception->getDescription().cStr());
  }
  if (bound_port) *bound_port = static_cast<uint16_t>(receiver->getPort());
  auto listener = std::make_shared<Listener>(io, std::move(setup), kj::mv(receiver));
  listener->start();
  return std::function<void()>([listener]() mutable { listener.reset(); });
}

}  // namespace troupe::runtime
