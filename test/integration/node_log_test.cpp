// What nodes log about what happens in them, read back from real troupe-node processes: each
// workflow's start and close, operators' pauses, workers' registrations and status changes, a
// lost worker's failover, a restarted scheduler's recovery; in text and in JSON, at the level
// the config sets.
#include <doctest/doctest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/workflows.hpp"

using namespace std::chrono_literals;
using troupe::ParsedLogLine;
using troupe::test::ChildProcess;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::eventually;
using troupe::test::shell_task;
using troupe::test::workflow_of;

namespace {

namespace fs = std::filesystem;

/// Starts node `name` of the cluster with its stderr appended to `dir/AS.log` (a file, so a
/// busy node never waits for the test to read a pipe), as cluster.nodes[AS]; `as` is `name`
/// unless a second process of the node is wanted.
void start_logging(Cluster& cluster, const std::string& name, std::string as = "") {
  if (as.empty()) as = name;
  const std::string log = cluster.dir / (as + ".log");
  cluster.nodes[as] = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" --config \"$1\" --node \"$2\" 2>>\"$3\"",
                               troupe::test::node_binary(), cluster.config, name, log});
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Every line node `name` logged so far, read back.
std::vector<ParsedLogLine> logged(Cluster& cluster, const std::string& name, std::string* raw = nullptr) {
  const std::string text = read_file(cluster.dir / (name + ".log"));
  if (raw) *raw = text;
  std::vector<ParsedLogLine> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (auto parsed = troupe::parse_log_line(line)) lines.push_back(std::move(*parsed));
  }
  return lines;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

bool matches(const ParsedLogLine& line, const std::string& message, const Fields& fields) {
  if (line.message != message) return false;
  for (const auto& [key, value] : fields) {
    if (line.field(key) != value) return false;
  }
  return true;
}

/// The first line of node `name` saying `message` with `fields`, once it is there (20 s at most).
std::optional<ParsedLogLine> await_line(Cluster& cluster, const std::string& name, const std::string& message,
                                        const Fields& fields = {}) {
  std::optional<ParsedLogLine> found;
  eventually([&] {
    for (auto& line : logged(cluster, name)) {
      if (matches(line, message, fields)) {
        found = std::move(line);
        return true;
      }
    }
    return false;
  }, 20s);
  return found;
}

size_t count_lines(Cluster& cluster, const std::string& name, const std::string& message, const Fields& fields = {}) {
  size_t n = 0;
  for (const auto& line : logged(cluster, name)) n += matches(line, message, fields) ? 1 : 0;
  return n;
}

/// A scheduler and worker-a (2 slots), every node logging at `level` (empty: the default).
ClusterSpec one_worker(const std::string& level = "") {
  ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
  spec.log_level = level;
  return spec;
}

/// Starts the cluster's scheduler (logging to its file) and worker-a, and runs workflow `id` of
/// one shell task `t` to its success.
void run_one(Cluster& cluster, const std::string& id) {
  start_logging(cluster, "scheduler");
  cluster.start("worker-a");
  auto client = troupe::test::connect(cluster.port);
  REQUIRE(client->start(id, workflow_of("one", shell_task("t", "true"))) == id);
  CHECK(client->result(id, 30s) == "SUCCESS");
}

std::string address(const Cluster& cluster) { return "127.0.0.1:" + std::to_string(cluster.port); }

}  // namespace

