// Where tasks go on a real cluster, as a user sees it: a retry runs on another worker than the
// one its last attempt failed on, and `troupe status` says why a task still waits for one.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/workflows.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::shell_task;
using troupe::test::workflow_of;

namespace {

/// Fails (exit 3) on worker-a and succeeds elsewhere: the progress file a task is given lies in
/// its worker's log directory, so its path names the worker.
constexpr const char* fails_on_worker_a = "case $TROUPE_PROGRESS_FILE in */logs/worker-a/*) exit 3;; esac";

/// `troupe status ID [--json]` against `cluster`: what it printed.
std::string status_of(const Cluster& cluster, const std::string& id, bool json = false) {
  std::vector<std::string> args = {"status", id, "--address", "127.0.0.1:" + std::to_string(cluster.port)};
  if (json) args.push_back("--json");
  auto run = troupe::test::troupe_cli(args);
  CHECK_MESSAGE(run.code == 0, run.output);
  return run.output;
}

/// Polls `troupe status ID` until it prints `text` (true), or 20 s pass; `seen` keeps the last
/// output, for the failure message.
bool status_says(const Cluster& cluster, const std::string& id, const std::string& text, std::string& seen) {
  return eventually([&] { return contains(seen = status_of(cluster, id), text); }, std::chrono::seconds(20));
}

}  // namespace

TEST_SUITE("integration.retry_elsewhere") {
  TEST_CASE("a task that fails on one worker succeeds on its second attempt on the other") {
    ClusterSpec spec;
    // worker-a has the most free slots, so it gets the first attempt, and would get the second
    // too if a retry did not avoid it. Each worker also serves a list of its own, to prove it
    // has joined before the test starts.
    spec.workers = {{"worker-a", {{"default", 3}, {"only-a", 1}}, std::nullopt},
                    {"worker-b", {{"default", 1}, {"only-b", 1}}, std::nullopt}};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    cluster.start("worker-b");
    auto client = troupe::test::connect(cluster.port);
    REQUIRE(client->start("probe", workflow_of("probe", shell_task("a", "true", R"("taskList": "only-a")") + ", " +
                                                            shell_task("b", "true", R"("taskList": "only-b")"))) ==
            "probe");
    REQUIRE(client->result("probe", 60s) == "SUCCESS");

    const std::string retried = R"("retry": {"initialInterval": "100ms", "maximumAttempts": 2})";
    REQUIRE(client->start("flaky", workflow_of("flaky", shell_task("t", fails_on_worker_a, retried))) == "flaky");
    CHECK(client->result("flaky", 60s) == "SUCCESS");
    // Logs are TASK.ATTEMPT.DISPATCH.log in WORKFLOW/ of the worker's log directory.
    CHECK(fs::exists(cluster.logs("worker-a") + "/flaky/t.1.1.log"));
    CHECK(fs::exists(cluster.logs("worker-b") + "/flaky/t.2.2.log"));
    CHECK_FALSE(fs::exists(cluster.logs("worker-a") + "/flaky/t.2.2.log"));
  }
}

TEST_SUITE("integration.wait_reasons") {
  TEST_CASE("troupe status says no live worker serves the task list a waiting task needs") {
    Cluster cluster;  // its workers serve the default task list only
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    REQUIRE(client->start("needs-gpu", workflow_of("needs-gpu", shell_task("train", "true", R"("taskList": "gpu")"))) ==
            "needs-gpu");
    std::string seen;
    CHECK_MESSAGE(status_says(cluster, "needs-gpu", "no live worker serves task list 'gpu'", seen), seen);
    CHECK_MESSAGE(contains(seen, "DISPATCHING"), seen);
    const std::string json = status_of(cluster, "needs-gpu", true);
    CHECK_MESSAGE(contains(json, R"("waitReason":"no live worker serves task list 'gpu'")"), json);
  }

  TEST_CASE("troupe status says the only worker of a task list is busy while a second task waits for its slot") {
    ClusterSpec spec;
    spec.workers = {{"worker-a", {{"x", 1}}, std::nullopt}};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    const std::string go = cluster.dir / "go";
    const std::string hold = "while [ ! -e " + go + " ]; do sleep 0.05; done";
    const std::string on_x = R"("taskList": "x")";
    REQUIRE(client->start("two", workflow_of("two", shell_task("first", hold, on_x) + ", " +
                                                        shell_task("second", hold, on_x))) == "two");
    std::string seen;
    CHECK_MESSAGE(status_says(cluster, "two", "the only worker of 'x' is busy", seen), seen);
    CHECK_MESSAGE(contains(seen, "RUNNING"), seen);
    std::ofstream(go).put('\n');
    CHECK(client->result("two", 60s) == "SUCCESS");
    CHECK_FALSE(contains(status_of(cluster, "two"), "busy"));
  }
}
