// TLS on a real cluster (troupe-node processes on 127.0.0.1, certificates made by `troupe
// certs`): workers and clients speak it with the scheduler, a client that does not, or that
// trusts another CA, is refused, and with require_client_certificates a client without a
// certificate signed by the cluster's CA is refused too.
#include <doctest/doctest.h>

#include <csignal>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/client/gateway_client.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using troupe::client::ConnectOptions;
using troupe::client::GatewayClient;
using troupe::client::TlsOptions;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::eventually;

namespace {

/// A TLS cluster of a scheduler and worker-a running, its certificates made by `troupe certs`.
struct TlsCluster {
  Cluster cluster;
  std::string certs = cluster.dir / "certs";

  explicit TlsCluster(bool require_client_certificates = false) : cluster(spec(require_client_certificates)) {
    auto made = troupe::test::troupe_cli({"certs", cluster.config});
    REQUIRE_MESSAGE(made.code == 0, made.output);
    cluster.start("scheduler");
    cluster.start("worker-a");
  }

  static ClusterSpec spec(bool require_client_certificates) {
    ClusterSpec s;
    s.plaintext = false;
    s.require_client_certificates = require_client_certificates;
    // worker-b is in the config (with a certificate) but started only by the test that needs it.
    s.workers = {{"worker-a", {{"default", 2}}, std::nullopt}, {"worker-b", {{"default", 2}}, std::nullopt}};
    return s;
  }

  ConnectOptions trusting(const std::string& ca, const std::string& certificate = {}) const {
    ConnectOptions options;
    options.tls = TlsOptions{ca, certificate.empty() ? "" : certificate + ".pem", certificate.empty() ? "" : certificate + ".key"};
    return options;
  }

  troupe::Result<std::unique_ptr<GatewayClient>> connect(const ConnectOptions& options) const {
    return GatewayClient::connect("127.0.0.1", cluster.port, options);
  }

  /// Connects as `options` say, retrying while the scheduler starts.
  std::unique_ptr<GatewayClient> connected(const ConnectOptions& options) const {
    std::unique_ptr<GatewayClient> client;
    REQUIRE(eventually([&] {
      auto c = connect(options);
      if (c) client = std::move(*c);
      return client != nullptr;
    }, 30s));
    return client;
  }
};

/// Runs workflow `id` of one task that touches `marker`, through `client`, to its end.
void run_one_task(GatewayClient& client, const std::string& id, const std::string& marker) {
  troupe::client::StartRequest start;
  start.workflow_id = id;
  start.definition_json =
      R"({"name": "one", "tasks": [{"name": "t", "shell": {"command": ["touch", ")" + marker + R"("]}}]})";
  REQUIRE(client.start(start).has_value());
  auto result = client.result(id, std::chrono::seconds(30));
  REQUIRE(result.has_value());
  CHECK(result->state == "SUCCESS");
}

}  // namespace

