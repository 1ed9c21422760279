// A worker stopped by a signal (a deploy, a host shutdown): it takes no new task from that moment,
// lets what runs finish within its shutdown grace, interrupts the rest, reports every outcome and
// exits 0; the scheduler runs the interrupted tasks again elsewhere under the same attempt.
#include <doctest/doctest.h>

#include <signal.h>
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

/// Reads `node`'s output until a line contains `text` (true) or `timeout` passes; what it read
/// is added to `seen`.
bool wait_for_line(troupe::test::ChildProcess& node, const std::string& text, std::chrono::milliseconds timeout,
                   std::string& seen) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    auto line = node.read_line(left);
    if (!line) return false;
    seen += *line + "\n";
    if (contains(*line, text)) return true;
  }
}

/// The scheduler, and worker-a started with its output readable; the client once connected.
std::unique_ptr<troupe::test::Client> start_with_worker_a(Cluster& cluster) {
  cluster.start("scheduler");
  cluster.nodes["worker-a"] = troupe::test::start_node_with_output(cluster.config, "worker-a");
  return troupe::test::connect(cluster.port);
}

}  // namespace

TEST_SUITE("integration.worker_shutdown") {
  TEST_CASE("SIGTERM on a worker: a task that ends within the grace succeeds there, one that does not runs again elsewhere under the same attempt, and nothing new starts there") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}, {"worker-b", {{"default", 2}}, std::nullopt}};
    spec.shutdown_grace = "3s";
    Cluster cluster(spec);
    auto client = start_with_worker_a(cluster);
    const std::string go = cluster.dir / "go";
    const std::string quick_started = cluster.dir / "quick.started";
    const std::string slow_started = cluster.dir / "slow.started";
    // No retries: only an attempt that is kept lets it succeed after its interruption.
    const std::string definition = workflow_of(
        "two", shell_task("quick", "touch " + quick_started + "; while [ ! -e " + go + " ]; do sleep 0.05; done") +
                   ", " + shell_task("slow", "[ -e " + go + " ] && exit 0; touch " + slow_started + "; exec sleep 60"));
    REQUIRE(client->start("two", definition) == "two");
    REQUIRE(eventually([&] { return fs::exists(quick_started) && fs::exists(slow_started); }, 20s));

    auto& worker_a = *cluster.nodes["worker-a"];
    const auto signalled = std::chrono::steady_clock::now();
    worker_a.kill(SIGTERM);
    std::string output;
    REQUIRE_MESSAGE(wait_for_line(worker_a, "shutting down", 5s, output), output);
    CHECK_MESSAGE(troupe::test::has_log_line(output, "shutting down: no new tasks; what runs gets its grace to finish",
                                             {{"why", "SIGTERM"}, {"running", "2"}, {"grace", "3s"}}),
                  output);

    // From now on worker-a takes nothing: a workflow submitted now waits for worker-b.
    REQUIRE(client->start("after", workflow_of("after", shell_task("one", "true"))) == "after");
    std::ofstream(go).put('\n');  // quick may end now; slow sleeps on
    cluster.start("worker-b");

    output += troupe::test::read_output(worker_a, 20s);
    const int status = worker_a.wait();
    const auto took = std::chrono::steady_clock::now() - signalled;
    CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), output);
    CHECK_MESSAGE(took >= 3s, output);  // slow had its grace
    CHECK_MESSAGE(troupe::test::has_log_line(
                      output, "worker stopped",
                      {{"how", "every task finished or was interrupted, and the scheduler has every outcome"}}),
                  output);

    CHECK(client->result("two", 30s) == "SUCCESS");
    CHECK(client->result("after", 30s) == "SUCCESS");
    const std::string a = cluster.logs("worker-a"), b = cluster.logs("worker-b");
    CHECK(fs::exists(a + "/two/quick.1.1.log"));
    CHECK(fs::exists(a + "/two/slow.1.1.log"));
    CHECK(fs::exists(b + "/two/slow.1.2.log"));  // attempt 1 again, its second dispatch
    CHECK_FALSE(fs::exists(b + "/two/quick.1.2.log"));
    CHECK_FALSE(fs::exists(a + "/after"));
    CHECK(fs::exists(b + "/after/one.1.1.log"));

  }

  TEST_CASE("a second signal cuts a worker's shutdown grace short") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 1}}, std::nullopt}};
    spec.shutdown_grace = "60s";
    Cluster cluster(spec);
    auto client = start_with_worker_a(cluster);
    const std::string started = cluster.dir / "started";
    REQUIRE(client->start("long", workflow_of("long", shell_task("nap", "touch " + started + "; exec sleep 60"))) ==
            "long");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
    auto& worker_a = *cluster.nodes["worker-a"];
    worker_a.kill(SIGINT);
    std::string output;
    REQUIRE_MESSAGE(wait_for_line(worker_a, "why=SIGINT", 5s, output), output);
    const auto second = std::chrono::steady_clock::now();
    worker_a.kill(SIGINT);
    output += troupe::test::read_output(worker_a, 20s);
    const int status = worker_a.wait();
    CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), output);
    CHECK_MESSAGE(std::chrono::steady_clock::now() - second < 10s, output);
    CHECK_MESSAGE(troupe::test::has_log_line(output, "shutting down: asked again, interrupting what still runs",
                                             {{"why", "SIGINT"}}),
                  output);
    // The task waits, not failed, for a worker: its attempt was kept.
    auto status_out = troupe::test::troupe_cli({"status", "long", "--address", "127.0.0.1:" + std::to_string(cluster.port)});
    CHECK_MESSAGE(contains(status_out.output, "RUNNING"), status_out.output);
    CHECK_MESSAGE(!contains(status_out.output, "FAILED"), status_out.output);
  }
}
