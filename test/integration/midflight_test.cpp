// An operator's retry, skip and update of a task while its workflow runs, end to end: real
// troupe-node processes ($TROUPE_NODE), shell tasks whose behaviour files in the test's
// directory switch, the C++ GatewayClient, and a scheduler killed with SIGKILL mid-way.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "runtime/client/gateway_client.hpp"
#include "test/support/cluster.hpp"
#include "test/support/gateway.hpp"

using namespace std::chrono_literals;
namespace client = troupe::client;
using troupe::test::Cluster;
using troupe::test::gateway;
using troupe::test::ClusterSpec;
using troupe::test::eventually;

namespace {

void touch(const std::string& path) {
  std::ofstream out(path);
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

/// One worker serving the default task list; a lease long enough to outlast a scheduler restart.
std::unique_ptr<Cluster> start_cluster() {
  ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt}};
  spec.worker_lease = "10s";
  spec.recovery_window = "10s";
  auto cluster = std::make_unique<Cluster>(std::move(spec));
  cluster->start("scheduler");
  cluster->start("worker-a");
  return cluster;
}

/// A shell task's body: `script` run by sh, with the test's directory as $D.
std::string shell(const std::string& dir, const std::string& script) {
  return R"("shell": {"command": ["sh", "-c", ")" + script + R"("], "env": {"D": ")" + dir + R"("}})";
}

/// fetch -> {left, right} -> join. left fails (exit 3) until $D/fixed exists, and then waits for
/// $D/release-left; right waits for $D/release-right; join writes $D/joined.
std::string diamond(const std::string& dir) {
  return R"({"name": "diamond", "tasks": [
    {"name": "fetch", )" + shell(dir, "true") + R"(},
    {"name": "left", "dependsOn": ["fetch"], )" +
         shell(dir, "test -f $D/fixed || exit 3; while [ ! -f $D/release-left ]; do sleep 0.05; done") + R"(},
    {"name": "right", "dependsOn": ["fetch"], )" +
         shell(dir, "while [ ! -f $D/release-right ]; do sleep 0.05; done") + R"(},
    {"name": "join", "dependsOn": ["left", "right"], )" + shell(dir, "echo joined > $D/joined") + R"(}]})";
}

/// The task's status as the scheduler describes it; an empty one if it cannot.
troupe::TaskStatus task_status(client::GatewayClient& api, const std::string& id, const std::string& task) {
  auto status = api.describe(id);
  if (!status) return {};
  for (const auto& t : status->tasks) {
    if (t.name == task) return t;
  }
  return {};
}

/// Waits (20 s at most) for the task to reach `state`.
bool task_reaches(client::GatewayClient& api, const std::string& id, const std::string& task,
                  const std::string& state) {
  return eventually([&] { return task_status(api, id, task).state == state; }, 20s);
}

std::string result_of(client::GatewayClient& api, const std::string& id) {
  auto r = api.result(id, 60s);
  if (!r) return "error: " + r.error().message;
  return r->detail.empty() ? r->state : r->state + ": " + r->detail;
}

}  // namespace

