// What the scheduler's gateway counts of its connections, for the node's metrics. Updated on
// the RPC thread, read by a scrape on its own. Std-only.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "schema/meters.hpp"

namespace troupe::runtime {

/// Why the scheduler closed a connection itself (a peer that hangs up is not counted here).
enum class ConnectionClosed : uint8_t {
  OVER_LIMIT,         ///< max_connections or max_connections_per_peer reached when it came
  HANDSHAKE_TIMEOUT,  ///< not admitted within handshake_timeout
  IDLE_TIMEOUT,       ///< admitted, then nothing sent and nothing in progress for idle_timeout
  REFUSED,            ///< its credential was refused
  UNADMITTED_BYTES,   ///< sent more than max_unadmitted_bytes before it was admitted
  TLS_FAILED,         ///< its TLS handshake failed (not TLS, an untrusted or missing certificate)
};
inline constexpr std::array<std::string_view, 6> connection_closed_names = {
    "over_limit", "handshake_timeout", "idle_timeout", "refused", "unadmitted_bytes", "tls_failed"};

struct RpcMeters {
  meters::Gauge open;        ///< connections open now
  meters::Counter accepted;  ///< connections accepted since the node started
  /// Connections the scheduler closed, by ConnectionClosed.
  std::array<meters::Counter, connection_closed_names.size()> closed;

  void count_closed(ConnectionClosed why) { closed[static_cast<size_t>(why)].add(); }
};

}  // namespace troupe::runtime
