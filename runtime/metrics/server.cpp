// Server over prometheus-cpp: a Collectable that runs the registry at each scrape and hands
// its families to the library, which formats them and serves them with civetweb.
#include "runtime/metrics/server.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <exception>
#include <limits>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

namespace troupe::runtime::metrics {
namespace {

std::vector<prometheus::ClientMetric::Label> to_labels(const Labels& labels) {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(labels.size());
  for (const auto& [name, value] : labels) out.push_back({name, value});
  return out;
}

prometheus::MetricFamily to_family(const Scrape::Family& family) {
  prometheus::MetricFamily out;
  out.name = family.name;
  out.help = family.help;
  switch (family.type) {
    case MetricType::COUNTER: out.type = prometheus::MetricType::Counter; break;
    case MetricType::GAUGE: out.type = prometheus::MetricType::Gauge; break;
    case MetricType::HISTOGRAM: out.type = prometheus::MetricType::Histogram; break;
  }
  for (const auto& sample : family.samples) {
    prometheus::ClientMetric metric;
    metric.label = to_labels(sample.labels);
    switch (family.type) {
      case MetricType::COUNTER: metric.counter.value = sample.value; break;
      case MetricType::GAUGE: metric.gauge.value = sample.value; break;
      case MetricType::HISTOGRAM: {
        metric.histogram.sample_count = sample.count;
        metric.histogram.sample_sum = sample.value;
        for (size_t i = 0; i < sample.upper_bounds.size(); ++i) {
          metric.histogram.bucket.push_back({sample.cumulative[i], sample.upper_bounds[i]});
        }
        // The serializer prints the buckets it is given: +Inf, which Prometheus requires, too.
        metric.histogram.bucket.push_back({sample.count, std::numeric_limits<double>::infinity()});
        break;
      }
    }
    out.metric.push_back(std::move(metric));
  }
  return out;
}

std::vector<prometheus::MetricFamily> to_families(const Scrape& scrape) {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(scrape.families().size());
  for (const auto& family : scrape.families()) out.push_back(to_family(family));
  return out;
}

/// The registry as prometheus-cpp collects it: Collect runs on a civetweb thread per scrape.
class RegistryCollectable final : public prometheus::Collectable {
 public:
  explicit RegistryCollectable(std::shared_ptr<const Registry> registry) : registry_(std::move(registry)) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return to_families(registry_->collect()); }

 private:
  std::shared_ptr<const Registry> registry_;
};

/// `address`'s host as a numeric address in civetweb's listening_ports syntax ("127.0.0.1:P",
/// "[::1]:P"): civetweb does not look names up itself. Empty when the name does not resolve.
std::string listening_port(const Address& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(address.host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return {};
  // IPv4 first, as a name that has both ("localhost") is most often meant.
  const addrinfo* pick = found;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  }
  char host[NI_MAXHOST] = {};
  const bool v6 = pick->ai_family == AF_INET6;
  const int named = ::getnameinfo(pick->ai_addr, pick->ai_addrlen, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(found);
  if (named != 0) return {};
  const std::string numeric = v6 ? "[" + std::string(host) + "]" : std::string(host);
  return numeric + ":" + std::to_string(address.port);
}

}  // namespace

struct Server::Impl {
  std::shared_ptr<RegistryCollectable> collectable;
  /// Declared last, so it stops (joining its threads) before what its scrapes use goes.
  std::unique_ptr<prometheus::Exposer> exposer;
};

Result<std::unique_ptr<Server>> Server::start(const Address& address, std::shared_ptr<const Registry> registry) {
  auto cannot = [&](const std::string& why) {
    return fail(Errc::UNAVAILABLE, "cannot serve metrics on " + address.to_string() + ": " + why +
                                       "; choose another address with the node's `metrics` key in the config");
  };
  const std::string port = listening_port(address);
  if (port.empty()) return cannot("'" + address.host + "' is not an address of this machine's");
  auto impl = std::make_unique<Impl>();
  impl->collectable = std::make_shared<RegistryCollectable>(std::move(registry));
  try {
    // Two threads: a scrape never waits for another one (Prometheus and a person with curl).
    impl->exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", port, "num_threads", "2", "request_timeout_ms", "10000"});
  } catch (const std::exception&) {
    // civetweb says only that it could not bind.
    return cannot("the address is in use, or not one of this machine's");
  }
  impl->exposer->RegisterCollectable(impl->collectable);
  const auto ports = impl->exposer->GetListeningPorts();
  Address bound = address;
  if (!ports.empty()) bound.port = static_cast<uint16_t>(ports.front());
  return std::unique_ptr<Server>(new Server(std::move(impl), std::move(bound)));
}

Server::Server(std::unique_ptr<Impl> impl, Address bound) : impl_(std::move(impl)), bound_(std::move(bound)) {}

Server::~Server() = default;

std::string to_text(const Scrape& scrape) { return prometheus::TextSerializer().Serialize(to_families(scrape)); }

}  // namespace troupe::runtime::metrics
