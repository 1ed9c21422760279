// What an operator reads and sees of a workflow through the CLI: `troupe logs` of tasks on a
// worker process of their own (while they run with --follow, after they ended, a failed attempt,
// and every way it refuses), and `troupe describe WORKFLOW`'s DAG, parsed back with Graphviz.
// The troupe CLI ($TROUPE_CLI) against a real scheduler and worker.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test/support/child_process.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/workflows.hpp"

using namespace std::chrono_literals;
using troupe::test::ChildProcess;
using troupe::test::CliRun;
using troupe::test::Cluster;
using troupe::test::contains;
using troupe::test::shell_task;

namespace {

/// A scheduler and one worker process, and the CLI pointed at the scheduler.
struct LogsCluster {
  LogsCluster() : cluster(spec()) {
    cluster.start("scheduler");
    cluster.start("worker-a");
    troupe::test::connect(cluster.port);
  }

  static troupe::test::ClusterSpec spec() {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt}};
    return spec;
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(cluster.port); }

  /// `troupe WORDS... --address SCHEDULER`, stdout and stderr together.
  CliRun cli(std::vector<std::string> words) const {
    words.insert(words.end(), {"--address", address()});
    return troupe::test::troupe_cli(words);
  }

  /// Submits definition `json` as workflow `id`; its submission's exit code.
  int submit(const std::string& id, const std::string& json) const {
    const std::string path = dir() + "/" + id + ".json";
    std::ofstream(path) << json;
    return cli({"submit", path, "--id", id}).code;
  }

  /// Polls `troupe status ID --json` (30 s at most) until the workflow is in `state`.
  bool workflow_reaches(const std::string& id, const std::string& state) const {
    return troupe::test::eventually(
        [&] { return contains(cli({"status", id, "--json"}).output, R"("state":")" + state + "\""); }, 30s);
  }

  std::string dir() const { return cluster.dir.path(); }

  Cluster cluster;
};

/// Runs `argv` (argv[0] found in PATH) to its end, 30 s at most; its stdout, and its exit code.
std::pair<int, std::string> run_program(std::vector<std::string> argv) {
  argv.insert(argv.begin(), "/usr/bin/env");
  ChildProcess child(argv);
  std::string output = troupe::test::read_output(child, 30s);
  if (troupe::test::still_running(child)) child.kill(SIGKILL);
  const int status = child.wait();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

bool have_program(const std::string& name) {
  return run_program({"sh", "-c", "command -v " + name + " >/dev/null"}).first == 0;
}

/// A graph as Graphviz reads it back: each node's label and fill colour by its name, each
/// edge as "TAIL_LABEL -> HEAD_LABEL" (first label lines, the task names), and its clusters'
/// labels.
struct ParsedGraph {
  std::map<std::string, std::string> colour_of;  ///< task name -> fillcolor
  std::map<std::string, std::string> label_of;   ///< task name -> whole label
  std::set<std::string> edges;
  std::vector<std::string> clusters;
};

/// The first line of a Graphviz label as written ("name\nSTATE" -> "name").
std::string first_line(const std::string& label) { return label.substr(0, label.find("\\n")); }

ParsedGraph parse_with_gvpr(const std::string& dot_file) {
  // gvpr reads the graph with Graphviz's own parser and prints what it found, a line each.
  const std::string program =
      R"(BEG_G { graph_t g; for (g = fstsubg($G); g != NULL; g = nxtsubg(g))
             printf("cluster|%s|%s\n", g.name, g.label); }
         N { printf("node|%s|%s\n", $.label, $.fillcolor); }
         E { printf("edge|%s|%s\n", $.tail.label, $.head.label); })";
  auto [code, output] = run_program({"gvpr", program, dot_file});
  REQUIRE_MESSAGE(code == 0, output);
  ParsedGraph graph;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string field; std::getline(parts, field, '|');) fields.push_back(field);
    if (fields.size() != 3) continue;
    if (fields[0] == "node") {
      graph.colour_of[first_line(fields[1])] = fields[2];
      graph.label_of[first_line(fields[1])] = fields[1];
    } else if (fields[0] == "edge") {
      graph.edges.insert(first_line(fields[1]) + " -> " + first_line(fields[2]));
    } else {
      graph.clusters.push_back(fields[1] + " " + fields[2]);
    }
  }
  return graph;
}

}  // namespace