TEST_SUITE("integration.midflight") {
  TEST_CASE("retry: a failed branch fixed and retried while the other runs; the join runs once it succeeds") {
    auto cluster = start_cluster();
    const std::string d = cluster->dir.path();
    auto api = gateway(cluster->port);
    REQUIRE(api->start({diamond(d), "", "retried", ""}));
    REQUIRE(task_reaches(*api, "retried", "left", "FAILURE"));
    REQUIRE(task_status(*api, "retried", "right").state == "RUNNING");
    CHECK(task_status(*api, "retried", "left").failure == "ExitCode:3");

    auto refused = api->retry_task("retried", "right");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == troupe::Errc::NOT_ALLOWED_IN_STATE);
    CHECK(refused.error().message.find("has not ended") != std::string::npos);
    auto blocked = api->retry_task("retried", "join");
    REQUIRE_FALSE(blocked);
    CHECK(blocked.error().message.find("has not run because 'left' failed") != std::string::npos);

    touch(d + "/fixed");
    auto retried = api->retry_task("retried", "left");
    REQUIRE_MESSAGE(retried, retried.error().message);
    CHECK(retried->workflow_state == "RUNNING");
    CHECK(retried->task_state == "SUBMITTED");
    CHECK(retried->workflow_state_code == troupe::WorkflowStateCode::RUNNING);
    CHECK(retried->task_state_code == troupe::TaskStateCode::SUBMITTED);
    REQUIRE(task_reaches(*api, "retried", "left", "RUNNING"));
    CHECK(task_status(*api, "retried", "left").attempt == 2);
    touch(d + "/release-left");
    REQUIRE(task_reaches(*api, "retried", "left", "SUCCESS"));
    CHECK(task_status(*api, "retried", "join").state == "WAITING");  // right still runs
    touch(d + "/release-right");
    CHECK(result_of(*api, "retried") == "SUCCESS");
    CHECK(task_status(*api, "retried", "join").state == "SUCCESS");
    CHECK(std::ifstream(d + "/joined").good());
  }

  TEST_CASE("skip: a failed branch forced to success, and the join runs as if it had succeeded") {
    auto cluster = start_cluster();
    const std::string d = cluster->dir.path();
    auto api = gateway(cluster->port);
    REQUIRE(api->start({diamond(d), "", "skipped", ""}));
    REQUIRE(task_reaches(*api, "skipped", "left", "FAILURE"));
    auto running = api->skip_task("skipped", "right", "impatient");
    REQUIRE_FALSE(running);
    CHECK(running.error().message.find("a task on a worker cannot be skipped") != std::string::npos);

    auto skipped = api->skip_task("skipped", "left", "the data is already there");
    REQUIRE_MESSAGE(skipped, skipped.error().message);
    CHECK(skipped->task_state == "FORCED_SUCCESS");
    CHECK(skipped->task_state_code == troupe::TaskStateCode::FORCED_SUCCESS);
    CHECK(task_status(*api, "skipped", "left").state == "FORCED_SUCCESS");
    touch(d + "/release-right");
    CHECK(result_of(*api, "skipped") == "SUCCESS");
    CHECK(std::ifstream(d + "/joined").good());
  }

  TEST_CASE("update: a task waiting for a task list nobody serves moves to one that is served") {
    auto cluster = start_cluster();
    const std::string d = cluster->dir.path();
    auto api = gateway(cluster->port);
    REQUIRE(api->start({R"({"name": "moved", "tasks": [
        {"name": "t", "taskList": "gpu", )" + shell(d, "echo ran > $D/ran") + R"(}]})", "", "moved", ""}));
    REQUIRE(task_reaches(*api, "moved", "t", "DISPATCHING"));

    client::TaskUpdate bad;
    bad.task_list = "no/slash";
    auto refused = api->update_task("moved", "t", bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == troupe::Errc::INVALID_ARGUMENT);
    CHECK(refused.error().message.find("taskList: the task list 'no/slash' may not contain '/'") != std::string::npos);

    client::TaskUpdate served;
    served.task_list = "default";
    auto updated = api->update_task("moved", "t", served);
    REQUIRE_MESSAGE(updated, updated.error().message);
    CHECK(updated->task_state == "DISPATCHING");
    CHECK(result_of(*api, "moved") == "SUCCESS");
    CHECK(std::ifstream(d + "/ran").good());
  }

  TEST_CASE("update: a running attempt keeps its timeout; the next attempt has the new one") {
    auto cluster = start_cluster();
    const std::string d = cluster->dir.path();
    auto api = gateway(cluster->port);
    // Attempt 1 waits for $D/go and fails; attempt 2 would sleep for a minute.
    REQUIRE(api->start({R"({"name": "timed", "tasks": [{"name": "t", )" +
                            shell(d, "if [ $TROUPE_ATTEMPT = 1 ]; then while [ ! -f $D/go ]; do sleep 0.05; done; "
                                     "exit 1; fi; sleep 60") +
                            R"(, "timeouts": {"scheduleToClose": "5m"},
                            "retry": {"initialInterval": "100ms", "maximumAttempts": 2}}]})",
                        "", "timed", ""}));
    REQUIRE(task_reaches(*api, "timed", "t", "RUNNING"));
    client::TaskUpdate tight;
    tight.start_to_close = "1s";
    auto updated = api->update_task("timed", "t", tight);
    REQUIRE_MESSAGE(updated, updated.error().message);
    CHECK(updated->task_state == "RUNNING");
    // The point is that attempt 1 outlives the new timeout: it must run on past it.
    std::this_thread::sleep_for(1500ms);
    CHECK(task_status(*api, "timed", "t").state == "RUNNING");
    CHECK(task_status(*api, "timed", "t").attempt == 1);
    touch(d + "/go");
    CHECK(result_of(*api, "timed").starts_with("FAILED: task 't' failed: Timeout:startToClose"));
    CHECK(task_status(*api, "timed", "t").attempt == 2);
  }

  TEST_CASE("a scheduler killed after a retry and an update carries on with both") {
    auto cluster = start_cluster();
    const std::string d = cluster->dir.path();
    auto api = gateway(cluster->port);
    REQUIRE(api->start({diamond(d), "", "survivor", ""}));
    REQUIRE(task_reaches(*api, "survivor", "left", "FAILURE"));
    touch(d + "/fixed");
    REQUIRE(api->retry_task("survivor", "left"));
    REQUIRE(task_reaches(*api, "survivor", "left", "RUNNING"));  // attempt 2 waits for its release
    client::TaskUpdate urgent;
    urgent.priority = 9;
    urgent.start_to_close = "5m";
    urgent.schedule_to_start = "5m";
    auto updated = api->update_task("survivor", "join", urgent);
    REQUIRE_MESSAGE(updated, updated.error().message);
    CHECK(updated->task_state == "WAITING");

    api.reset();
    cluster->nodes["scheduler"]->kill(SIGKILL);
    cluster->nodes["scheduler"]->wait();
    cluster->start("scheduler");
    api = gateway(cluster->port);
    touch(d + "/release-left");
    touch(d + "/release-right");
    CHECK(result_of(*api, "survivor") == "SUCCESS");
    // The worker kept attempt 2 through the restart: no attempt was used up by it.
    CHECK(task_status(*api, "survivor", "left").attempt == 2);
    CHECK(task_status(*api, "survivor", "join").state == "SUCCESS");
    CHECK(std::ifstream(d + "/joined").good());

    // Refused for good reasons after the restart too.
    auto done = api->retry_task("survivor", "left");
    REQUIRE_FALSE(done);
    CHECK(done.error().message.find("succeeded") != std::string::npos);
  }
}
