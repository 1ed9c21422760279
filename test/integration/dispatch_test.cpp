// Where tasks go on a real cluster, as a user sees it: a retry runs on another worker than the
// one its last attempt failed on.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "test/support/cluster.hpp"
#include "test/support/workflows.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::shell_task;
using troupe::test::workflow_of;

namespace {

/// Fails (exit 3) on worker-a and succeeds elsewhere: the progress file a task is given lies in
/// its worker's log directory, so its path names the worker.
constexpr const char* fails_on_worker_a = "case $TROUPE_PROGRESS_FILE in */logs/worker-a/*) exit 3;; esac";

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
