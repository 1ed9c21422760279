// The client commands as a user runs them: the troupe CLI ($TROUPE_CLI) against a real
// scheduler and worker, checked by output and exit code.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::contains;
using troupe::test::is_json;
using troupe::test::troupe_cli;

namespace {

troupe::test::ClusterSpec one_worker() {
  troupe::test::ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
  return spec;
}

/// Sets an environment variable for the CLI runs of a scope and restores what it was, so a
/// failed check cannot leave it set for later cases.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    set(value);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  void set(const std::string& value) { ::setenv(name_.c_str(), value.c_str(), 1); }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// Starts the scheduler and its worker; returns once the scheduler accepts connections.
void start(Cluster& cluster) {
  cluster.start("scheduler");
  cluster.start("worker-a");
  troupe::test::connect(cluster.port);
}

/// The first line of `path`, once the file has one (polled up to 30 s); empty if it never does.
std::string first_line_of(const std::string& path) {
  std::string line;
  troupe::test::eventually([&] {
    std::ifstream in(path);
    return static_cast<bool>(std::getline(in, line)) && !line.empty();
  }, std::chrono::seconds(30));
  return line;
}

}  // namespace

TEST_SUITE("integration.cli") {
  TEST_CASE("submit and result against a cluster: output and exit codes") {
    Cluster cluster(one_worker());
    start(cluster);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    const std::string dir = cluster.dir.path();
    std::ofstream(dir + "/ok.json") << R"({"name": "ok", "tasks": [
        {"name": "a", "handler": "noop"}, {"name": "b", "handler": "noop", "dependsOn": ["a"]}]})";
    std::ofstream(dir + "/fails.json") << R"({"name": "fails", "tasks": [
        {"name": "t", "shell": {"command": ["sh", "-c", "exit 3"]}}]})";
    std::ofstream(dir + "/broken.json") << R"({"name": "broken", "tasks": [
        {"name": "a", "handler": "noop", "dependsOn": ["nope"]}]})";

    SUBCASE("submit --wait prints the state and exits 0 when the workflow succeeds") {
      auto run = troupe_cli({"submit", dir + "/ok.json", "--id", "ok-1", "--wait", "--address", address});
      CHECK(run.code == 0);
      CHECK(contains(run.output, "ok-1 SUCCESS"));
    }
    SUBCASE("submit prints the id; result waits for the end; --json prints JSON") {
      auto submitted = troupe_cli({"submit", dir + "/ok.json", "--id", "ok-2", "--address", address});
      CHECK(submitted.code == 0);
      CHECK(submitted.output == "ok-2\n");
      auto result = troupe_cli({"result", "ok-2", "--json", "--address", address});
      CHECK(result.code == 0);
      CHECK(contains(result.output, R"("workflowId":"ok-2")"));
      CHECK(contains(result.output, R"("state":"SUCCESS")"));
    }
    SUBCASE("status shows the workflow and every task as recorded") {
      REQUIRE(troupe_cli({"submit", dir + "/ok.json", "--id", "st-1", "--wait", "--address", address}).code == 0);
      auto status = troupe_cli({"status", "st-1", "--address", address});
      CHECK(status.code == 0);
      CHECK(contains(status.output, "st-1 SUCCESS\n"));
      CHECK(contains(status.output, "TASK"));
      auto json = troupe_cli({"status", "st-1", "--json", "--address", address});
      CHECK(json.code == 0);
      CHECK(contains(json.output, R"({"name":"a","state":"SUCCESS","attempt":1,"worker":"worker-a")"));
      CHECK(contains(json.output, R"({"name":"b","state":"SUCCESS","attempt":1,"worker":"worker-a")"));
      REQUIRE(troupe_cli({"submit", dir + "/fails.json", "--id", "st-2", "--wait", "--address", address}).code == 1);
      auto failed = troupe_cli({"status", "st-2", "--address", address});
      CHECK(failed.code == 0);
      CHECK(contains(failed.output, "FAILED"));
      CHECK(contains(failed.output, "ExitCode:3"));
      CHECK(troupe_cli({"status", "no-such-workflow", "--address", address}).code == 2);
    }
    SUBCASE("a failed workflow exits 1 with its reason") {
      auto run = troupe_cli({"submit", dir + "/fails.json", "--wait", "--address", address});
      CHECK(run.code == 1);
      CHECK(contains(run.output, "FAILED"));
      CHECK(contains(run.output, "ExitCode:3"));
    }
    SUBCASE("an invalid definition exits 2 naming the problem's JSON path") {
      auto run = troupe_cli({"submit", dir + "/broken.json", "--address", address});
      CHECK(run.code == 2);
      CHECK(contains(run.output, "$.tasks[0].dependsOn[0]: unknown task 'nope'"));
    }
    SUBCASE("an unknown workflow id exits 2") {
      auto run = troupe_cli({"result", "no-such-workflow", "--address", address});
      CHECK(run.code == 2);
      CHECK(contains(run.output, "no-such-workflow"));
    }
    SUBCASE("the address comes from TROUPE_ADDRESS when --address is absent") {
      // First a free port where nothing listens: the run fails to reach exactly that address,
      // so the variable was read. (The default address may well have a scheduler on the
      // machine running the tests.)
      const std::string nowhere = "127.0.0.1:" + std::to_string(troupe::test::free_port());
      ScopedEnv env("TROUPE_ADDRESS", nowhere);
      auto run = troupe_cli({"submit", dir + "/ok.json", "--id", "ok-env", "--wait"});
      CHECK(run.code == 3);
      CHECK(contains(run.output, "cannot reach the scheduler at " + nowhere));
      env.set(address);
      auto with_env = troupe_cli({"submit", dir + "/ok.json", "--id", "ok-env", "--wait"});
      CHECK(with_env.code == 0);
      CHECK(contains(with_env.output, "ok-env SUCCESS"));
    }
    SUBCASE("an unreachable scheduler exits 3") {
      auto run = troupe_cli({"result", "x", "--address", "127.0.0.1:" + std::to_string(troupe::test::free_port())});
      CHECK(run.code == 3);
      CHECK(contains(run.output, "cannot reach the scheduler"));
    }
    SUBCASE("usage errors exit 2") {
      CHECK(troupe_cli({"submit"}).code == 2);
      CHECK(troupe_cli({"submit", dir + "/ok.json", "--bogus", "1"}).code == 2);
      CHECK(troupe_cli({"result", "x", "--timeout", "soon"}).code == 2);
    }
  }

  TEST_CASE("pause, resume and stop a running workflow") {
    Cluster cluster(one_worker());
    start(cluster);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    const std::string dir = cluster.dir.path();

    SUBCASE("a paused workflow starts nothing new until resumed") {
      std::ofstream(dir + "/gated.json") << R"({"name": "gated", "tasks": [
          {"name": "a", "shell": {"command": ["sh", "-c", "while [ ! -e )" << dir << R"(/gate ]; do sleep 0.05; done"]}},
          {"name": "b", "dependsOn": ["a"], "shell": {"command": ["touch", ")" << dir << R"(/b-ran"]}}]})";
      REQUIRE(troupe_cli({"submit", dir + "/gated.json", "--id", "gated", "--address", address}).code == 0);
      // Submitting an open workflow's id again is the same run, not a second one.
      auto again = troupe_cli({"submit", dir + "/gated.json", "--id", "gated", "--address", address});
      CHECK(again.code == 0);
      CHECK(again.output == "gated\n");
      auto paused = troupe_cli({"pause", "gated", "--address", address});
      CHECK(paused.code == 0);
      CHECK(contains(paused.output, "gated READY_PAUSE"));  // task a is still running
      std::ofstream(dir + "/gate").put('\n');
      // Once a ends the workflow is PAUSED; pausing again is idempotent and says so.
      CHECK(troupe::test::eventually([&] {
        auto again = troupe_cli({"pause", "gated", "--address", address});
        return again.code == 0 && contains(again.output, "gated PAUSED");
      }, 20s));
      CHECK_FALSE(std::filesystem::exists(dir + "/b-ran"));
      auto resumed = troupe_cli({"resume", "gated", "--address", address});
      CHECK(resumed.code == 0);
      CHECK(contains(resumed.output, "gated RUNNING"));
      auto result = troupe_cli({"result", "gated", "--address", address});
      CHECK(result.code == 0);
      CHECK(std::filesystem::exists(dir + "/b-ran"));
      // A finished workflow's id is not run again.
      auto finished = troupe_cli({"submit", dir + "/gated.json", "--id", "gated", "--address", address});
      CHECK(finished.code == 2);
      CHECK(contains(finished.output, "has finished"));
    }
    SUBCASE("a stopped workflow kills its task and ends STOPPED, exit 1") {
      std::ofstream(dir + "/long.json") << R"({"name": "long", "tasks": [
          {"name": "t", "shell": {"command": ["sleep", "60"]}}]})";
      REQUIRE(troupe_cli({"submit", dir + "/long.json", "--id", "long", "--address", address}).code == 0);
      auto stopped = troupe_cli({"stop", "long", "--address", address});
      CHECK(stopped.code == 0);
      auto result = troupe_cli({"result", "long", "--timeout", "30s", "--address", address});
      CHECK(result.code == 1);
      CHECK(contains(result.output, "long STOPPED"));
    }
    SUBCASE("control of an unknown workflow exits 2") {
      CHECK(troupe_cli({"stop", "nobody", "--address", address}).code == 2);
    }
  }

  TEST_CASE("rerun a finished workflow from a task") {
    Cluster cluster(one_worker());
    start(cluster);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    const std::string dir = cluster.dir.path();
    // Each task appends a line to its own file, so the files count the runs; b fails until
    // the file `fixed` exists.
    auto counting = [&](const std::string& name, const std::string& extra) {
      return "\"shell\": {\"command\": [\"sh\", \"-c\", \"echo run >> " + dir + "/" + name + ".runs" + extra + "\"]}";
    };
    std::ofstream(dir + "/rerun.json") << R"({"name": "rerun", "tasks": [
        {"name": "a", )" << counting("a", "") << R"(},
        {"name": "b", "dependsOn": ["a"], )" << counting("b", "; test -e " + dir + "/fixed") << R"(},
        {"name": "c", "dependsOn": ["b"], )" << counting("c", "") << R"(},
        {"name": "side", "dependsOn": ["a"], )" << counting("side", "") << R"(}]})";
    auto runs = [&](const std::string& task) {
      std::ifstream in(dir + "/" + task + ".runs");
      int lines = 0;
      for (std::string line; std::getline(in, line);) ++lines;
      return lines;
    };

    auto failed = troupe_cli({"submit", dir + "/rerun.json", "--id", "rr", "--wait", "--address", address});
    CHECK(failed.code == 1);
    CHECK(contains(failed.output, "rr FAILED: task 'b' failed: ExitCode:1"));

    // c needs b, which failed: the rerun is refused and says where to start instead.
    auto refused = troupe_cli({"rerun", "rr", "--from", "c", "--address", address});
    CHECK(refused.code == 2);
    CHECK(contains(refused.output, "rerun from 'b'"));
    CHECK(troupe_cli({"rerun", "rr", "--from", "nope", "--address", address}).code == 2);
    CHECK(troupe_cli({"rerun", "nobody", "--address", address}).code == 2);
    CHECK(troupe_cli({"rerun", "--address", address}).code == 2);

    std::ofstream(dir + "/fixed").put('\n');
    auto rerun = troupe_cli({"rerun", "rr", "--from", "b", "--wait", "--address", address});
    CHECK_MESSAGE(rerun.code == 0, rerun.output);
    CHECK(contains(rerun.output, "rr SUCCESS"));
    CHECK(runs("a") == 1);     // upstream: kept
    CHECK(runs("side") == 1);  // beside: kept
    CHECK(runs("b") == 2);
    CHECK(runs("c") == 1);     // blocked before, run now
    auto status = troupe_cli({"status", "rr", "--json", "--address", address});
    CHECK(contains(status.output, R"("workflowId":"rr","state":"SUCCESS")"));
    CHECK(contains(status.output, R"({"name":"b","state":"SUCCESS","attempt":1,)"));

    // Everything succeeded: a rerun needs a task to start from.
    auto nothing = troupe_cli({"rerun", "rr", "--address", address});
    CHECK(nothing.code == 2);
    CHECK(contains(nothing.output, "nothing to rerun"));
    auto again = troupe_cli({"rerun", "rr", "--from", "a", "--json", "--address", address});
    CHECK_MESSAGE(again.code == 0, again.output);
    CHECK(contains(again.output, R"({"workflowId":"rr","state":"RUNNING"})"));
    auto result = troupe_cli({"result", "rr", "--address", address});
    CHECK(result.code == 0);
    CHECK(runs("a") == 2);
    CHECK(runs("side") == 2);
    CHECK(runs("b") == 3);
    CHECK(runs("c") == 2);
    auto listed = troupe_cli({"list", "--state", "SUCCESS", "--json", "--address", address});
    CHECK(contains(listed.output, R"("workflowId":"rr")"));
    // This scheduler has no definitions directory: a name cannot be looked up.
    auto by_name = troupe_cli({"submit", "rerun", "--address", address});
    CHECK(by_name.code == 2);
    CHECK(contains(by_name.output, "no definitions directory"));
  }

  TEST_CASE("submit by the name of a registered definition") {
    troupe::test::ClusterSpec spec = one_worker();
    spec.definitions = "definitions";
    Cluster cluster(spec);
    const std::string dir = cluster.dir.path();
    std::filesystem::create_directories(dir + "/definitions");
    std::ofstream(dir + "/definitions/nightly-file.json") << R"({"name": "nightly", "tasks": [
        {"name": "a", "handler": "noop"}]})";
    start(cluster);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);

    auto run = troupe_cli({"submit", "nightly", "--id", "n-1", "--wait", "--address", address});
    CHECK_MESSAGE(run.code == 0, run.output);
    CHECK(contains(run.output, "n-1 SUCCESS"));
    // Added while the scheduler runs: found by its name at once.
    std::ofstream(dir + "/definitions/hourly.json") << R"({"name": "hourly", "tasks": [
        {"name": "x", "shell": {"command": ["sh", "-c", "exit 4"]}}]})";
    auto hourly = troupe_cli({"submit", "hourly", "--id", "h-1", "--wait", "--address", address});
    CHECK(hourly.code == 1);
    CHECK(contains(hourly.output, "h-1 FAILED: task 'x' failed: ExitCode:4"));
    auto listed = troupe_cli({"list", "--name", "hourly", "--json", "--address", address});
    CHECK(contains(listed.output, R"("workflowId":"h-1")"));

    auto unknown = troupe_cli({"submit", "weekly", "--address", address});
    CHECK(unknown.code == 2);
    CHECK(contains(unknown.output, "no definition named 'weekly'"));
    // A path that is not there is an input error of the CLI, not a name.
    auto missing = troupe_cli({"submit", dir + "/nowhere.json", "--address", address});
    CHECK(missing.code == 2);
    CHECK(contains(missing.output, "cannot read"));
  }

  TEST_CASE("a wait that times out exits 5, not the 1 of a failed workflow; kill answers STOPPED") {
    Cluster cluster(one_worker());
    start(cluster);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    const std::string dir = cluster.dir.path();
    std::ofstream(dir + "/long.json") << R"({"name": "long", "tasks": [
        {"name": "t", "shell": {"command": ["sleep", "60"]}}]})";
    REQUIRE(troupe_cli({"submit", dir + "/long.json", "--id", "slow-1", "--address", address}).code == 0);

    auto waited = troupe_cli({"result", "slow-1", "--timeout", "1s", "--address", address});
    CHECK(waited.code == 5);
    CHECK(contains(waited.output, "did not end within"));
    auto submitted = troupe_cli({"submit", dir + "/long.json", "--id", "slow-2", "--wait", "--timeout=1s",
                                 "--address", address});
    CHECK(submitted.code == 5);
    // Still running: the timeout gave up the wait, not the workflow.
    auto status = troupe_cli({"status", "slow-2", "--json", "--address", address});
    CHECK(contains(status.output, R"("workflowId":"slow-2","state":"RUNNING")"));

    auto killed = troupe_cli({"kill", "slow-1", "--address", address});
    CHECK(killed.code == 0);
    CHECK(killed.output == "slow-1 STOPPED\n");
    auto killed_json = troupe_cli({"kill", "slow-2", "--json", "--address", address});
    CHECK(killed_json.code == 0);
    CHECK(is_json(killed_json.output));
    CHECK(killed_json.output == "{\"workflowId\":\"slow-2\",\"state\":\"STOPPED\"}\n");
    auto ended = troupe_cli({"result", "slow-1", "--timeout", "10s", "--address", address});
    CHECK(ended.code == 1);
    CHECK(contains(ended.output, "slow-1 STOPPED"));
  }

  TEST_CASE("complete and fail confirm; RESULT, --input and a definition are checked as JSON first") {
    Cluster cluster(one_worker());
    start(cluster);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    const std::string dir = cluster.dir.path();
    // Three tasks that hand their token out through a file and wait for it.
    auto handing = [&](const std::string& name) {
      return R"({"name": ")" + name + R"(", "asyncCompletion": true, "retry": {"maximumAttempts": 1},
          "shell": {"command": ["sh", "-c", "printf '%s\\n' \"$TROUPE_TASK_TOKEN\" > )" + dir + "/" + name +
             R"(.token"]}})";
    };
    std::ofstream(dir + "/async.json") << R"({"name": "async", "tasks": [)" << handing("a") << ", " << handing("b")
                                       << ", " << handing("c") << "]}";
    std::ofstream(dir + "/ok.json") << R"({"name": "ok", "tasks": [{"name": "a", "handler": "noop"}]})";
    std::ofstream(dir + "/bad.json") << "{\"name\": \"bad\",\n  \"tasks\": [\n    {\"name\": \"a\" \"handler\": \"noop\"}]}";

    SUBCASE("complete and fail") {
      REQUIRE(troupe_cli({"submit", dir + "/async.json", "--id", "async-1", "--address", address}).code == 0);
      const std::string a = first_line_of(dir + "/a.token"), b = first_line_of(dir + "/b.token"),
                        c = first_line_of(dir + "/c.token");
      REQUIRE(!a.empty());
      REQUIRE(!b.empty());
      REQUIRE(!c.empty());

      auto refused = troupe_cli({"complete", a, R"({"approved": tru})", "--address", address});
      CHECK(refused.code == 2);
      CHECK(contains(refused.output, "the task's result is not valid JSON: line 1, column 14: expected a value"));
      CHECK(contains(refused.output, "found 'tru'"));
      // Nothing was sent: the token still completes the task.
      auto completed = troupe_cli({"complete", a, R"({"approved": true})", "--address", address});
      CHECK_MESSAGE(completed.code == 0, completed.output);
      CHECK(completed.output == "completed: the task's result is recorded\n");
      auto completed_json = troupe_cli({"complete", b, "[1, 2]", "--json", "--address", address});
      CHECK_MESSAGE(completed_json.code == 0, completed_json.output);
      CHECK(is_json(completed_json.output));
      CHECK(completed_json.output == "{\"outcome\":\"completed\"}\n");
      auto failed = troupe_cli({"fail", c, "Rejected", "--details", "not this week", "--json", "--address", address});
      CHECK_MESSAGE(failed.code == 0, failed.output);
      CHECK(is_json(failed.output));
      CHECK(failed.output == "{\"outcome\":\"failed\",\"reason\":\"Rejected\"}\n");
      auto result = troupe_cli({"result", "async-1", "--timeout", "30s", "--address", address});
      CHECK(result.code == 1);
      CHECK(contains(result.output, "Rejected"));
      auto again = troupe_cli({"fail", c, "Rejected", "--address", address});
      CHECK(again.code == 2);  // its invocation has ended
    }
    SUBCASE("--input and the definition") {
      auto bad_input = troupe_cli({"submit", dir + "/ok.json", "--id", "in-1", "--input", "notjson", "--address", address});
      CHECK(bad_input.code == 2);
      CHECK(contains(bad_input.output, "the workflow input is not valid JSON: line 1, column 1:"));
      auto bad_definition = troupe_cli({"submit", dir + "/bad.json", "--id", "in-2", "--address", address});
      CHECK(bad_definition.code == 2);
      CHECK(contains(bad_definition.output, dir + "/bad.json:3:18: expected ',' or '}' after a member, found '\"'"));
      // Neither reached the scheduler.
      CHECK(troupe_cli({"status", "in-1", "--address", address}).code == 2);
      CHECK(troupe_cli({"status", "in-2", "--address", address}).code == 2);
      auto good = troupe_cli({"submit", dir + "/ok.json", "--id", "in-3", "--input", R"({"n": 3})", "--wait",
                              "--json", "--address", address});
      CHECK_MESSAGE(good.code == 0, good.output);
      CHECK(is_json(good.output));
    }
  }

  TEST_CASE("what every client command prints with --json is JSON") {
    Cluster cluster(one_worker());
    start(cluster);
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    const std::string dir = cluster.dir.path();
    std::ofstream(dir + "/ok.json") << R"({"name": "ok", "tasks": [{"name": "a", "handler": "noop"}]})";
    std::ofstream(dir + "/long.json") << R"({"name": "long", "tasks": [
        {"name": "t", "shell": {"command": ["sleep", "60"]}}]})";
    REQUIRE(troupe_cli({"submit", dir + "/long.json", "--id", "j-long", "--address", address}).code == 0);
    const std::vector<std::vector<std::string>> commands = {
        {"submit", dir + "/ok.json", "--id", "j-1", "--json"},
        {"submit", dir + "/ok.json", "--id", "j-2", "--wait", "--json"},
        {"result", "j-1", "--json"},
        {"status", "j-1", "--json"},
        {"list", "--json"},
        {"pause", "j-long", "--json"},
        {"resume", "j-long", "--json"},
        {"update", "j-long", "t", "--priority", "3", "--json"},
        {"stop", "j-long", "--json"},
        {"rerun", "j-1", "--from", "a", "--wait", "--json"},
        {"watch", "j-1", "--json"},
    };
    for (auto words : commands) {
      words.insert(words.end(), {"--address", address});
      CAPTURE(words[0]);
      auto run = troupe_cli(words);
      CHECK_MESSAGE(run.code == 0, run.output);
      // watch prints one object per line; the others one object.
      std::istringstream lines(run.output);
      size_t objects = 0;
      for (std::string line; std::getline(lines, line); ++objects) CHECK_MESSAGE(is_json(line), line);
      CHECK(objects >= 1);
      if (words[0] != "watch") CHECK(objects == 1);
    }
  }
}
