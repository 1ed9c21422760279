// Sessions on real nodes: a session's tasks all run on one worker, between its envEnter and
// envExit, in a directory of their own; a worker holds at most max_concurrent_sessions; a
// session that finds no worker in its creationTimeout, or whose envEnter fails, fails its
// workflow and runs none of its tasks.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/workflows.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::session_of;
using troupe::test::shell_action;
using troupe::test::shell_task;
using troupe::test::workflow_with_sessions;

namespace {

namespace fs = std::filesystem;

/// Tasks one, then two, each writing its name to `order`: two's first run marks `started` and
/// sleeps a minute (a worker is killed under it); a later run ends at once.
std::string one_then_long_two(const std::string& order, const std::string& started) {
  return shell_task("one", "echo one >> " + order) + ", " +
         shell_task("two", "echo two >> " + order + "; [ -e " + started + " ] && exit 0; touch " + started + "; exec sleep 60",
                    R"("dependsOn": ["one"])");
}

/// Starts the cluster's scheduler and every worker of its spec.
void start_all(Cluster& cluster) {
  cluster.start("scheduler");
  for (const auto& worker : cluster.spec.workers) cluster.start(worker.name);
}

/// The lines of a file.
std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

troupe::test::CliRun cli(const Cluster& cluster, std::vector<std::string> args) {
  args.push_back("--address");
  args.push_back("127.0.0.1:" + std::to_string(cluster.port));
  return troupe::test::troupe_cli(args);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The workers of the cluster whose log directory holds a log of `task` in `workflow`.
std::vector<std::string> ran_on(const Cluster& cluster, const std::string& workflow, const std::string& task) {
  std::vector<std::string> workers;
  for (const auto& worker : cluster.spec.workers) {
    const fs::path dir = cluster.logs(worker.name) + "/" + workflow;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind(task + ".", 0) == 0 && entry.path().extension() == ".log") {
        workers.push_back(worker.name);
        break;
      }
    }
  }
  return workers;
}

/// Once `started` exists, the worker running task two of `workflow` (one_then_long_two) gets
/// `signal`; returns its name once it exited (0, when asked to stop).
std::string stop_holder(Cluster& cluster, const std::string& workflow, const std::string& started, int signal) {
  REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
  const auto holder = ran_on(cluster, workflow, "two");
  REQUIRE(holder.size() == 1);
  cluster.nodes[holder[0]]->kill(signal);
  const int status = cluster.nodes[holder[0]]->wait();
  if (signal == SIGTERM) CHECK(status == 0);
  return holder[0];
}

}  // namespace