TEST_SUITE("integration.cli_logs") {
  TEST_CASE("logs --follow shows a remote task's lines as it writes them and exits once it ended; logs after the end show them all") {
    LogsCluster c;
    const std::string d = c.dir();
    // It writes a line, waits for $D/go, writes another to stderr and one more, and ends.
    REQUIRE(c.submit("follow", troupe::test::workflow_of(
                                   "follow", shell_task("talk", "echo first line; while [ ! -e " + d +
                                                                    "/go ]; do sleep 0.05; done; echo second line >&2; "
                                                                    "echo third line"))) == 0);
    // Started before the task may have: --follow waits for it.
    ChildProcess follow({"/bin/sh", "-c",
                         "exec '" + troupe::test::cli_binary() + "' logs follow talk --follow --address " + c.address() +
                             " 2>&1"});
    auto first = follow.read_line(30s);
    REQUIRE(first);
    CHECK(*first == "first line");
    // Seen while the task runs: it waits for go, and the command waits with it.
    CHECK(contains(c.cli({"status", "follow", "--json"}).output, R"("name":"talk","state":"RUNNING")"));
    CHECK(troupe::test::still_running(follow));

    std::ofstream(d + "/go").put('\n');
    auto second = follow.read_line(30s);
    REQUIRE(second);
    CHECK(*second == "second line");
    auto third = follow.read_line(30s);
    REQUIRE(third);
    CHECK(*third == "third line");
    CHECK_FALSE(follow.read_line(30s));  // the end of its output: it exits
    REQUIRE(troupe::test::eventually([&] { return !troupe::test::still_running(follow); }, 30s));
    const int status = follow.wait();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    REQUIRE(c.workflow_reaches("follow", "SUCCESS"));

    // After the end: the whole log, and with no TASK, every task's after a header.
    auto after = c.cli({"logs", "follow", "talk"});
    CHECK_MESSAGE(after.code == 0, after.output);
    CHECK(after.output == "first line\nsecond line\nthird line\n");
    auto every = c.cli({"logs", "follow"});
    CHECK_MESSAGE(every.code == 0, every.output);
    CHECK(every.output == "==> talk (attempt 1, worker worker-a) <==\nfirst line\nsecond line\nthird line\n");
    // A follow of a task that ended returns at once with the same.
    auto ended = c.cli({"logs", "follow", "talk", "--follow"});
    CHECK(ended.code == 0);
    CHECK(ended.output == after.output);
  }

  TEST_CASE("logs --follow follows an attempt that its worker's shutdown moved to another worker, to its end") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 1}}, std::nullopt}, {"worker-b", {{"default", 1}}, std::nullopt}};
    spec.shutdown_grace = "300ms";
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    troupe::test::connect(cluster.port);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    const std::string d = cluster.dir.path();
    // The first run says so and waits to be interrupted; the same attempt run again ends.
    const std::string path = d + "/moving.json";
    std::ofstream(path) << troupe::test::workflow_of(
        "moving", shell_task("job", "if [ -e " + d + "/ran ]; then echo second part; exit 0; fi; touch " + d +
                                        "/ran; echo first part; exec sleep 60"));
    REQUIRE(troupe::test::troupe_cli({"submit", path, "--id", "moving", "--address", address}).code == 0);
    ChildProcess follow({"/bin/sh", "-c",
                         "exec '" + troupe::test::cli_binary() + "' logs moving job --follow --address " + address +
                             " 2>&1"});
    auto first = follow.read_line(30s);
    REQUIRE(first);
    CHECK(*first == "first part");
    cluster.nodes["worker-a"]->kill(SIGTERM);  // its grace runs out: the attempt is interrupted
    cluster.nodes["worker-a"]->wait();
    cluster.start("worker-b");
    const std::string rest = troupe::test::read_output(follow, 30s);
    // The second run's part after a header of its own (a blank line parts it from the first).
    CHECK_MESSAGE(rest == "\n==> job (attempt 1, worker worker-b) <==\nsecond part\n", rest);
    REQUIRE(troupe::test::eventually([&] { return !troupe::test::still_running(follow); }, 30s));
    const int status = follow.wait();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  TEST_CASE("logs of a failed attempt, by attempt number; refusals say why and exit 2") {
    LogsCluster c;
    // flaky fails its first attempt and succeeds its second; broken fails for good; its
    // downstream never starts; a handler writes no log.
    const std::string tasks =
        shell_task("flaky", "echo attempt $TROUPE_ATTEMPT; test $TROUPE_ATTEMPT -ge 2",
                   R"("retry": {"initialInterval": "100ms", "maximumAttempts": 2})") +
        ", " + shell_task("broken", "echo about to fail >&2; exit 7") + ", " +
        shell_task("after", "echo never", R"("dependsOn": ["broken"])") + R"(, {"name": "quiet", "handler": "noop"})";
    REQUIRE(c.submit("mixed", troupe::test::workflow_of("mixed", tasks)) == 0);
    REQUIRE(c.workflow_reaches("mixed", "FAILED"));

    auto last = c.cli({"logs", "mixed", "flaky"});
    CHECK_MESSAGE(last.code == 0, last.output);
    CHECK(last.output == "attempt 2\n");
    auto failed = c.cli({"logs", "mixed", "flaky", "--attempt", "1"});
    CHECK_MESSAGE(failed.code == 0, failed.output);
    CHECK(failed.output == "attempt 1\n");
    auto broken = c.cli({"logs", "mixed", "broken"});
    CHECK_MESSAGE(broken.code == 0, broken.output);
    CHECK(broken.output == "about to fail\n");
    // Every task that started: the handler and the one that never started are left out.
    auto every = c.cli({"logs", "mixed"});
    CHECK_MESSAGE(every.code == 0, every.output);
    CHECK(every.output ==
          "==> flaky (attempt 2, worker worker-a) <==\nattempt 2\n\n==> broken (attempt 1, worker worker-a) <==\n"
          "about to fail\n");

    auto no_attempt = c.cli({"logs", "mixed", "flaky", "--attempt", "3"});
    CHECK(no_attempt.code == 2);
    CHECK_MESSAGE(contains(no_attempt.output, "task 'flaky' has run attempts 1 to 2: it has no attempt 3"),
                  no_attempt.output);
    auto bad_attempt = c.cli({"logs", "mixed", "flaky", "--attempt", "zero"});
    CHECK(bad_attempt.code == 2);
    CHECK(contains(bad_attempt.output, "--attempt takes an attempt number from 1"));
    auto unknown_task = c.cli({"logs", "mixed", "flakey"});
    CHECK(unknown_task.code == 2);
    CHECK_MESSAGE(contains(unknown_task.output, "workflow 'mixed' has no task 'flakey' (did you mean 'flaky'?)"),
                  unknown_task.output);
    auto unknown_workflow = c.cli({"logs", "nobody", "flaky"});
    CHECK(unknown_workflow.code == 2);
    CHECK(contains(unknown_workflow.output, "no workflow has id 'nobody'"));
    auto never = c.cli({"logs", "mixed", "after"});
    CHECK(never.code == 2);
    CHECK_MESSAGE(contains(never.output, "task 'after' has not started (UPSTREAM_FAILED), so it has no log yet"),
                  never.output);
    // The workflow is over, so waiting would be for ever: --follow refuses the same.
    auto never_follow = c.cli({"logs", "mixed", "after", "--follow"});
    CHECK(never_follow.code == 2);
    CHECK(contains(never_follow.output, "has not started"));
    auto handler = c.cli({"logs", "mixed", "quiet"});
    CHECK(handler.code == 2);
    CHECK_MESSAGE(contains(handler.output, "task 'quiet' runs a handler"), handler.output);
    CHECK(c.cli({"logs", "mixed"}).code == 0);
    CHECK(c.cli({"logs"}).code == 2);  // ID missing
  }

  TEST_CASE("logs of a task whose worker is not connected say where the log is, and exit 1") {
    LogsCluster c;
    REQUIRE(c.submit("gone", troupe::test::workflow_of("gone", shell_task("wrote", "echo kept on the worker"))) == 0);
    REQUIRE(c.workflow_reaches("gone", "SUCCESS"));
    REQUIRE(c.cli({"logs", "gone", "wrote"}).output == "kept on the worker\n");
    c.cluster.nodes.at("worker-a")->kill(SIGKILL);
    c.cluster.nodes.at("worker-a")->wait();
    CliRun lost;
    // The scheduler notices the closed connection at once; polled all the same.
    REQUIRE(troupe::test::eventually([&] { return (lost = c.cli({"logs", "gone", "wrote"})).code == 1; }, 20s));
    CHECK_MESSAGE(contains(lost.output, "worker 'worker-a', which ran attempt 1 of task 'wrote', is not connected now; "
                                        "its log is at "),
                  lost.output);
    CHECK(contains(lost.output, "/logs/worker-a/gone/wrote.1.1.log on "));
    // The file is where the message says.
    std::ifstream log(c.cluster.logs("worker-a") + "/gone/wrote.1.1.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    CHECK(text == "kept on the worker\n");
    // Started again, the worker serves the log of what its earlier process ran.
    c.cluster.start("worker-a");
    CliRun back;
    REQUIRE(troupe::test::eventually([&] { return (back = c.cli({"logs", "gone", "wrote"})).code == 0; }, 30s));
    CHECK(back.output == "kept on the worker\n");
  }

  TEST_CASE("describe WORKFLOW draws its DAG: dot that Graphviz reads back with the right nodes, edges and colours, and SVG") {
    REQUIRE_MESSAGE(have_program("gvpr"), "Graphviz (gvpr, dot) is needed: tools/setup installs it");
    LogsCluster c;
    const std::string tasks = shell_task("fetch", "true") + ", " +
                              shell_task("left", "exit 3", R"("dependsOn": ["fetch"])") + ", " +
                              shell_task("right \\\"r\\\"", "true", R"("dependsOn": ["fetch"])") + ", " +
                              shell_task("join", "true", R"("dependsOn": ["left", "right \"r\""])") + ", " +
                              shell_task("boxed", "true");
    const std::string definition = troupe::test::workflow_with_sessions(
        "drawn", tasks, troupe::test::session_of("box", {"boxed"}));
    REQUIRE(c.submit("drawn", definition) == 0);
    REQUIRE(c.workflow_reaches("drawn", "FAILED"));

    auto dot = c.cli({"describe", "drawn", "--format", "dot"});
    REQUIRE_MESSAGE(dot.code == 0, dot.output);
    const std::string dot_file = c.dir() + "/drawn.dot";
    std::ofstream(dot_file) << dot.output;
    CHECK(run_program({"dot", "-Tcanon", dot_file}).first == 0);
    const ParsedGraph graph = parse_with_gvpr(dot_file);
    CHECK(graph.colour_of == std::map<std::string, std::string>{{"fetch", "palegreen"},
                                                                 {"left", "salmon"},
                                                                 {"right \"r\"", "palegreen"},
                                                                 {"join", "mistyrose"},
                                                                 {"boxed", "palegreen"}});
    CHECK(graph.label_of.at("left") == "left\\nFAILURE");
    CHECK(graph.label_of.at("join") == "join\\nUPSTREAM_FAILED");
    CHECK(graph.edges ==
          std::set<std::string>{"fetch -> left", "fetch -> right \"r\"", "left -> join", "right \"r\" -> join"});
    REQUIRE(graph.clusters.size() == 1);
    CHECK(graph.clusters[0] == "cluster_0 session box\\nCLOSED");
    // Without --format it is dot too.
    CHECK(c.cli({"describe", "drawn"}).output == dot.output);

    auto svg = c.cli({"describe", "drawn", "--format", "svg"});
    REQUIRE_MESSAGE(svg.code == 0, svg.output);
    CHECK(svg.output.starts_with("<?xml"));
    CHECK(contains(svg.output, "<svg"));
    CHECK(contains(svg.output, "</svg>"));
    CHECK(contains(svg.output, "fill=\"salmon\""));

    auto bad = c.cli({"describe", "drawn", "--format", "png"});
    CHECK(bad.code == 2);
    CHECK(contains(bad.output, "--format takes dot or svg"));
    CHECK(c.cli({"describe", "nobody"}).code == 2);
    // Graphviz missing: a clear error, not a crash.
    ChildProcess without({"/bin/sh", "-c",
                          "PATH=/nonexistent exec '" + troupe::test::cli_binary() +
                              "' describe drawn --format svg --address " + c.address() + " 2>&1"});
    const std::string said = troupe::test::read_output(without, 30s);
    const int status = without.wait();
    CHECK(WEXITSTATUS(status) == 1);
    CHECK_MESSAGE(contains(said, "needs Graphviz's dot, which is not on PATH"), said);
    // The state machines are still `describe states`.
    auto states = troupe::test::troupe_cli({"describe", "states", "--format", "dot"});
    CHECK(states.code == 0);
    CHECK(contains(states.output, "digraph task"));
  }
}
