// A real worker (troupe-node) that dies or freezes while a shell task with a background child
// runs: no process of the task outlives the worker by more than a second, a frozen worker's
// tasks die when its lease runs out, and a restarted worker kills what its previous instance
// left. The task's processes are found by their TROUPE_WORKFLOW_ID in /proc.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "test/support/cluster.hpp"
#include "test/support/processes.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::connect;
using troupe::test::eventually;
using troupe::test::processes_with_env;

namespace {

using Clock = std::chrono::steady_clock;

/// A workflow of one shell task that runs until killed: sh, a background sleep and a foreground
/// one (the trailing command keeps sh from exec'ing it).
constexpr size_t task_processes = 3;
std::string lingering_task() {
  return R"({"name": "linger", "tasks": [{"name": "t", "shell": {"command": ["sh", "-c", "sleep 100 & sleep 100; exit"]},
             "retry": {"maximumAttempts": 1}}]})";
}

/// Polls finely, to measure how long the processes outlive what happened at `since`.
bool gone_within(const std::string& entry, Clock::time_point since, Clock::duration limit, long& took_ms) {
  while (!processes_with_env(entry).empty()) {
    if (Clock::now() - since > limit) return false;
    std::this_thread::sleep_for(2ms);
  }
  took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
  return true;
}

/// One worker running one lingering shell task (every process marked by its workflow id),
/// and whatever is left of it killed when the test ends.
struct Running {
  explicit Running(const std::string& prefix)
      : spec(one_worker()), cluster(spec), id(prefix + "-" + std::to_string(::getpid())),
        entry("TROUPE_WORKFLOW_ID=" + id), cleanup{entry} {
    cluster.start("scheduler");
    cluster.start("worker-a");
    client = connect(cluster.port);
    REQUIRE(client->start(id, lingering_task()) == id);
    REQUIRE(eventually([&] { return processes_with_env(entry).size() == task_processes; }, 30s));
  }
  static troupe::test::ClusterSpec one_worker() {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    return spec;
  }
  troupe::test::ClusterSpec spec;
  Cluster cluster;
  std::string id, entry;
  troupe::test::KillProcessesWithEnv cleanup;
  std::unique_ptr<troupe::test::Client> client;
};

}  // namespace

TEST_SUITE("integration.task_processes") {
  TEST_CASE("kill -9 of a worker: every process of its shell task is gone within a second") {
    Running running("killed");
    auto& cluster = running.cluster;
    const std::string& entry = running.entry;
    cluster.nodes["worker-a"]->kill(SIGKILL);
    const auto killed = Clock::now();
    long took_ms = -1;
    CHECK(gone_within(entry, killed, 1s, took_ms));
    MESSAGE("the task's processes were gone " << took_ms << " ms after the worker's SIGKILL");
    cluster.nodes["worker-a"]->wait();
  }

  TEST_CASE("a frozen worker's task dies when the worker's lease runs out") {
    Running running("frozen");
    auto& cluster = running.cluster;
    const std::string& entry = running.entry;
    cluster.nodes["worker-a"]->kill(SIGSTOP);
    const auto stopped = Clock::now();
    // The lease (spec.worker_lease) ends at most a lease after the stop: the last heartbeat
    // the scheduler acknowledged was sent before it.
    long took_ms = -1;
    CHECK(gone_within(entry, stopped, 1s + 1s, took_ms));
    MESSAGE("the task's processes were gone " << took_ms << " ms after the worker was stopped (lease "
                                              << running.spec.worker_lease << ")");
    cluster.nodes["worker-a"]->kill(SIGKILL);
    cluster.nodes["worker-a"]->wait();
  }

  TEST_CASE("a restarted worker kills what its previous instance left before it registers") {
    Running running("left");
    auto& cluster = running.cluster;
    const std::string& entry = running.entry;
    // The task's keeper and the worker die together, so that neither can act: the worker is
    // frozen while the keeper is killed (taking only the task's leader, sh, with it), then killed.
    int keeper = 0;
    for (const auto& p : processes_with_env(entry)) {
      if (troupe::test::read_proc_file("/proc/" + std::to_string(p.ppid) + "/comm") == "troupe-keeper\n") {
        keeper = p.ppid;
      }
    }
    REQUIRE(keeper > 0);
    cluster.nodes["worker-a"]->kill(SIGSTOP);
    ::kill(keeper, SIGKILL);
    cluster.nodes["worker-a"]->kill(SIGKILL);
    cluster.nodes["worker-a"]->wait();
    REQUIRE(eventually([&] { return processes_with_env(entry).size() == task_processes - 1; }, 10s));

    auto restarted = troupe::test::start_node_with_output(cluster.config, "worker-a");
    bool told = false, registered = false;
    std::string said;
    const auto until = Clock::now() + 20s;
    while (!registered && Clock::now() < until) {
      auto line = restarted->read_line(1s);
      if (!line) continue;
      said += *line + "\n";
      auto logged = troupe::parse_log_line(*line);
      if (!logged) continue;
      told |= logged->message == "killed processes that tasks of a previous instance left running" &&
              logged->field("processes") == "2";
      registered = logged->message == "registered with the scheduler";
    }
    CHECK_MESSAGE(told, said);
    CHECK_MESSAGE(registered, said);
    CHECK(processes_with_env(entry).empty());  // already by the time it registered
    cluster.nodes["worker-a"] = std::move(restarted);
  }
}