TEST_SUITE("integration.sessions") {
  TEST_CASE("a session's tasks run on one worker, after envEnter and before envExit, in the session's directory") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt}, {"worker-b", {{"default", 4}}, std::nullopt}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string order = cluster.dir / "order";
    auto step = [&](const std::string& name) {
      return "echo " + name + " $TROUPE_SESSION_ID $PWD >> " + order + "; sleep 0.2";
    };
    // b and c both follow a: the session runs them one at a time all the same, on its worker.
    const std::string tasks = shell_task("a", step("a")) + ", " + shell_task("b", step("b"), R"("dependsOn": ["a"])") +
                              ", " + shell_task("c", step("c"), R"("dependsOn": ["a"])") + ", " +
                              shell_task("free", "true");
    const std::string session = session_of("work", {"a", "b", "c"},
                                           R"("envEnter": )" + shell_action("echo enter $TROUPE_SESSION_ID >> " + order) +
                                               R"(, "envExit": )" + shell_action("echo exit >> " + order));
    for (int run = 0; run < 3; ++run) {
      const std::string id = "pinned-" + std::to_string(run);
      fs::remove(order);
      REQUIRE(client->start(id, workflow_with_sessions(id, tasks, session)) == id);
      REQUIRE(client->result(id, 30s) == "SUCCESS");
      const auto a = ran_on(cluster, id, "a");
      REQUIRE(a.size() == 1);
      CHECK(ran_on(cluster, id, "b") == a);
      CHECK(ran_on(cluster, id, "c") == a);
      const std::string directory = fs::canonical(cluster.logs(a[0]) + "/sessions/" + id + "/work").string();
      const std::string text = read_file(order);
      std::istringstream lines(text);
      std::vector<std::string> seen;
      for (std::string line; std::getline(lines, line);) seen.push_back(line);
      REQUIRE_MESSAGE(seen.size() == 5, text);
      CHECK(seen.front() == "enter " + id + "/work");
      CHECK(seen[1] == "a " + id + "/work " + directory);
      CHECK(((seen[2].rfind("b ", 0) == 0 && seen[3].rfind("c ", 0) == 0) ||
             (seen[2].rfind("c ", 0) == 0 && seen[3].rfind("b ", 0) == 0)));
      CHECK(seen.back() == "exit");
      // The session's own log says what ran there, in order.
      const std::string log = read_file(cluster.logs(a[0]) + "/sessions/" + id + "/work.log");
      CHECK_MESSAGE(contains(log, "envEnter ended SUCCEEDED"), log);
      CHECK_MESSAGE(contains(log, "envExit ended SUCCEEDED"), log);
      CHECK_MESSAGE(contains(log, "closed"), log);
      auto status = cli(cluster, {"status", id});
      CHECK_MESSAGE(contains(status.output, "work     CLOSED                1  " + a[0]), status.output);
      auto json = cli(cluster, {"status", id, "--json"});
      CHECK_MESSAGE(contains(json.output, R"("sessions":[{"name":"work","state":"CLOSED","attempt":1,"worker":")" + a[0] +
                                              R"(","resourceId":"","envEnter":"SUCCEEDED","envExit":"SUCCEEDED","failure":"")"),
                    json.output);
    }
  }

  TEST_CASE("a worker holds at most max_concurrent_sessions; a session no worker takes in its creationTimeout fails its workflow") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt, "", 1}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string go = cluster.dir / "go", started = cluster.dir / "started";
    const std::string holds =
        workflow_with_sessions("holds", shell_task("wait", "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.05; done"),
                               session_of("first", {"wait"}));
    REQUIRE(client->start("holds", holds) == "holds");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
    const std::string waits = workflow_with_sessions("waits", shell_task("never", "true"),
                                                     session_of("second", {"never"}, R"("creationTimeout": "3s")"));
    REQUIRE(client->start("waits", waits) == "waits");
    std::string waiting;
    CHECK_MESSAGE(eventually([&] {
                    waiting = cli(cluster, {"status", "waits"}).output;
                    return contains(waiting, "second   CREATING") &&
                           contains(waiting, "every worker that fits holds as many sessions as it takes (1 of 1)");
                  }, 20s),
                  waiting);
    const std::string failed = client->result("waits", 30s);
    CHECK_MESSAGE(contains(failed, "FAILED: session 'second' failed: Timeout:creation: no worker with a free session slot "
                                   "took it within its creationTimeout"),
                  failed);
    CHECK(ran_on(cluster, "waits", "never").empty());
    auto status = cli(cluster, {"status", "waits"});
    // Deadline's NEVER_ATTEMPTED: no attempt, no start or end time.
    CHECK_MESSAGE(contains(status.output, "never  NEVER_ATTEMPTED        0  "), status.output);
    CHECK_MESSAGE(contains(status.output, "NeverAttempted: session 'second' ended before it ran"), status.output);
    auto json = cli(cluster, {"status", "waits", "--json"});
    CHECK_MESSAGE(contains(json.output, R"("name":"never","state":"NEVER_ATTEMPTED","attempt":0)"), json.output);
    CHECK_MESSAGE(contains(json.output, R"("startedUs":0,"endedUs":0)"), json.output);
    // The first session's slot comes back when it closes: a new session gets it.
    std::ofstream(go).close();
    CHECK(client->result("holds", 30s) == "SUCCESS");
    const std::string later = workflow_with_sessions("later", shell_task("one", "true"), session_of("third", {"one"}));
    REQUIRE(client->start("later", later) == "later");
    CHECK(client->result("later", 30s) == "SUCCESS");
  }

  TEST_CASE("a failed envEnter runs none of the session's tasks, runs envExit, and fails the workflow") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string exited = cluster.dir / "exited";
    const std::string definition = workflow_with_sessions(
        "broken", shell_task("one", "true") + ", " + shell_task("two", "true", R"("dependsOn": ["one"])"),
        session_of("env", {"one", "two"},
                   R"("envEnter": )" + shell_action("exit 3") + R"(, "envExit": )" + shell_action("touch " + exited)));
    REQUIRE(client->start("broken", definition) == "broken");
    const std::string failed = client->result("broken", 30s);
    CHECK_MESSAGE(contains(failed, "FAILED: session 'env' failed: EnvEnterFailed: ExitCode:3"), failed);
    CHECK(fs::exists(exited));
    CHECK(ran_on(cluster, "broken", "one").empty());
    CHECK(ran_on(cluster, "broken", "two").empty());
    auto status = cli(cluster, {"status", "broken"});
    CHECK_MESSAGE(contains(status.output, "one   NEVER_ATTEMPTED        0  "), status.output);
    CHECK_MESSAGE(contains(status.output, "two   UPSTREAM_FAILED"), status.output);
    CHECK_MESSAGE(contains(status.output, "NeverAttempted: session 'env' ended before it ran"), status.output);
  }

  TEST_CASE("an executionTimeout or a stop while envEnter runs cancels it; envExit runs, the tasks are never attempted") {
    for (const bool stop : {false, true}) {
      CAPTURE(stop);
      troupe::test::ClusterSpec spec;
      spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
      Cluster cluster(spec);
      start_all(cluster);
      auto client = troupe::test::connect(cluster.port);
      const std::string entering = cluster.dir / "entering", exited = cluster.dir / "exited";
      const std::string definition = workflow_with_sessions(
          "slow", shell_task("one", "true"),
          session_of("env", {"one"},
                     std::string(stop ? "" : R"("executionTimeout": "2s", )") + R"("envEnter": )" +
                         shell_action("touch " + entering + "; exec sleep 60") + R"(, "envExit": )" +
                         shell_action("touch " + exited)));
      REQUIRE(client->start("slow", definition) == "slow");
      REQUIRE(eventually([&] { return fs::exists(entering); }, 20s));
      if (stop) REQUIRE(cli(cluster, {"stop", "slow"}).code == 0);
      // Well before envEnter's minute: it was cancelled, not waited for.
      const std::string result = client->result("slow", 20s);
      auto status = cli(cluster, {"status", "slow"});
      if (stop) {
        CHECK_MESSAGE(result == "STOPPED", (result + "\n" + status.output));
        CHECK_MESSAGE(contains(status.output, "env      CLOSED"), status.output);
      } else {
        CHECK_MESSAGE(contains(result, "FAILED: session 'env' failed: Timeout:execution"), result);
        CHECK_MESSAGE(contains(status.output, "env      FAILED"), status.output);
      }
      CHECK_MESSAGE(contains(status.output, "one   NEVER_ATTEMPTED        0  "), status.output);
      auto json = cli(cluster, {"status", "slow", "--json"});
      CHECK_MESSAGE(contains(json.output, R"("envEnter":"FAILED: Cancelled")"), json.output);
      CHECK(fs::exists(exited));
      CHECK(ran_on(cluster, "slow", "one").empty());
    }
  }

  TEST_CASE("an envEnter interrupted by its worker's shutdown fails a session that may not be recreated: its tasks are never attempted") {
    troupe::test::ClusterSpec spec;
    spec.shutdown_grace = "1s";
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string entering = cluster.dir / "entering";
    const std::string session = session_of("s", {"one"}, R"("envEnter": )" + shell_action("touch " + entering + "; exec sleep 30"));
    REQUIRE(client->start("cut", workflow_with_sessions("cut", shell_task("one", "true"), session)) == "cut");
    REQUIRE(eventually([&] { return fs::exists(entering); }, 20s));
    cluster.nodes["worker-a"]->kill(SIGTERM);
    CHECK(cluster.nodes["worker-a"]->wait() == 0);
    const std::string result = client->result("cut", 30s);
    CHECK_MESSAGE(contains(result, "FAILED: session 's' failed: WorkerLost"), result);
    auto status = cli(cluster, {"status", "cut"});
    CHECK_MESSAGE(contains(status.output, "one   NEVER_ATTEMPTED        0  "), status.output);
    CHECK(ran_on(cluster, "cut", "one").empty());
  }

  TEST_CASE("a session whose worker is killed fails its workflow, or with onFailure recreate moves to another worker") {
    for (const bool recreate : {false, true}) {
      CAPTURE(recreate);
      troupe::test::ClusterSpec spec;
      Cluster cluster(spec);
      start_all(cluster);
      auto client = troupe::test::connect(cluster.port);
      const std::string order = cluster.dir / "order", started = cluster.dir / "started";
      const std::string tasks = one_then_long_two(order, started);
      const std::string session =
          session_of("s", {"one", "two"},
                     R"("envEnter": )" + shell_action("echo enter >> " + order) +
                         (recreate ? R"(, "onFailure": "recreate")" : ""));
      REQUIRE(client->start("lost", workflow_with_sessions("lost", tasks, session)) == "lost");
      const std::string holder = stop_holder(cluster, "lost", started, SIGKILL);
      const std::string result = client->result("lost", 30s);
      auto status = cli(cluster, {"status", "lost"});
      if (!recreate) {
        CHECK_MESSAGE(contains(result, "FAILED: session 's' failed: WorkerLost: worker " + holder + " left the cluster"),
                      result);
        CHECK(lines_of(order) == std::vector<std::string>{"enter", "one", "two"});
        continue;
      }
      CHECK_MESSAGE(result == "SUCCESS", (result + "\n" + status.output));
      const std::string other = holder == "worker-a" ? "worker-b" : "worker-a";
      // envEnter ran again on the other worker; the task that succeeded was not run again.
      CHECK(lines_of(order) == std::vector<std::string>{"enter", "one", "two", "enter", "two"});
      CHECK(ran_on(cluster, "lost", "one") == std::vector<std::string>{holder});
      CHECK(contains(ran_on(cluster, "lost", "two").front() + ran_on(cluster, "lost", "two").back(), other));
      CHECK_MESSAGE(contains(status.output, "s        CLOSED                2  " + other), status.output);
    }
  }

  TEST_CASE("a session recreated with rerunAll runs again the tasks that succeeded, in their order") {
    troupe::test::ClusterSpec spec;
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string order = cluster.dir / "order", started = cluster.dir / "started";
    const std::string session = session_of(
        "s", {"one", "two"},
        R"("envEnter": )" + shell_action("echo enter >> " + order) + R"(, "onFailure": "recreate", "rerunAll": true)");
    REQUIRE(client->start("again", workflow_with_sessions("again", one_then_long_two(order, started), session)) == "again");
    const std::string holder = stop_holder(cluster, "again", started, SIGKILL);
    const std::string result = client->result("again", 30s);
    auto status = cli(cluster, {"status", "again"});
    CHECK_MESSAGE(result == "SUCCESS", (result + "\n" + status.output));
    // The new session entered a fresh environment: one ran again there before two.
    CHECK(lines_of(order) == std::vector<std::string>{"enter", "one", "two", "enter", "one", "two"});
    const std::string other = holder == "worker-a" ? "worker-b" : "worker-a";
    CHECK_MESSAGE(contains(status.output, "one   SUCCESS                1  " + other), status.output);
  }

  TEST_CASE("a session's worker restarted with the same resource id within reestablishWithin continues the session there") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt, "box", 1}, {"worker-b", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string order = cluster.dir / "order", started = cluster.dir / "started";
    const std::string tasks = one_then_long_two(order, started);
    const std::string session = session_of(
        "s", {"one", "two"},
        R"("resourceId": "box", "reestablishWithin": "20s", "envEnter": )" +
            shell_action("echo enter $TROUPE_SESSION_DIR >> " + order));
    REQUIRE(client->start("back", workflow_with_sessions("back", tasks, session)) == "back");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
    cluster.nodes["worker-a"]->kill(SIGKILL);
    (void)cluster.nodes["worker-a"]->wait();
    std::string waiting;
    CHECK_MESSAGE(eventually([&] {
                    waiting = cli(cluster, {"status", "back"}).output;
                    return contains(waiting, "REESTABLISHING");
                  }, 20s),
                  waiting);
    cluster.start("worker-a");
    const std::string result = client->result("back", 30s);
    CHECK_MESSAGE(result == "SUCCESS", (result + "\n" + cli(cluster, {"status", "back"}).output));
    const auto seen = lines_of(order);
    REQUIRE(seen.size() == 5);
    // Entered again in the same directory, on the same resource; what succeeded was kept.
    CHECK(seen[0].rfind("enter ", 0) == 0);
    CHECK(seen[3] == seen[0]);
    CHECK(seen[1] == "one");
    CHECK(seen[2] == "two");
    CHECK(seen[4] == "two");
    CHECK(ran_on(cluster, "back", "two") == std::vector<std::string>{"worker-a"});
  }

  TEST_CASE("a session whose resource does not come back within reestablishWithin fails its workflow") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt, "box", 1}, {"worker-b", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string order = cluster.dir / "order", started = cluster.dir / "started";
    const std::string session =
        session_of("s", {"one", "two"}, R"("resourceId": "box", "reestablishWithin": "2s")");
    REQUIRE(client->start("gone", workflow_with_sessions("gone", one_then_long_two(order, started), session)) == "gone");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
    cluster.nodes["worker-a"]->kill(SIGKILL);
    (void)cluster.nodes["worker-a"]->wait();
    // worker-b has a free slot but not the resource: nothing runs there.
    const std::string result = client->result("gone", 30s);
    CHECK_MESSAGE(contains(result, "FAILED: session 's' failed: WorkerLost: worker worker-a left the cluster"), result);
    CHECK(ran_on(cluster, "gone", "two") == std::vector<std::string>{"worker-a"});
    CHECK(lines_of(order) == std::vector<std::string>{"one", "two"});
  }

  TEST_CASE("a scheduler killed mid-session recovers it from history: the worker that holds it keeps it") {
    troupe::test::ClusterSpec spec;
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string order = cluster.dir / "order", started = cluster.dir / "started", go = cluster.dir / "go";
    const std::string tasks =
        shell_task("one", "echo one >> " + order) + ", " +
        shell_task("two", "echo two >> " + order + "; touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.05; done",
                   R"("dependsOn": ["one"])") +
        ", " + shell_task("three", "echo three >> " + order, R"("dependsOn": ["two"])");
    const std::string session =
        session_of("s", {"one", "two", "three"},
                   R"("envEnter": )" + shell_action("echo enter >> " + order) + R"(, "envExit": )" +
                       shell_action("echo exit >> " + order));
    REQUIRE(client->start("kept", workflow_with_sessions("kept", tasks, session)) == "kept");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
    cluster.nodes["scheduler"]->kill(SIGKILL);
    (void)cluster.nodes["scheduler"]->wait();
    cluster.start("scheduler");
    client = troupe::test::connect(cluster.port);
    std::ofstream(go).close();
    const std::string result = client->result("kept", 30s);
    CHECK_MESSAGE(result == "SUCCESS", (result + "\n" + cli(cluster, {"status", "kept"}).output));
    // One session, entered once and exited once, every task on its worker.
    CHECK(lines_of(order) == std::vector<std::string>{"enter", "one", "two", "three", "exit"});
    const auto holder = ran_on(cluster, "kept", "one");
    REQUIRE(holder.size() == 1);
    CHECK(ran_on(cluster, "kept", "two") == holder);
    CHECK(ran_on(cluster, "kept", "three") == holder);
    auto status = cli(cluster, {"status", "kept"});
    CHECK_MESSAGE(contains(status.output, "s        CLOSED                1  " + holder[0]), status.output);
  }

  TEST_CASE("a recreate token takes a later workflow's session to the worker an earlier session ran on") {
    troupe::test::ClusterSpec spec;
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    REQUIRE(client->start("first", workflow_with_sessions("first", shell_task("one", "true"), session_of("s", {"one"}))) ==
            "first");
    REQUIRE(client->result("first", 30s) == "SUCCESS");
    const auto first = ran_on(cluster, "first", "one");
    REQUIRE(first.size() == 1);
    const std::string json = cli(cluster, {"status", "first", "--json"}).output;
    const std::string key = R"("recreateToken":")";
    const auto at = json.find(key);
    REQUIRE_MESSAGE(at != std::string::npos, json);
    const std::string token = json.substr(at + key.size(), json.find('"', at + key.size()) - at - key.size());
    REQUIRE(token.rfind("rt-", 0) == 0);
    // Placement alone would alternate between the two idle workers; the token keeps to the first.
    for (int run = 0; run < 3; ++run) {
      const std::string id = "again-" + std::to_string(run);
      REQUIRE(client->start(id, workflow_with_sessions(id, shell_task("one", "true"),
                                                       session_of("s", {"one"}, R"("recreateToken": ")" + token + "\""))) == id);
      REQUIRE(client->result(id, 30s) == "SUCCESS");
      CHECK(ran_on(cluster, id, "one") == first);
    }
    auto refused = client->start("forged", workflow_with_sessions("forged", shell_task("one", "true"),
                                                                  session_of("s", {"one"}, R"("recreateToken": "rt-0123")")));
    CHECK_MESSAGE(contains(refused, "is not a recreate token"), refused);
  }

  TEST_CASE("a task failing for good fails its session; an operator's retry runs it in a new instance of the session") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string order = cluster.dir / "order", flag = cluster.dir / "flag";
    const std::string tasks =
        shell_task("one", "echo one >> " + order + "; [ -e " + flag + " ] && exit 0; touch " + flag + "; exit 4") + ", " +
        shell_task("two", "echo two >> " + order, R"("dependsOn": ["one"])");
    const std::string session =
        session_of("s", {"one", "two"},
                   R"("envEnter": )" + shell_action("echo enter >> " + order) + R"(, "envExit": )" +
                       shell_action("echo exit >> " + order));
    REQUIRE(client->start("again", workflow_with_sessions("again", tasks, session)) == "again");
    const std::string failed = client->result("again", 30s);
    CHECK_MESSAGE(contains(failed, "FAILED: task 'one' failed: ExitCode:4"), failed);
    CHECK(lines_of(order) == std::vector<std::string>{"enter", "one", "exit"});
    auto status = cli(cluster, {"status", "again"});
    CHECK_MESSAGE(contains(status.output, "s        FAILED                1  worker-a  SUCCEEDED   SUCCEEDED   TaskFailed: task 'one' failed: ExitCode:4"),
                  status.output);
    auto retried = cli(cluster, {"retry", "again", "one"});
    REQUIRE_MESSAGE(retried.code == 0, retried.output);
    CHECK(client->result("again", 30s) == "SUCCESS");
    CHECK(lines_of(order) == std::vector<std::string>{"enter", "one", "exit", "enter", "one", "two", "exit"});
    status = cli(cluster, {"status", "again"});
    CHECK_MESSAGE(contains(status.output, "s        CLOSED                1  worker-a  SUCCEEDED   SUCCEEDED"), status.output);
  }

  TEST_CASE("a task queued on the session's worker behind one that fails for good is never attempted") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string ran = cluster.dir / "ran";
    // Both are ready at once and both go to the worker (two slots), which runs a first: b waits
    // in the session behind it.
    const std::string tasks = shell_task("a", "sleep 1; exit 4") + ", " + shell_task("b", "touch " + ran);
    REQUIRE(client->start("queued", workflow_with_sessions("queued", tasks, session_of("s", {"a", "b"}))) == "queued");
    const std::string failed = client->result("queued", 30s);
    CHECK_MESSAGE(contains(failed, "FAILED: task 'a' failed: ExitCode:4"), failed);
    CHECK_FALSE(fs::exists(ran));
    auto status = cli(cluster, {"status", "queued"});
    CHECK_MESSAGE(contains(status.output, "b     NEVER_ATTEMPTED        0  "), status.output);
    auto json = cli(cluster, {"status", "queued", "--json"});
    CHECK_MESSAGE(contains(json.output, R"("name":"b","state":"NEVER_ATTEMPTED","attempt":0)"), json.output);
    // It was sent to the worker, which never started it: no start time either.
    const std::string log = read_file(cluster.logs("worker-a") + "/sessions/queued/s.log");
    CHECK_MESSAGE(contains(log, "NEVER_ATTEMPTED"), log);
  }

  TEST_CASE("a worker stopping on SIGTERM runs its session's envExit; the session is recreated on another worker") {
    troupe::test::ClusterSpec spec;
    spec.shutdown_grace = "1s";
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string order = cluster.dir / "order", started = cluster.dir / "started";
    const std::string session =
        session_of("s", {"one", "two"},
                   R"("onFailure": "recreate", "envEnter": )" + shell_action("echo enter >> " + order) +
                       R"(, "envExit": )" + shell_action("echo exit >> " + order));
    REQUIRE(client->start("stopped", workflow_with_sessions("stopped", one_then_long_two(order, started), session)) ==
            "stopped");
    const std::string holder = stop_holder(cluster, "stopped", started, SIGTERM);
    const std::string result = client->result("stopped", 30s);
    CHECK_MESSAGE(result == "SUCCESS", (result + "\n" + cli(cluster, {"status", "stopped"}).output));
    // two was interrupted (its attempt kept), envExit ran before the worker exited, and the
    // recreated session entered anew elsewhere.
    CHECK(lines_of(order) == std::vector<std::string>{"enter", "one", "two", "exit", "enter", "two", "exit"});
    const std::string other = holder == "worker-a" ? "worker-b" : "worker-a";
    auto status = cli(cluster, {"status", "stopped"});
    CHECK_MESSAGE(contains(status.output, "s        CLOSED                2  " + other), status.output);
    CHECK_MESSAGE(contains(status.output, "two   SUCCESS                1  " + other), status.output);
  }

  TEST_CASE("an envEnter its worker interrupts to shut down is the worker's loss, not the session's failure") {
    troupe::test::ClusterSpec spec;
    spec.shutdown_grace = "1s";
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string entering = cluster.dir / "entering";
    const std::string session = session_of(
        "s", {"one"},
        R"("onFailure": "recreate", "envEnter": )" +
            shell_action("[ -e " + entering + " ] && exit 0; touch " + entering + "; exec sleep 30"));
    REQUIRE(client->start("cut", workflow_with_sessions("cut", shell_task("one", "true"), session)) == "cut");
    REQUIRE(eventually([&] { return fs::exists(entering); }, 20s));
    std::string holder;
    for (const auto& worker : cluster.spec.workers) {
      if (fs::exists(cluster.logs(worker.name) + "/sessions/cut/s")) holder = worker.name;
    }
    REQUIRE(!holder.empty());
    cluster.nodes[holder]->kill(SIGTERM);
    CHECK(cluster.nodes[holder]->wait() == 0);
    const std::string result = client->result("cut", 30s);
    CHECK_MESSAGE(result == "SUCCESS", (result + "\n" + cli(cluster, {"status", "cut"}).output));
    const std::string other = holder == "worker-a" ? "worker-b" : "worker-a";
    CHECK(ran_on(cluster, "cut", "one") == std::vector<std::string>{other});
  }

  TEST_CASE("a drained worker's session moves to another worker: envExit there first, and no recreation is used") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt, "", 1}, {"worker-b", {{"default", 2}}, std::nullopt, "", 1}};
    Cluster cluster(spec);
    start_all(cluster);
    auto client = troupe::test::connect(cluster.port);
    const std::string order = cluster.dir / "order", started = cluster.dir / "started", go = cluster.dir / "go";
    // onFailure is fail: a lost worker would fail the workflow; a drain moves the session.
    const std::string session = session_of("env", {"one", "two"},
                                           R"("envEnter": )" + shell_action("echo enter >> " + order) +
                                               R"(, "envExit": )" + shell_action("echo exit >> " + order));
    const std::string tasks =
        shell_task("one", "echo one >> " + order + "; touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.05; done") +
        ", " + shell_task("two", "echo two >> " + order, R"("dependsOn": ["one"])");
    REQUIRE(client->start("moved", workflow_with_sessions("moved", tasks, session)) == "moved");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
    const auto holder = ran_on(cluster, "moved", "one");
    REQUIRE(holder.size() == 1);
    const std::string other = holder[0] == "worker-a" ? "worker-b" : "worker-a";
    // An eventual drain: the running task finishes there.
    auto drained = cli(cluster, {"worker", "drain", holder[0]});
    REQUIRE_MESSAGE(drained.code == 0, drained.output);
    std::ofstream(go).close();
    const std::string result = client->result("moved", 30s);
    REQUIRE_MESSAGE(result == "SUCCESS", (result + "\n" + cli(cluster, {"status", "moved"}).output));
    CHECK(lines_of(order) == std::vector<std::string>{"enter", "one", "exit", "enter", "two", "exit"});
    CHECK(ran_on(cluster, "moved", "two") == std::vector<std::string>{other});
    auto status = cli(cluster, {"status", "moved"});
    CHECK_MESSAGE(contains(status.output, "env      CLOSED                2  " + other), status.output);
    CHECK_MESSAGE(contains(status.output, "one   SUCCESS                1  " + holder[0]), status.output);
    CHECK_MESSAGE(contains(status.output, "two   SUCCESS                1  " + other), status.output);
    std::string shown;
    CHECK_MESSAGE(eventually([&] {
                    shown = cli(cluster, {"worker", holder[0]}).output;
                    return contains(shown, "DRAINED");
                  }, 20s),
                  shown);

    // An immediate drain of the worker holding another session interrupts its task, which runs
    // again under the same attempt where the session moved.
    REQUIRE(cli(cluster, {"worker", "undrain", holder[0]}).code == 0);
    const std::string again = cluster.dir / "again";
    const std::string long_one =
        shell_task("one", "[ -e " + again + " ] && exit 0; touch " + again + "; exec sleep 60") + ", " +
        shell_task("two", "true", R"("dependsOn": ["one"])");
    REQUIRE(client->start("moved-now", workflow_with_sessions("moved-now", long_one, session_of("env", {"one", "two"}))) ==
            "moved-now");
    REQUIRE(eventually([&] { return fs::exists(again); }, 20s));
    const auto first = ran_on(cluster, "moved-now", "one");
    REQUIRE(first.size() == 1);
    REQUIRE(cli(cluster, {"worker", "drain", first[0], "--immediate"}).code == 0);
    const std::string now_result = client->result("moved-now", 30s);
    REQUIRE_MESSAGE(now_result == "SUCCESS", (now_result + "\n" + cli(cluster, {"status", "moved-now"}).output));
    const std::string second = first[0] == "worker-a" ? "worker-b" : "worker-a";
    auto now_status = cli(cluster, {"status", "moved-now"});
    CHECK_MESSAGE(contains(now_status.output, "one   SUCCESS                1  " + second), now_status.output);
    CHECK_MESSAGE(contains(now_status.output, "env      CLOSED                2  " + second), now_status.output);
  }
}
