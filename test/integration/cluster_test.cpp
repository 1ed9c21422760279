// A real cluster: a scheduler and two workers as troupe-node processes on 127.0.0.1, driven
// through the Gateway over Cap'n Proto. Nodes are stopped by pid; the fault test uses kill -9.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include <signal.h>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "test/support/cluster.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::connect;
using troupe::test::eventually;

namespace {

size_t count_logs(const std::string& dir) {
  if (!fs::exists(dir)) return 0;
  size_t n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    n += entry.is_regular_file() && entry.path().extension() == ".log";
  }
  return n;
}

/// A shell task that leaves a mark for each run (MARKS/started.ATTEMPT.PID) and runs until the
/// test opens its gate.
struct GatedTask {
  explicit GatedTask(const Cluster& cluster)
      : marks(cluster.dir.path() + "/marks"), gate(cluster.dir.path() + "/gate") {
    fs::create_directories(marks);
  }
  std::string definition(const std::string& name, const std::string& extra = "") const {
    return R"({"name": ")" + name + R"(", "tasks": [{"name": "t", "shell": {"command": ["sh", "-c",
        "touch )" + marks + R"(/started.$TROUPE_ATTEMPT.$$; while [ ! -e )" + gate + R"( ]; do sleep 0.05; done"]})" +
           extra + "}]}";
  }
  size_t runs() const { return std::distance(fs::directory_iterator(marks), fs::directory_iterator()); }
  void open() const { std::ofstream(gate).put('\n'); }
  std::string marks, gate;
};

}  // namespace

