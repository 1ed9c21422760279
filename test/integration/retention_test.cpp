// Retention against a real scheduler and worker: the cluster's `retention` purges closed
// workflows on its own, ClientService.purge does it by hand, and neither touches an open one.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "runtime/client/gateway_client.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/gateway.hpp"

using namespace std::chrono_literals;
namespace client = troupe::client;
using troupe::test::Cluster;
using troupe::test::gateway;
using troupe::test::ClusterSpec;
using troupe::test::eventually;

namespace {

constexpr const char* quick =
    R"({"name": "quick", "tasks": [{"name": "a", "handler": "noop"}]})";
constexpr const char* slow =
    R"({"name": "slow", "tasks": [{"name": "a", "handler": "sleep", "input": {"duration": "10m"}}]})";

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// True once the scheduler no longer knows `id`.
bool unknown(client::GatewayClient& gateway, const std::string& id) {
  auto status = gateway.describe(id);
  return !status && status.error().code == troupe::Errc::NOT_FOUND;
}

/// Starts `definition` as `id` and, for a quick one, waits for its end.
void run(client::GatewayClient& gateway, const std::string& id, const char* definition, bool wait) {
  auto started = gateway.start(client::StartRequest{definition, "", id, ""});
  REQUIRE_MESSAGE(started, started.error().message);
  if (!wait) return;
  auto result = gateway.result(id, 30s);
  REQUIRE_MESSAGE(result, result.error().message);
  REQUIRE(result->state == "SUCCESS");
}

}  // namespace

TEST_SUITE("integration.retention") {
  TEST_CASE("the cluster's retention purges closed workflows and keeps open ones") {
    ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    spec.retention = "2s";
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = gateway(cluster.port);
    run(*client, "done-1", quick, true);
    run(*client, "open-1", slow, false);
    // Purged within the retention plus one check interval (1 s for a 2 s retention).
    CHECK(eventually([&] { return unknown(*client, "done-1"); }, 15s));
    auto open = client->describe("open-1");
    REQUIRE_MESSAGE(open, open.error().message);
    CHECK(open->state == "RUNNING");
    // The id of a purged workflow is free again.
    run(*client, "done-1", quick, true);
  }

  TEST_CASE("purge removes the workflows closed before a time, and only those") {
    ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = gateway(cluster.port);
    run(*client, "old-1", quick, true);
    run(*client, "old-2", quick, true);
    const int64_t between = now_us();
    // Closed after `between`, whatever the clock's resolution.
    REQUIRE(eventually([&] { return now_us() > between; }, 1s));
    run(*client, "new-1", quick, true);
    run(*client, "open-1", slow, false);

    auto purged = client->purge(between);
    REQUIRE_MESSAGE(purged, purged.error().message);
    CHECK(*purged == 2);
    CHECK(unknown(*client, "old-1"));
    CHECK(unknown(*client, "old-2"));
    CHECK(client->describe("new-1"));
    CHECK(client->describe("open-1"));
    auto result = client->result("old-1", 1s);
    CHECK((!result && result.error().code == troupe::Errc::NOT_FOUND));

    // Everything closed: the open workflow stays.
    purged = client->purge(now_us());
    REQUIRE_MESSAGE(purged, purged.error().message);
    CHECK(*purged == 1);
    CHECK(client->describe("open-1"));

    // Durable: a restarted scheduler does not know them either.
    cluster.start("scheduler");
    auto again = gateway(cluster.port);
    CHECK(eventually([&] { return unknown(*again, "new-1"); }, 10s));
    CHECK(again->describe("open-1"));
  }

  TEST_CASE("troupe purge --before deletes what closed before then and says how many") {
    ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = gateway(cluster.port);
    run(*client, "done-1", quick, true);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    using troupe::test::contains;
    using troupe::test::troupe_cli;

    auto none = troupe_cli({"purge", "--before", "2000-01-01", "--address", address});
    CHECK_MESSAGE(none.code == 0, none.output);
    CHECK(contains(none.output, "purged 0 workflows closed before 2000-01-01 00:00:00 UTC"));
    CHECK(client->describe("done-1"));

    auto all = troupe_cli({"purge", "--before", "0s", "--json", "--address", address});
    CHECK_MESSAGE(all.code == 0, all.output);
    CHECK(contains(all.output, "{\"purged\":1,"));
    CHECK(unknown(*client, "done-1"));

    auto missing = troupe_cli({"purge", "--address", address});
    CHECK(missing.code == 2);
    CHECK(contains(missing.output, "purge needs --before"));
  }
}
