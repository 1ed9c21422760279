// The metrics server: serves a Registry at GET /metrics in Prometheus' text format, over HTTP
// (prometheus-cpp's Exposer, civetweb inside). prometheus-cpp stays inside server.cpp.
#pragma once

#include <memory>
#include <string>

#include "runtime/config/cluster_config.hpp"
#include "runtime/metrics/registry.hpp"
#include "schema/result.hpp"

namespace troupe::runtime::metrics {

class Server {
 public:
  /// Listens on `address` (port 0: a free port) and serves `registry`, each scrape on one of
  /// the server's own threads. UNAVAILABLE naming the address when it cannot listen there.
  static Result<std::unique_ptr<Server>> start(const Address& address, std::shared_ptr<const Registry> registry);

  /// Stops listening and waits for scrapes in progress to end.
  ~Server();

  /// Where it listens: the configured host, with the port actually bound.
  const Address& bound() const { return bound_; }

  struct Impl;

 private:
  Server(std::unique_ptr<Impl> impl, Address bound);
  std::unique_ptr<Impl> impl_;
  Address bound_;
};

/// `scrape` in Prometheus' text format, as the server sends it (prometheus-cpp's serializer).
std::string to_text(const Scrape& scrape);

}  // namespace troupe::runtime::metrics