TEST_SUITE("integration.cluster") {
  TEST_CASE("a diamond of shell tasks runs across two workers, with its logs") {
    Cluster cluster;
    cluster.start("scheduler");
    cluster.start("worker-a");
    cluster.start("worker-b");
    auto client = connect(cluster.port);
    const std::string out = cluster.dir.path() + "/out";
    const std::string definition = R"({"name": "diamond", "tasks": [
      {"name": "a", "shell": {"command": ["sh", "-c", "echo a-ran; echo a >> )" + out + R"("]}},
      {"name": "b", "dependsOn": ["a"], "shell": {"command": ["sh", "-c", "echo b >> )" + out + R"("]}},
      {"name": "c", "dependsOn": ["a"], "shell": {"command": ["sh", "-c", "echo c >> )" + out + R"("]}},
      {"name": "d", "dependsOn": ["b", "c"], "shell": {"command": ["sh", "-c", "echo d >> )" + out + R"("]}}]})";
    // Workers register asynchronously: tasks wait in their task list until one serves it.
    REQUIRE(client->start("diamond-1", definition) == "diamond-1");
    CHECK(client->result("diamond-1", 30s) == "SUCCESS");
    std::ifstream lines(out);
    std::string all((std::istreambuf_iterator<char>(lines)), std::istreambuf_iterator<char>());
    CHECK(all.substr(0, 2) == "a\n");
    CHECK(all.substr(all.size() - 2) == "d\n");
    CHECK(all.size() == 8);
    // One log per invocation, under the log_dir of whichever worker ran it.
    CHECK(count_logs(cluster.logs("worker-a")) + count_logs(cluster.logs("worker-b")) == 4);
    std::string a_log;
    for (const auto& w : {"worker-a", "worker-b"}) {
      const std::string path = cluster.logs(w) + "/diamond-1/a.1.1.log";
      if (fs::exists(path)) {
        std::ifstream f(path);
        std::getline(f, a_log);
      }
    }
    CHECK(a_log == "a-ran");

    SUBCASE("a failing command fails the workflow with its exit code") {
      REQUIRE(client->start("exit-3", R"({"name": "x", "tasks": [{"name": "t", "shell": {"command": ["sh", "-c", "exit 3"]}}]})") == "exit-3");
      const auto outcome = client->result("exit-3", 30s);
      CHECK(outcome.rfind("FAILED", 0) == 0);
      CHECK(outcome.find("ExitCode:3") != std::string::npos);
    }
  }

  TEST_CASE("with a workflow cache of one, workflows idle on their workers passivate and finish on their reports") {
    troupe::test::ClusterSpec spec;
    spec.workflow_cache = 1;
    spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt}};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = connect(cluster.port);
    const std::string definition = R"({"name": "two-steps", "tasks": [
      {"name": "wait", "shell": {"command": ["sh", "-c", "sleep 1.5"]}},
      {"name": "then", "dependsOn": ["wait"], "shell": {"command": ["sh", "-c", "echo done"]}}]})";
    for (int i = 0; i < 4; ++i) {
      const std::string id = "cached-" + std::to_string(i);
      REQUIRE(client->start(id, definition) == id);
    }
    for (int i = 0; i < 4; ++i) CHECK(client->result("cached-" + std::to_string(i), 30s) == "SUCCESS");
    // Each task ran once, on its first invocation: nothing was lost or failed over on the way.
    for (int i = 0; i < 4; ++i) {
      const std::string logs = cluster.logs("worker-a") + "/cached-" + std::to_string(i);
      CHECK(fs::exists(logs + "/wait.1.1.log"));
      CHECK(fs::exists(logs + "/then.1.1.log"));
      CHECK(count_logs(logs) == 2);
    }
  }

  TEST_CASE("kill -9 of a worker mid-task: the task completes on the other worker") {
    Cluster cluster;
    cluster.start("scheduler");
    cluster.start("worker-a");
    cluster.start("worker-b");
    auto client = connect(cluster.port);
    const std::string marks = cluster.dir.path() + "/marks";
    fs::create_directories(marks);
    const std::string definition = R"({"name": "slow", "tasks": [{"name": "t", "shell": {"command": ["sh", "-c",
        "touch )" + marks + R"(/started.$TROUPE_ATTEMPT; sleep 2"]},
        "retry": {"initialInterval": "100ms", "maximumAttempts": 3}}]})";
    REQUIRE(client->start("slow-1", definition) == "slow-1");
    REQUIRE(eventually([&] { return fs::exists(marks + "/started.1"); }, 30s));
    // Whichever worker has its log runs it.
    const bool on_a = fs::exists(cluster.logs("worker-a") + "/slow-1/t.1.1.log");
    const std::string victim = on_a ? "worker-a" : "worker-b";
    const std::string survivor = on_a ? "worker-b" : "worker-a";
    cluster.nodes[victim]->kill(SIGKILL);
    cluster.nodes[victim]->wait();
    // Declared dead within must_die_after, failed over, retried on the survivor.
    CHECK(eventually([&] { return fs::exists(marks + "/started.2"); }, 10s));
    CHECK(client->result("slow-1", 30s) == "SUCCESS");
    // Attempt 2's log (t.2.N.log) is the survivor's.
    bool second_attempt_logged = false;
    for (const auto& entry : fs::directory_iterator(cluster.logs(survivor) + "/slow-1")) {
      second_attempt_logged |= entry.path().filename().string().rfind("t.2.", 0) == 0;
    }
    CHECK(second_attempt_logged);

    SUBCASE("the killed worker restarted with the same shard id is told to start clean and runs tasks") {
      auto restarted = troupe::test::start_node_with_output(cluster.config, victim);
      bool told_clean = false;
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (!told_clean && std::chrono::steady_clock::now() < deadline) {
        auto line = restarted->read_line(1s);
        if (line) told_clean = troupe::test::has_log_line(*line, "registered with the scheduler", {{"start_clean", "true"}});
      }
      CHECK(told_clean);
      cluster.nodes[victim] = std::move(restarted);
      REQUIRE(client->start("after-restart", R"({"name": "n", "tasks": [{"name": "t", "handler": "noop"}]})") ==
              "after-restart");
      CHECK(client->result("after-restart", 30s) == "SUCCESS");
    }
  }

  TEST_CASE("shell tasks heartbeat by writing their progress file") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt}};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = connect(cluster.port);

    SUBCASE("progress written more often than the heartbeat timeout keeps a long task alive") {
      REQUIRE(client->start("beating", R"({"name": "b", "tasks": [{"name": "t",
          "shell": {"command": ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo step-$i > \"$TROUPE_PROGRESS_FILE\"; sleep 0.2; done"]},
          "timeouts": {"heartbeat": "700ms", "scheduleToClose": "1m"}, "retry": {"maximumAttempts": 1}}]})") == "beating");
      CHECK(client->result("beating", 30s) == "SUCCESS");
    }
    SUBCASE("a task that stays silent past its heartbeat timeout fails with Timeout:heartbeat") {
      REQUIRE(client->start("silent", R"({"name": "s", "tasks": [{"name": "t",
          "shell": {"command": ["sleep", "5"]},
          "timeouts": {"heartbeat": "700ms", "scheduleToClose": "1m"}, "retry": {"maximumAttempts": 1}}]})") == "silent");
      const auto outcome = client->result("silent", 30s);
      CHECK(outcome.rfind("FAILED", 0) == 0);
      CHECK(outcome.find("Timeout:heartbeat") != std::string::npos);
    }
    SUBCASE("the next attempt starts from the last attempt's progress") {
      REQUIRE(client->start("resumed", R"({"name": "r", "tasks": [{"name": "t",
          "shell": {"command": ["sh", "-c", "if [ $TROUPE_ATTEMPT = 1 ]; then echo -n step-7 > \"$TROUPE_PROGRESS_FILE\"; exit 1; fi; test \"$TROUPE_PROGRESS\" = step-7 && test \"$(cat $TROUPE_PROGRESS_FILE)\" = step-7"]},
          "retry": {"initialInterval": "50ms", "maximumAttempts": 2}}]})") == "resumed");
      CHECK(client->result("resumed", 30s) == "SUCCESS");
    }
  }

  TEST_CASE("a scheduler killed with -9 and restarted takes back the task its worker still runs") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    // The worker rides out the scheduler's absence on its lease.
    spec.worker_lease = "5s";
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = connect(cluster.port);
    GatedTask task(cluster);
    REQUIRE(client->start("survivor", task.definition("survivor",
        R"(, "retry": {"initialInterval": "100ms", "maximumAttempts": 3})")) == "survivor");
    REQUIRE(eventually([&] { return task.runs() == 1; }, 30s));

    client.reset();
    cluster.nodes["scheduler"]->kill(SIGKILL);
    cluster.nodes["scheduler"]->wait();
    cluster.start("scheduler");
    client = connect(cluster.port);
    task.open();
    // The revived task took its invocation back from the worker that still ran it: one attempt,
    // whose outcome the worker delivered through its new session.
    CHECK(client->result("survivor", 30s) == "SUCCESS");
    CHECK(task.runs() == 1);
    CHECK(count_logs(cluster.logs("worker-a")) == 1);
  }

  TEST_CASE("a worker rides out a scheduler outage longer than must_die_after on its lease, and its task is taken back") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    spec.worker_lease = "8s";  // must_die_after is 600 ms
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = connect(cluster.port);
    GatedTask task(cluster);
    REQUIRE(client->start("outlasting", task.definition("outlasting")) == "outlasting");
    REQUIRE(eventually([&] { return task.runs() == 1; }, 30s));

    client.reset();
    cluster.nodes["scheduler"]->kill(SIGKILL);
    cluster.nodes["scheduler"]->wait();
    // The outage is the fault being tested: three times must_die_after, well within the lease.
    std::this_thread::sleep_for(1800ms);
    REQUIRE(troupe::test::still_running(*cluster.nodes["worker-a"]));
    cluster.start("scheduler");
    client = connect(cluster.port);
    task.open();
    CHECK(client->result("outlasting", 30s) == "SUCCESS");
    // One run: the worker kept it through the outage and the new incarnation took it back.
    CHECK(task.runs() == 1);
    CHECK(troupe::test::still_running(*cluster.nodes["worker-a"]));
  }

  TEST_CASE("a cancelled shell task that ignores SIGTERM is killed after the cluster's kill_grace") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    spec.kill_grace = "1500ms";
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = connect(cluster.port);
    const std::string pid_file = cluster.dir.path() + "/term-ignoring.pid";
    REQUIRE(client->start("term-ignoring", R"({"name": "s", "tasks": [{"name": "t",
        "shell": {"command": ["sh", "-c", "trap '' TERM; echo $$ > )" + pid_file + R"(; while true; do sleep 0.05; done"]},
        "timeouts": {"startToClose": "500ms", "scheduleToClose": "1m"}, "retry": {"maximumAttempts": 1}}]})") == "term-ignoring");
    const auto outcome = client->result("term-ignoring", 30s);
    const auto ended = std::chrono::steady_clock::now();
    CHECK(outcome.find("Timeout:startToClose") != std::string::npos);
    std::ifstream in(pid_file);
    pid_t pid = 0;
    in >> pid;
    REQUIRE(pid > 0);
    auto alive = [pid] { return ::kill(pid, 0) == 0; };
    // SIGTERM went out with the timeout and is ignored; SIGKILL follows 1.5 s later, not at once
    // and not after the 10 s default.
    std::this_thread::sleep_until(ended + 500ms);
    CHECK(alive());
    CHECK(eventually([&] { return !alive(); }, 5s));
    CHECK(std::chrono::steady_clock::now() - ended < 5s);
    // Whatever happened above, the task's process must not outlive the test.
    if (alive()) ::kill(-pid, SIGKILL);
  }
}
