// How nodes stop: SIGTERM and SIGINT to a scheduler, a worker and a `troupe dev` node, each
// busy (a worker connected, a task running), as an operator or a process supervisor sends them.
#include <doctest/doctest.h>

#include <signal.h>

#include <fstream>
#include <string>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/processes.hpp"
#include "test/support/stop.hpp"

using namespace std::chrono_literals;
using troupe::test::ChildProcess;
using troupe::test::Cluster;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::troupe_cli;

namespace {

using troupe::test::alive;
using troupe::test::ReapTask;

/// A workflow of one shell task that writes its pid to `pid_file` and then sleeps.
std::string sleeper(const std::string& pid_file) {
  return R"({"name": "sleeper", "tasks": [{"name": "nap", "shell": {"command": ["sh", "-c", "echo $$ > )" +
         pid_file + R"(; exec sleep 60"]}}]})";
}

/// The pid in `pid_file` once it is there (0 if it did not appear within 20 s).
pid_t task_pid(const std::string& pid_file) {
  pid_t pid = 0;
  eventually([&] {
    std::ifstream in(pid_file);
    pid = 0;
    in >> pid;
    return pid > 0;
  }, 20s);
  return pid;
}

troupe::test::ClusterSpec one_worker() {
  troupe::test::ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
  return spec;
}

/// The signal a subcase sends, and its name as a node prints it.
struct Signal {
  int number;
  std::string name;
};

Signal pick_signal() {
  Signal signal{SIGTERM, "SIGTERM"};
  SUBCASE("SIGTERM") { signal = {SIGTERM, "SIGTERM"}; }
  SUBCASE("SIGINT") { signal = {SIGINT, "SIGINT"}; }
  return signal;
}

/// What a node that stopped cleanly must not have printed.
void check_clean(const troupe::test::Stopped& stopped) {
  CHECK_MESSAGE(!contains(stopped.output, "RPC thread failed"), stopped.describe());
  CHECK_MESSAGE(!contains(stopped.output, "Assertion"), stopped.describe());
}

}  // namespace

TEST_SUITE("integration.lifecycle") {
  TEST_CASE("a scheduler with a worker connected and a task running exits 0 within 2 s of SIGTERM or SIGINT") {
    const Signal signal = pick_signal();
    CAPTURE(signal.name);
    Cluster cluster(one_worker());
    cluster.nodes["scheduler"] = troupe::test::start_node_with_output(cluster.config, "scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    const std::string pid_file = cluster.dir / "task.pid";
    REQUIRE(client->start("in-flight", sleeper(pid_file)) == "in-flight");
    ReapTask task{task_pid(pid_file)};
    REQUIRE(task.pid > 0);  // the worker is registered and runs the task

    // The client stays connected too: no connection may hold the scheduler up.
    auto stopped = troupe::test::stop_with(*cluster.nodes["scheduler"], signal.number, 2s);
    CHECK_MESSAGE(stopped.exited_with(0), stopped.describe());
    CHECK_MESSAGE(troupe::test::has_log_line(stopped.output, "stopping", {{"reason", signal.name}, {"exit_code", "0"}}),
                  stopped.describe());
    check_clean(stopped);
    MESSAGE("the scheduler exited " << stopped.took.count() << " ms after " << signal.name);

    // What it acknowledged is kept: started again, it knows the workflow.
    cluster.start("scheduler");
    troupe::test::connect(cluster.port);
    auto status = troupe_cli({"status", "in-flight", "--address", "127.0.0.1:" + std::to_string(cluster.port)});
    CHECK_MESSAGE(status.code == 0, status.output);
    CHECK(contains(status.output, "in-flight"));
  }

  TEST_CASE("a worker node running a task stops without crashing on SIGTERM or SIGINT, and kills its task after its shutdown grace") {
    const Signal signal = pick_signal();
    CAPTURE(signal.name);
    auto spec = one_worker();
    spec.shutdown_grace = "1s";
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.nodes["worker-a"] = troupe::test::start_node_with_output(cluster.config, "worker-a");
    auto client = troupe::test::connect(cluster.port);
    const std::string pid_file = cluster.dir / "task.pid";
    REQUIRE(client->start("on-worker", sleeper(pid_file)) == "on-worker");
    ReapTask task{task_pid(pid_file)};
    REQUIRE(task.pid > 0);

    auto stopped = troupe::test::stop_with(*cluster.nodes["worker-a"], signal.number, 5s);
    CHECK_MESSAGE(stopped.exited_with(0), stopped.describe());
    CHECK_MESSAGE(troupe::test::has_log_line(stopped.output,
                                             "shutting down: no new tasks; what runs gets its grace to finish",
                                             {{"why", signal.name}}),
                  stopped.describe());
    CHECK_MESSAGE(stopped.took >= 1s, stopped.describe());  // the task had its grace
    check_clean(stopped);
    CHECK_MESSAGE(eventually([&] { return !alive(task.pid); }, 5s), "the task outlived its worker");
  }

  TEST_CASE("troupe dev running a task exits 0 within 2 s of SIGTERM or SIGINT, and kills its task") {
    const Signal signal = pick_signal();
    CAPTURE(signal.name);
    troupe::test::TempDir dir;
    const uint16_t port = troupe::test::free_port();
    // Through sh so that its stderr joins the output read; exec keeps the pid the node's.
    ChildProcess dev({"/bin/sh", "-c", "exec \"$0\" dev --listen \"$1\" --dir \"$2\" 2>&1", troupe::test::cli_binary(),
                      "127.0.0.1:" + std::to_string(port), dir / "dev"});
    auto client = troupe::test::connect(port);
    const std::string pid_file = dir / "task.pid";
    REQUIRE(client->start("in-dev", sleeper(pid_file)) == "in-dev");
    ReapTask task{task_pid(pid_file)};
    REQUIRE(task.pid > 0);

    auto stopped = troupe::test::stop_with(dev, signal.number, 2s);
    CHECK_MESSAGE(stopped.exited_with(0), stopped.describe());
    check_clean(stopped);
    CHECK_MESSAGE(eventually([&] { return !alive(task.pid); }, 5s), "the task outlived troupe dev");
  }
}
