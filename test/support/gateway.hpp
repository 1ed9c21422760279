// The C++ client (runtime/client) connected to a test cluster's scheduler, waiting for it to
// accept connections rather than assuming it already does.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "runtime/client/gateway_client.hpp"

namespace troupe::test {

/// A GatewayClient once the scheduler at 127.0.0.1:`port` accepts connections (20 s at most); a
/// refusal other than "unavailable" fails at once.
inline std::unique_ptr<client::GatewayClient> gateway(uint16_t port) {
  using namespace std::chrono_literals;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    client::ConnectOptions options;
    options.timeout = 2s;
    auto connected = client::GatewayClient::connect("127.0.0.1", port, options);
    if (connected) return std::move(*connected);
    if (connected.error().code != Errc::UNAVAILABLE || std::chrono::steady_clock::now() > deadline) {
      REQUIRE_MESSAGE(false, "cannot connect to port " << port << ": " << connected.error().message);
    }
    std::this_thread::sleep_for(50ms);
  }
}

}  // namespace troupe::test