TEST_SUITE("integration.tls") {
  TEST_CASE("over TLS the worker registers and runs a workflow a client submitted; plaintext and another CA are refused") {
    TlsCluster c;
    auto client = c.connected(c.trusting(c.certs + "/ca.pem"));
    run_one_task(*client, "over-tls", c.cluster.dir / "ran");
    CHECK(fs::exists(c.cluster.dir / "ran"));

    // Plain Cap'n Proto on a TLS port: the handshake fails and the scheduler hangs up.
    ConnectOptions plain;
    auto refused = c.connect(plain);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == troupe::Errc::UNAVAILABLE);

    // The library never sends a token in clear beyond this machine: nothing is dialled.
    auto beyond = GatewayClient::connect("10.255.255.1", c.cluster.port, plain);
    REQUIRE_FALSE(beyond.has_value());
    CHECK(beyond.error().code == troupe::Errc::INVALID_ARGUMENT);
    CHECK(beyond.error().message.find("without TLS") != std::string::npos);

    // A CA of someone else's: the scheduler's certificate is not trusted.
    troupe::test::TempDir elsewhere;
    std::ofstream(elsewhere / "other.toml") << "[cluster]\nname = \"other\"\n\n[[node]]\nname = \"s\"\nroles = "
                                               "[\"scheduler\"]\nlisten = \"127.0.0.1:1\"\ndata_dir = \"d\"\n";
    auto other = troupe::test::troupe_cli({"certs", elsewhere / "other.toml"});
    REQUIRE_MESSAGE(other.code == 0, other.output);
    auto untrusted = c.connect(c.trusting(elsewhere / "certs/ca.pem"));
    REQUIRE_FALSE(untrusted.has_value());
    CHECK_MESSAGE(untrusted.error().message.find("certificate") != std::string::npos, untrusted.error().message);

    // The CLI takes TLS from the config, and says what to do when it speaks plaintext to TLS.
    auto listed = troupe::test::troupe_cli({"list", "--config", c.cluster.config});
    CHECK_MESSAGE(listed.code == 0, listed.output);
    CHECK(listed.output.find("over-tls") != std::string::npos);
    auto plain_cli = troupe::test::troupe_cli({"list", "--address", "127.0.0.1:" + std::to_string(c.cluster.port)});
    CHECK(plain_cli.code == 3);
    CHECK(plain_cli.output.find("pass --config CLUSTER.toml, or --tls-ca") != std::string::npos);
  }

  TEST_CASE("with require_client_certificates a client needs a certificate from the cluster's CA; the worker has one") {
    TlsCluster c(true);
    // The worker presents certs/worker-a.pem; a client presenting one of the CA's certificates
    // (here the scheduler's own, made by troupe certs) is admitted, and sees the worker.
    auto client = c.connected(c.trusting(c.certs + "/ca.pem", c.certs + "/scheduler"));
    run_one_task(*client, "mutual", c.cluster.dir / "ran");

    auto anonymous = c.connect(c.trusting(c.certs + "/ca.pem"));
    CHECK_FALSE(anonymous.has_value());
    auto listed = troupe::test::troupe_cli({"list", "--config", c.cluster.config, "--tls-certificate",
                                            c.certs + "/worker-a.pem", "--tls-key", c.certs + "/worker-a.key"});
    CHECK_MESSAGE(listed.code == 0, listed.output);
  }
}

TEST_SUITE("integration.tls") {
  TEST_CASE("with client certificates a worker can register only as the worker its certificate names") {
    TlsCluster c(true);
    c.cluster.start("worker-b");
    auto client = c.connected(c.trusting(c.certs + "/ca.pem", c.certs + "/scheduler"));
    uint64_t registrations = 0;
    REQUIRE(eventually([&] {
      auto listed = client->workers("worker-a");
      if (listed && !listed->empty()) registrations = (*listed)[0].registrations;
      return registrations > 0;
    }, 30s));
    // worker-a dies; someone holding worker-b's certificate (and the cluster token, were there
    // one) starts a worker called worker-a with it.
    c.cluster.nodes.at("worker-a")->kill(SIGKILL);
    c.cluster.nodes.at("worker-a")->wait();
    std::ifstream in(c.cluster.config);
    std::string config((std::istreambuf_iterator<char>(in)), {});
    const std::string name = "name = \"worker-a\"\n";
    const size_t at = config.find(name);
    REQUIRE(at != std::string::npos);
    config.insert(at + name.size(), "tls_certificate = \"certs/worker-b.pem\"\ntls_key = \"certs/worker-b.key\"\n");
    const std::string impostor_config = c.cluster.dir / "impostor.toml";
    std::ofstream(impostor_config) << config;
    auto impostor = troupe::test::start_node_with_output(impostor_config, "worker-a");
    std::string seen;
    auto refused = troupe::test::await_log_line(*impostor, "registration refused; retrying", 30s, &seen);
    REQUIRE_MESSAGE(refused, seen);
    CHECK(refused->field("error") ==
          "this connection's certificate names worker-b: it may register only as worker worker-b, not worker-a");
    impostor->kill(SIGKILL);
    impostor->wait();

    // The real worker-a, with its own certificate, registers again and runs tasks.
    c.cluster.start("worker-a");
    auto workers = [&] {
      auto listed = client->workers("worker-a");
      return listed && !listed->empty() && (*listed)[0].registrations == registrations + 1 &&
             (*listed)[0].status == "STARTED";
    };
    CHECK(eventually(workers, 30s));
  }
}
