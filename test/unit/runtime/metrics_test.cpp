#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "runtime/metrics/registry.hpp"
#include "runtime/metrics/server.hpp"
#include "test/support/scrape.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::runtime;
using namespace troupe::runtime::metrics;

namespace {

/// A socket listening on 127.0.0.1 at a free port, for as long as it lives.
struct Listening {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  uint16_t port = 0;
  Listening() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~Listening() { ::close(fd); }
};

std::shared_ptr<Registry> sample_registry() {
  auto registry = std::make_shared<Registry>();
  registry->add([](Scrape& s) {
    s.counter("troupe_things_total", "Things done.", 3, {{"kind", "a"}});
    s.gauge("troupe_queue_depth", "Things waiting.", 2);
    s.counter("troupe_things_total", "Things done.", 4, {{"kind", "b"}});
  });
  return registry;
}

}  // namespace

TEST_SUITE("runtime.metrics") {
  TEST_CASE("samples of one name join one family, families in the order first written") {
    const Scrape scrape = sample_registry()->collect();
    REQUIRE(scrape.families().size() == 3);  // and troupe_metrics_collector_failures
    CHECK(scrape.families()[0].name == "troupe_things_total");
    CHECK(scrape.families()[0].type == MetricType::COUNTER);
    REQUIRE(scrape.families()[0].samples.size() == 2);
    CHECK(scrape.families()[0].samples[1].labels == Labels{{"kind", "b"}});
    CHECK(scrape.families()[1].name == "troupe_queue_depth");
    const auto text = to_text(scrape);
    CHECK(test::sample(text, "troupe_things_total{kind=\"a\"}") == 3);
    CHECK(test::sample(text, "troupe_things_total{kind=\"b\"}") == 4);
    CHECK(test::sample(text, "troupe_queue_depth") == 2);
    CHECK(test::sample(text, "troupe_metrics_collector_failures") == 0);
  }

  TEST_CASE("a collector that throws loses its own samples only, and the scrape counts it") {
    Registry registry;
    registry.add([](Scrape& s) { s.gauge("troupe_before", "Written before.", 1); });
    registry.add([](Scrape& s) {
      s.gauge("troupe_half", "Written, then the collector failed.", 1);
      throw std::runtime_error("the part did not answer");
    });
    registry.add([](Scrape& s) { s.gauge("troupe_after", "Written after.", 1); });
    const Scrape scrape = registry.collect();
    CHECK(scrape.find("troupe_before"));
    CHECK_FALSE(scrape.find("troupe_half"));
    CHECK(scrape.find("troupe_after"));
    CHECK(test::sample(to_text(scrape), "troupe_metrics_collector_failures") == 1);
  }

  TEST_CASE("a histogram in seconds has its bounds divided exactly, its +Inf bucket, count and sum") {
    const uint64_t bounds_us[] = {100, 250'000, 1'000'000};
    meters::Histogram h(bounds_us);
    for (uint64_t us : {50, 100, 200'000, 2'000'000}) h.observe(us);
    Scrape scrape;
    scrape.histogram("troupe_wait_seconds", "Waits.", h.snapshot(), 1e6);
    const auto text = to_text(scrape);
    INFO(text);
    CHECK(test::sample(text, "troupe_wait_seconds_bucket{le=\"0.0001\"}") == 2);
    CHECK(test::sample(text, "troupe_wait_seconds_bucket{le=\"0.25\"}") == 3);
    CHECK(test::sample(text, "troupe_wait_seconds_bucket{le=\"1\"}") == 3);
    CHECK(test::sample(text, "troupe_wait_seconds_bucket{le=\"+Inf\"}") == 4);
    CHECK(test::sample(text, "troupe_wait_seconds_count") == 4);
    CHECK(test::sample(text, "troupe_wait_seconds_sum") == doctest::Approx(2.20015));
    CHECK(text.find("# TYPE troupe_wait_seconds histogram") != std::string::npos);
  }

  TEST_CASE("the server answers GET /metrics on a free port with what promtool accepts") {
    auto server = Server::start(Address{"127.0.0.1", 0}, sample_registry());
    REQUIRE_MESSAGE(server, test::why(server));
    const uint16_t port = (*server)->bound().port;
    CHECK(port != 0);
    CHECK((*server)->bound().host == "127.0.0.1");
    const auto response = test::http_get(port, "/metrics");
    REQUIRE_MESSAGE(response.status == 200, response.headers);
    CHECK(test::sample(response.body, "troupe_things_total{kind=\"b\"}") == 4);
    const auto verdict = test::promtool_check(response.body);
    CHECK_MESSAGE(verdict.exit_code == 0, verdict.output, "\n", response.body);
    CHECK(test::http_get(port, "/elsewhere").status == 404);
  }

  TEST_CASE("an address in use is refused, naming it and what to do") {
    Listening taken;
    auto server = Server::start(Address{"127.0.0.1", taken.port}, sample_registry());
    REQUIRE_FALSE(server);
    CHECK(server.error().code == Errc::UNAVAILABLE);
    CHECK(server.error().message ==
          "cannot serve metrics on 127.0.0.1:" + std::to_string(taken.port) +
              ": the address is in use, or not one of this machine's; choose another address with the node's "
              "`metrics` key in the config");
  }

  TEST_CASE("a host that does not resolve is refused") {
    auto server = Server::start(Address{"no-such-host.invalid", 0}, sample_registry());
    REQUIRE_FALSE(server);
    CHECK(server.error().code == Errc::UNAVAILABLE);
    CHECK(server.error().message.find("'no-such-host.invalid' is not an address of this machine's") !=
          std::string::npos);
  }
}