TEST_SUITE("integration.node_log") {
  TEST_CASE("the scheduler logs each workflow's start and close with its id, definition, state and duration, and a pause") {
    Cluster cluster(one_worker());
    start_logging(cluster, "scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);

    REQUIRE(client->start("fine-1", workflow_of("fine", shell_task("t", "true"))) == "fine-1");
    REQUIRE(client->start("broken-1", workflow_of("broken", shell_task("t", "exit 3", R"("retry": {"maximumAttempts": 1})"))) ==
            "broken-1");
    CHECK(client->result("fine-1", 30s) == "SUCCESS");
    CHECK(client->result("broken-1", 30s).rfind("FAILED", 0) == 0);

    auto started = await_line(cluster, "scheduler", "workflow started", {{"workflow", "fine-1"}});
    REQUIRE(started);
    CHECK(started->level == "INFO");
    CHECK(started->node == "scheduler");
    CHECK(started->field("definition") == "fine");
    CHECK(started->field("tasks") == "1");
    auto closed = await_line(cluster, "scheduler", "workflow closed", {{"workflow", "fine-1"}});
    REQUIRE(closed);
    CHECK(closed->field("state") == "SUCCESS");
    CHECK(closed->field("definition") == "fine");
    REQUIRE(closed->field("duration_ms"));
    CHECK(std::stoll(*closed->field("duration_ms")) >= 0);

    auto failed = await_line(cluster, "scheduler", "workflow closed", {{"workflow", "broken-1"}, {"state", "FAILED"}});
    REQUIRE(failed);
    CHECK_MESSAGE(failed->field("reason").value_or("").find("ExitCode:3") != std::string::npos, failed->field("reason").value_or(""));
    auto task = await_line(cluster, "scheduler", "task ended without success",
                           {{"workflow", "broken-1"}, {"task", "t"}, {"worker", "worker-a"}, {"to", "FAILURE"}});
    REQUIRE(task);
    CHECK(task->field("attempt") == "1");
    CHECK(task->field("reason").value_or("").find("ExitCode:3") != std::string::npos);
    // A success's task transitions are debug lines, which the default level leaves out.
    CHECK(count_lines(cluster, "scheduler", "task state changed") == 0);

    // An operator's pause: the workflow's state change, with what made it.
    const std::string gate = cluster.dir / "gate";
    REQUIRE(client->start("held-1", workflow_of("held", shell_task("wait", "while [ ! -e " + gate + " ]; do sleep 0.05; done") +
                                                            ", " + shell_task("then", "true", R"("dependsOn": ["wait"])"))) ==
            "held-1");
    auto paused = troupe::test::troupe_cli({"pause", "held-1", "--address", address(cluster)});
    REQUIRE_MESSAGE(paused.code == 0, paused.output);
    auto change = await_line(cluster, "scheduler", "workflow state changed",
                             {{"workflow", "held-1"}, {"from", "RUNNING"}, {"event", "PAUSE"}});
    REQUIRE(change);
    CHECK(change->field("to") == "READY_PAUSE");  // its running task may finish first
    std::ofstream(gate).put('\n');
    CHECK(await_line(cluster, "scheduler", "workflow state changed",
                     {{"workflow", "held-1"}, {"from", "READY_PAUSE"}, {"to", "PAUSED"}}));
  }

  TEST_CASE("in JSON: a worker's registration, its loss, its status changes and the failover of its task, with ids") {
    ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 1}}, std::nullopt}, {"worker-b", {{"default", 1}}, std::nullopt}};
    spec.log_format = "json";
    Cluster cluster(spec);
    start_logging(cluster, "scheduler");
    start_logging(cluster, "worker-a");
    auto client = troupe::test::connect(cluster.port);
    REQUIRE(await_line(cluster, "scheduler", "worker registered", {{"worker", "worker-a"}}));
    REQUIRE(await_line(cluster, "worker-a", "registered with the scheduler", {{"scheduler", address(cluster)}}));

    const std::string started = cluster.dir / "started";
    REQUIRE(client->start("moved-1", workflow_of("moved", shell_task("t", "[ -e " + started + " ] && exit 0; touch " +
                                                                              started + "; exec sleep 60",
                                                                          R"("retry": {"initialInterval": "100ms", "maximumAttempts": 2})"))) ==
            "moved-1");
    REQUIRE(eventually([&] { return fs::exists(started); }, 20s));
    cluster.nodes["worker-a"]->kill(SIGKILL);
    cluster.nodes["worker-a"]->wait();
    start_logging(cluster, "worker-b");
    CHECK(client->result("moved-1", 30s) == "SUCCESS");

    auto lost = await_line(cluster, "scheduler", "worker status changed", {{"worker", "worker-a"}, {"to", "NOT_RESPONDING"}});
    REQUIRE(lost);
    CHECK(lost->level == "WARN");
    CHECK(lost->field("from") == "STARTED");
    auto failing_over = await_line(cluster, "scheduler", "failing over a worker's invocations",
                                   {{"worker", "worker-a"}, {"invocations", "1"}});
    REQUIRE(failing_over);
    auto moved = await_line(cluster, "scheduler", "task failed over", {{"workflow", "moved-1"}, {"task", "t"}, {"worker", "worker-a"}});
    REQUIRE(moved);
    CHECK(moved->level == "WARN");
    CHECK(moved->field("attempt") == "1");
    CHECK(await_line(cluster, "scheduler", "task to be retried", {{"workflow", "moved-1"}, {"task", "t"}}));
    CHECK(await_line(cluster, "scheduler", "worker registered", {{"worker", "worker-b"}}));
    CHECK(await_line(cluster, "scheduler", "workflow closed", {{"workflow", "moved-1"}, {"state", "SUCCESS"}}));

    // A second process with worker-b's name is refused while worker-b lives; it retries every
    // heartbeat (200 ms here), and the scheduler says so once.
    start_logging(cluster, "worker-b", "impostor");
    REQUIRE(await_line(cluster, "scheduler", "worker registration refused: its shard is held by a live instance",
                       {{"worker", "worker-b"}}));
    const auto window = std::chrono::steady_clock::now() + 2s;  // ten retries
    while (std::chrono::steady_clock::now() < window) {
      REQUIRE(count_lines(cluster, "scheduler", "worker registration refused: its shard is held by a live instance") == 1);
      std::this_thread::sleep_for(100ms);
    }
    cluster.nodes["impostor"]->kill(SIGKILL);
    cluster.nodes["impostor"]->wait();

    // Every line of every node is one JSON object.
    for (const std::string node : {"scheduler", "worker-b"}) {
      std::string raw;
      const auto lines = logged(cluster, node, &raw);
      std::istringstream in(raw);
      size_t n = 0;
      for (std::string line; std::getline(in, line); ++n) CHECK_MESSAGE(line.starts_with("{\"time\":\""), line);
      CHECK(lines.size() == n);
      CHECK(n > 0);
    }
  }

  TEST_CASE("a scheduler started again logs how many open workflows it resumed, and why it stopped") {
    Cluster cluster(one_worker());
    start_logging(cluster, "scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    const std::string gate = cluster.dir / "gate";
    for (const std::string id : {"open-1", "open-2"}) {
      REQUIRE(client->start(id, workflow_of("open", shell_task("wait", "while [ ! -e " + gate + " ]; do sleep 0.05; done"))) == id);
    }
    REQUIRE(await_line(cluster, "scheduler", "workflow started", {{"workflow", "open-2"}}));
    client.reset();
    cluster.nodes["scheduler"]->kill(SIGTERM);
    cluster.nodes["scheduler"]->wait();
    CHECK(await_line(cluster, "scheduler", "stopping", {{"reason", "SIGTERM"}, {"exit_code", "0"}}));

    start_logging(cluster, "scheduler");
    auto resumed = await_line(cluster, "scheduler", "resumed open workflows");
    REQUIRE(resumed);
    CHECK(resumed->field("workflows") == "2");
    CHECK(resumed->field("duration_ms"));
    CHECK(count_lines(cluster, "scheduler", "ready") == 2);
    // Each revival is a debug line: a restart with many open workflows is one line, not many.
    CHECK(count_lines(cluster, "scheduler", "workflow state changed", {{"to", "FAILOVER"}}) == 0);
    CHECK(count_lines(cluster, "scheduler", "workflow state changed", {{"from", "FAILOVER"}}) == 0);
    std::ofstream(gate).put('\n');
    client = troupe::test::connect(cluster.port);
    CHECK(client->result("open-1", 30s) == "SUCCESS");
  }

  TEST_CASE("log_level warn leaves workflows' starts and closes out but still says a node is ready; debug adds each task's steps") {
    SUBCASE("warn") {
      Cluster cluster(one_worker("warn"));
      run_one(cluster, "quiet-1");
      REQUIRE(await_line(cluster, "scheduler", "ready"));
      CHECK(count_lines(cluster, "scheduler", "workflow started") == 0);
      CHECK(count_lines(cluster, "scheduler", "workflow closed") == 0);
      CHECK(count_lines(cluster, "scheduler", "worker registered") == 0);
    }
    SUBCASE("debug") {
      Cluster cluster(one_worker("debug"));
      run_one(cluster, "loud-1");
      auto dispatched = await_line(cluster, "scheduler", "task state changed",
                                   {{"workflow", "loud-1"}, {"task", "t"}, {"event", "DISPATCHED"}});
      REQUIRE(dispatched);
      CHECK(dispatched->level == "DEBUG");
      CHECK(dispatched->field("worker") == "worker-a");
      CHECK(await_line(cluster, "scheduler", "task state changed", {{"workflow", "loud-1"}, {"task", "t"}, {"to", "SUCCESS"}}));
      CHECK(await_line(cluster, "scheduler", "workflow closed", {{"workflow", "loud-1"}, {"state", "SUCCESS"}}));
    }
  }
}
