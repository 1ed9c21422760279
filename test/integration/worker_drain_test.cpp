// Operators drain workers (troupe worker drain / undrain) and workers whose attempts keep failing
// are quarantined (troupe worker forgive), against real nodes: what runs finishes or moves to
// another worker under the same attempt, nothing new starts on the worker, the worker process
// stops when the drain asks, and the drain outlives the worker's restart.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/workflows.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::shell_task;
using troupe::test::workflow_of;

namespace {

namespace fs = std::filesystem;

/// `troupe ARGS... --address` the cluster's scheduler.
troupe::test::CliRun cli(const Cluster& cluster, std::vector<std::string> args) {
  args.push_back("--address");
  args.push_back("127.0.0.1:" + std::to_string(cluster.port));
  return troupe::test::troupe_cli(args);
}

/// Whether `troupe worker NAME --json` says `"key":"value"`.
bool worker_says(const Cluster& cluster, const std::string& name, const std::string& key, const std::string& value) {
  return contains(cli(cluster, {"worker", name, "--json"}).output, "\"" + key + "\":\"" + value + "\"");
}

}  // namespace

TEST_SUITE("integration.worker_drain") {
  TEST_CASE("an immediate drain moves what runs to another worker under the same attempt; undrain gives it tasks again") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}, {"worker-b", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    const std::string started = cluster.dir / "started";
    // No retries: only a kept attempt lets it succeed after the interruption.
    const std::string nap = "[ -e " + started + " ] && exit 0; touch " + started + "; exec sleep 60";
    REQUIRE(client->start("long", workflow_of("long", shell_task("nap", nap))) == "long");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));

    auto drained = cli(cluster, {"worker", "drain", "worker-a", "--immediate"});
    REQUIRE_MESSAGE(drained.code == 0, drained.output);
    CHECK_MESSAGE(contains(drained.output, "worker-a: DRAIN"), drained.output);
    REQUIRE(eventually([&] { return worker_says(cluster, "worker-a", "status", "DRAINED"); }, 20s));
    // Interrupted, not failed: it waits for a worker that takes tasks, and says so.
    std::string waiting;
    CHECK_MESSAGE(eventually([&] {
                    waiting = cli(cluster, {"status", "long"}).output;
                    return contains(waiting, "DISPATCHING") &&
                           contains(waiting, "takes tasks now (1 draining/quarantined/unhealthy)");
                  }, 20s),
                  waiting);

    cluster.start("worker-b");
    CHECK(client->result("long", 30s) == "SUCCESS");
    CHECK(fs::exists(cluster.logs("worker-a") + "/long/nap.1.1.log"));
    CHECK(fs::exists(cluster.logs("worker-b") + "/long/nap.1.2.log"));  // attempt 1, its second dispatch

    // worker-b is drained too: nothing can run now.
    REQUIRE(cli(cluster, {"worker", "drain", "worker-b"}).code == 0);
    REQUIRE(eventually([&] { return worker_says(cluster, "worker-b", "status", "DRAINED"); }, 20s));
    REQUIRE(client->start("after", workflow_of("after", shell_task("one", "true"))) == "after");
    auto listed = cli(cluster, {"workers"});
    CHECK_MESSAGE(contains(listed.output, "DRAINED"), listed.output);
    // It waits, saying why, and nothing of it ran.
    std::string after_waits;
    CHECK_MESSAGE(eventually([&] {
                    after_waits = cli(cluster, {"status", "after"}).output;
                    return contains(after_waits, "takes tasks now (2 draining/quarantined/unhealthy)");
                  }, 20s),
                  after_waits);
    CHECK_FALSE(fs::exists(cluster.logs("worker-a") + "/after"));
    CHECK_FALSE(fs::exists(cluster.logs("worker-b") + "/after"));
    auto undrained = cli(cluster, {"worker", "undrain", "worker-a"});
    REQUIRE_MESSAGE(undrained.code == 0, undrained.output);
    CHECK_MESSAGE(contains(undrained.output, "worker-a: STARTED"), undrained.output);
    CHECK(client->result("after", 30s) == "SUCCESS");
    CHECK(fs::exists(cluster.logs("worker-a") + "/after/one.1.1.log"));

    auto unknown = cli(cluster, {"worker", "drain", "worker-z"});
    CHECK(unknown.code != 0);
    CHECK_MESSAGE(contains(unknown.output, "no worker named 'worker-z' has registered; known workers: worker-a, worker-b"),
                  unknown.output);
  }

  TEST_CASE("an eventual drain with --exit lets what runs finish, stops the worker, and outlives its restart") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}, {"worker-b", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    const std::string started = cluster.dir / "started", go = cluster.dir / "go";
    const std::string wait = "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.05; done";
    REQUIRE(client->start("slow", workflow_of("slow", shell_task("wait", wait))) == "slow");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
    auto drained = cli(cluster, {"worker", "drain", "worker-a", "--exit"});
    REQUIRE_MESSAGE(drained.code == 0, drained.output);
    CHECK_MESSAGE(contains(drained.output, "worker-a: DRAINING (eventual drain, stops when drained)"), drained.output);
    cluster.start("worker-b");
    REQUIRE(client->start("new", workflow_of("new", shell_task("one", "true"))) == "new");
    CHECK(client->result("new", 30s) == "SUCCESS");
    CHECK(fs::exists(cluster.logs("worker-b") + "/new/one.1.1.log"));  // not on the draining worker
    CHECK(worker_says(cluster, "worker-a", "status", "DRAINING"));

    std::ofstream(go).put('\n');
    CHECK(client->result("slow", 30s) == "SUCCESS");
    CHECK(fs::exists(cluster.logs("worker-a") + "/slow/wait.1.1.log"));  // finished where it ran
    auto& worker_a = *cluster.nodes["worker-a"];
    const int status = worker_a.wait();
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    REQUIRE(eventually([&] { return worker_says(cluster, "worker-a", "status", "STOPPED"); }, 20s));
    CHECK(worker_says(cluster, "worker-a", "standing", "DRAINED"));

    // Started again it stays drained: the drain is the worker's, not one process's.
    cluster.nodes.erase("worker-a");
    cluster.start("worker-a");
    REQUIRE(eventually([&] { return worker_says(cluster, "worker-a", "health", "HEALTHY"); }, 20s));
    CHECK(worker_says(cluster, "worker-a", "status", "DRAINED"));
    REQUIRE(cli(cluster, {"worker", "drain", "worker-b"}).code == 0);
    REQUIRE(client->start("later", workflow_of("later", shell_task("one", "true"))) == "later");
    REQUIRE(cli(cluster, {"worker", "undrain", "worker-a"}).code == 0);
    CHECK(client->result("later", 30s) == "SUCCESS");
    CHECK(fs::exists(cluster.logs("worker-a") + "/later/one.1.1.log"));
  }

  TEST_CASE("a worker whose attempts of different tasks keep failing is quarantined until forgiven") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 1}}, std::nullopt}};
    spec.quarantine_failures = "2";
    spec.quarantine_backoff = "10m";
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    for (const std::string id : {"bad-1", "bad-2"}) {
      REQUIRE(client->start(id, workflow_of(id, shell_task("boom", "exit 3"))) == id);
      CHECK(contains(client->result(id, 30s), "FAILED: task 'boom' failed: ExitCode:3"));
    }
    REQUIRE(eventually([&] { return worker_says(cluster, "worker-a", "status", "QUARANTINED"); }, 20s));
    auto shown = cli(cluster, {"worker", "worker-a"});
    CHECK_MESSAGE(contains(shown.output, "bad-2/boom  ExitCode:3"), shown.output);
    CHECK_MESSAGE(contains(shown.output, "quarantine 1"), shown.output);
    REQUIRE(client->start("good", workflow_of("good", shell_task("one", "true"))) == "good");
    std::string waiting;
    CHECK_MESSAGE(eventually([&] {
                    waiting = cli(cluster, {"status", "good"}).output;
                    return contains(waiting, "DISPATCHING") &&
                           contains(waiting, "takes tasks now (1 draining/quarantined/unhealthy)");
                  }, 20s),
                  waiting);
    auto forgiven = cli(cluster, {"worker", "forgive", "worker-a"});
    REQUIRE_MESSAGE(forgiven.code == 0, forgiven.output);
    CHECK_MESSAGE(contains(forgiven.output, "worker-a: STARTED"), forgiven.output);
    CHECK(client->result("good", 30s) == "SUCCESS");
    CHECK(worker_says(cluster, "worker-a", "standing", "ACTIVE"));
  }

  TEST_CASE("troupe workers lists each worker in text and JSON; a quarantine ends by itself once its backoff runs out") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    spec.quarantine_failures = "1";
    spec.quarantine_backoff = "2s";
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    REQUIRE(eventually([&] { return worker_says(cluster, "worker-a", "health", "HEALTHY"); }, 20s));

    auto listed = cli(cluster, {"workers", "--json"});
    REQUIRE_MESSAGE(listed.code == 0, listed.output);
    for (const std::string& field :
         {std::string("\"name\":\"worker-a\""), std::string("\"workerId\":\"wkr-"), std::string("\"status\":\"STARTED\""),
          "\"pid\":" + std::to_string(cluster.nodes["worker-a"]->pid()),
          std::string("\"taskLists\":[{\"name\":\"default\",\"slots\":2,\"used\":0}]"), std::string("\"running\":[]")}) {
      CHECK_MESSAGE(contains(listed.output, field), field << " in " << listed.output);
    }
    auto table = cli(cluster, {"workers"});
    CHECK_MESSAGE(contains(table.output, "STARTED"), table.output);
    CHECK_MESSAGE(contains(table.output, "default 0/2"), table.output);

    REQUIRE(client->start("bad", workflow_of("bad", shell_task("boom", "exit 3"))) == "bad");
    CHECK(contains(client->result("bad", 30s), "ExitCode:3"));
    REQUIRE(eventually([&] { return worker_says(cluster, "worker-a", "status", "QUARANTINED"); }, 20s));
    auto shown = cli(cluster, {"worker", "worker-a", "--json"});
    CHECK_MESSAGE(contains(shown.output, "\"reason\":\"ExitCode:3\""), shown.output);
    CHECK_MESSAGE(contains(shown.output, "\"quarantines\":1"), shown.output);
    // Nobody forgives it: the backoff (2 s) ends the quarantine, and it takes work again.
    REQUIRE(eventually([&] { return worker_says(cluster, "worker-a", "status", "STARTED"); }, 20s));
    REQUIRE(client->start("good", workflow_of("good", shell_task("one", "true"))) == "good");
    CHECK(client->result("good", 30s) == "SUCCESS");
  }
}
