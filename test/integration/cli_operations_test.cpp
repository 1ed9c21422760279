// The CLI's view of a workflow while it runs and once it ends, as a user runs it: retry, skip
// and update of one task, list's order and live states, status --json's times and failures,
// the final tasks' outputs, and an input too large for a command line. The troupe CLI
// ($TROUPE_CLI) against a real scheduler and worker, checked by output and exit code.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"

using namespace std::chrono_literals;
using troupe::test::CliRun;
using troupe::test::Cluster;
using troupe::test::contains;
using troupe::test::is_json;

namespace {

/// A scheduler and one worker serving the default task list, and the CLI pointed at them.
struct CliCluster {
  CliCluster() : cluster(spec()) {
    cluster.start("scheduler");
    cluster.start("worker-a");
    troupe::test::connect(cluster.port);
  }

  static troupe::test::ClusterSpec spec() {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt}};
    return spec;
  }

  /// `troupe WORDS... --address SCHEDULER`.
  CliRun cli(std::vector<std::string> words) const {
    words.insert(words.end(), {"--address", "127.0.0.1:" + std::to_string(cluster.port)});
    return troupe::test::troupe_cli(words);
  }

  /// Writes `json` to DIR/NAME.json and returns its path.
  std::string definition(const std::string& name, const std::string& json) const {
    const std::string path = dir() + "/" + name + ".json";
    std::ofstream(path) << json;
    return path;
  }

  /// Polls `troupe status ID --json` (20 s at most) until task `task` is in `state`.
  bool task_reaches(const std::string& id, const std::string& task, const std::string& state) const {
    return troupe::test::eventually([&] {
      return contains(cli({"status", id, "--json"}).output, R"({"name":")" + task + R"(","state":")" + state + "\"");
    }, 20s);
  }

  std::string dir() const { return cluster.dir.path(); }

  Cluster cluster;
};

/// A shell task's body: `script` run by sh, with the test's directory as $D.
std::string shell(const std::string& dir, const std::string& script) {
  return R"("shell": {"command": ["sh", "-c", ")" + script + R"("], "env": {"D": ")" + dir + R"("}})";
}

/// The workflow ids of `list --json` output, in the order listed.
std::vector<std::string> listed_ids(const std::string& json) {
  static const std::regex id(R"re("workflowId":"([^"]*)")re");
  std::vector<std::string> ids;
  for (auto it = std::sregex_iterator(json.begin(), json.end(), id); it != std::sregex_iterator(); ++it) {
    ids.push_back((*it)[1]);
  }
  return ids;
}

/// The number a field of task `task` has in `status --json` output; -1 if it has none.
int64_t task_field(const std::string& json, const std::string& task, const std::string& field) {
  const std::regex pattern(R"re(\{"name":")re" + task + R"re(".*?")re" + field + R"re(":(-?\d+))re");
  std::smatch match;
  if (!std::regex_search(json, match, pattern)) return -1;
  return std::stoll(match[1]);
}

}  // namespace

TEST_SUITE("integration.cli_operations") {
  TEST_CASE("retry: a failed task fixed and retried while its sibling runs; the join runs, the workflow succeeds") {
    CliCluster c;
    const std::string d = c.dir();
    // left fails until $D/fixed exists; right waits for $D/release; join needs both.
    const auto path = c.definition("diamond", R"({"name": "diamond", "tasks": [
        {"name": "left", )" + shell(d, "test -f $D/fixed || exit 3") + R"(},
        {"name": "right", )" + shell(d, "while [ ! -f $D/release ]; do sleep 0.05; done") + R"(},
        {"name": "join", "dependsOn": ["left", "right"], )" + shell(d, "echo joined > $D/joined") + R"(}]})");
    REQUIRE(c.cli({"submit", path, "--id", "rt"}).code == 0);
    REQUIRE(c.task_reaches("rt", "left", "FAILURE"));

    // Refusals name the cause and record nothing.
    auto running = c.cli({"retry", "rt", "right"});
    CHECK(running.code == 2);
    CHECK(contains(running.output, "has not ended"));
    auto blocked = c.cli({"retry", "rt", "join"});
    CHECK(blocked.code == 2);
    CHECK(contains(blocked.output, "has not run because 'left' failed"));
    auto unknown_task = c.cli({"retry", "rt", "nope"});
    CHECK(unknown_task.code == 2);
    CHECK(contains(unknown_task.output, "nope"));
    CHECK(c.cli({"retry", "nobody", "left"}).code == 2);
    CHECK(c.cli({"retry", "rt"}).code == 2);  // TASK missing

    std::ofstream(d + "/fixed").put('\n');
    auto retried = c.cli({"retry", "rt", "left"});
    CHECK_MESSAGE(retried.code == 0, retried.output);
    CHECK(retried.output == "rt: left SUBMITTED (workflow RUNNING)\n");
    REQUIRE(c.task_reaches("rt", "left", "SUCCESS"));
    CHECK_FALSE(std::filesystem::exists(d + "/joined"));  // right still runs
    std::ofstream(d + "/release").put('\n');
    auto result = c.cli({"result", "rt", "--timeout", "30s"});
    CHECK_MESSAGE(result.code == 0, result.output);
    CHECK(contains(result.output, "rt SUCCESS\n"));
    CHECK(std::filesystem::exists(d + "/joined"));
    auto status = c.cli({"status", "rt", "--json"});
    CHECK(task_field(status.output, "left", "attempt") == 2);  // attempt numbers go on
  }

  TEST_CASE("retry --json reopens a FAILED workflow") {
    CliCluster c;
    const std::string d = c.dir();
    const auto path = c.definition("once", R"({"name": "once", "tasks": [
        {"name": "t", )" + shell(d, "test -f $D/fixed || exit 3") + R"(}]})");
    auto failed = c.cli({"submit", path, "--id", "once", "--wait"});
    REQUIRE(failed.code == 1);
    std::ofstream(d + "/fixed").put('\n');
    auto retried = c.cli({"retry", "once", "t", "--json"});
    CHECK_MESSAGE(retried.code == 0, retried.output);
    CHECK(is_json(retried.output));
    CHECK(retried.output == R"({"workflowId":"once","task":"t","workflowState":"RUNNING","taskState":"SUBMITTED"})"
                            "\n");
    CHECK(c.cli({"result", "once", "--timeout", "30s"}).code == 0);
  }

  TEST_CASE("skip: a failed task FORCED_SUCCESS with a reason; its downstream runs") {
    CliCluster c;
    const std::string d = c.dir();
    const auto path = c.definition("skipped", R"({"name": "skipped", "tasks": [
        {"name": "a", "shell": {"command": ["sh", "-c", "exit 4"]}},
        {"name": "b", "dependsOn": ["a"], )" + shell(d, "echo ran > $D/b-ran") + R"(}]})");
    auto failed = c.cli({"submit", path, "--id", "sk", "--wait"});
    REQUIRE(failed.code == 1);
    CHECK(contains(failed.output, "sk FAILED: task 'a' failed: ExitCode:4"));

    auto skipped = c.cli({"skip", "sk", "a", "--reason", "done by hand"});
    CHECK_MESSAGE(skipped.code == 0, skipped.output);
    CHECK(skipped.output == "sk: a FORCED_SUCCESS (workflow RUNNING)\n");
    auto result = c.cli({"result", "sk", "--timeout", "30s"});
    CHECK_MESSAGE(result.code == 0, result.output);
    CHECK(contains(result.output, "sk SUCCESS\n"));
    CHECK(std::filesystem::exists(d + "/b-ran"));
    auto status = c.cli({"status", "sk", "--json"});
    CHECK(contains(status.output, R"({"name":"a","state":"FORCED_SUCCESS")"));

    // b succeeded: there is nothing to skip.
    auto refused = c.cli({"skip", "sk", "b", "--json"});
    CHECK(refused.code == 2);
    CHECK(contains(refused.output, "succeeded already"));
  }

  TEST_CASE("update: bad options refused with the scheduler's reasons; a task moved to a served task list runs") {
    CliCluster c;
    const std::string d = c.dir();
    // No worker serves gpu: t waits there until it is moved.
    const auto path = c.definition("moved", R"({"name": "moved", "tasks": [
        {"name": "t", "taskList": "gpu", )" + shell(d, "echo ran > $D/ran") + R"(}]})");
    REQUIRE(c.cli({"submit", path, "--id", "mv"}).code == 0);
    REQUIRE(c.task_reaches("mv", "t", "DISPATCHING"));

    // Checked by the scheduler, by a definition's rules: exit 2 with its message.
    auto never_fires = c.cli({"update", "mv", "t", "--timeout", "startToClose=1m", "--timeout", "scheduleToStart=1m",
                              "--timeout", "heartbeat=2h"});
    CHECK(never_fires.code == 2);
    CHECK(contains(never_fires.output, "timeouts.heartbeat: is longer than startToClose (1m), so it could never fire"));
    auto bad_list = c.cli({"update", "mv", "t", "--task-list", "no/slash"});
    CHECK(bad_list.code == 2);
    CHECK(contains(bad_list.output, "the task list 'no/slash' may not contain '/'"));
    // Checked here, before anything is sent.
    auto bad_kind = c.cli({"update", "mv", "t", "--timeout", "startToClos=1m"});
    CHECK(bad_kind.code == 2);
    CHECK(contains(bad_kind.output, "unknown timeout 'startToClos' (did you mean startToClose?)"));
    auto bad_duration = c.cli({"update", "mv", "t", "--timeout", "heartbeat=soon"});
    CHECK(bad_duration.code == 2);
    CHECK(contains(bad_duration.output, "--timeout heartbeat: "));
    auto bad_retry = c.cli({"update", "mv", "t", "--retry", R"({"maximumAttempts": })"});
    CHECK(bad_retry.code == 2);
    CHECK(contains(bad_retry.output, "--retry is not valid JSON: line 1, column 21"));
    auto bad_priority = c.cli({"update", "mv", "t", "--priority", "high"});
    CHECK(bad_priority.code == 2);
    CHECK(contains(bad_priority.output, "--priority takes a whole number"));
    auto nothing = c.cli({"update", "mv", "t"});
    CHECK(nothing.code == 2);
    CHECK(contains(nothing.output, "nothing to update"));
    CHECK(c.cli({"update", "nobody", "t", "--priority", "1"}).code == 2);
    CHECK_FALSE(std::filesystem::exists(d + "/ran"));

    auto updated = c.cli({"update", "mv", "t", "--task-list", "default", "--priority", "5", "--timeout",
                          "scheduleToClose=5m", "--retry", R"({"maximumAttempts": 2})", "--json"});
    CHECK_MESSAGE(updated.code == 0, updated.output);
    CHECK(is_json(updated.output));
    CHECK(updated.output ==
          R"({"workflowId":"mv","task":"t","workflowState":"RUNNING","taskState":"DISPATCHING"})" "\n");
    auto result = c.cli({"result", "mv", "--timeout", "30s"});
    CHECK_MESSAGE(result.code == 0, result.output);
    CHECK(std::filesystem::exists(d + "/ran"));
    // It succeeded: it has no next attempt to update.
    CHECK(c.cli({"update", "mv", "t", "--retry", "none"}).code == 2);
  }

  TEST_CASE("update --timeout startToClose: the next attempt runs out of the new time") {
    CliCluster c;
    const std::string d = c.dir();
    // Attempt 1 waits for $D/go and fails; attempt 2 would run a minute.
    const auto path = c.definition("timed", R"({"name": "timed", "tasks": [{"name": "t",
        "retry": {"maximumAttempts": 2, "initialInterval": "100ms"},
        "timeouts": {"scheduleToStart": "1m", "startToClose": "10m"}, )" +
        shell(d, "if [ \\\"$TROUPE_ATTEMPT\\\" = 1 ]; then while [ ! -f $D/go ]; do sleep 0.05; done; exit 3; fi; "
                 "sleep 60") + R"(}]})");
    REQUIRE(c.cli({"submit", path, "--id", "tm"}).code == 0);
    REQUIRE(c.task_reaches("tm", "t", "RUNNING"));
    auto updated = c.cli({"update", "tm", "t", "--timeout", "startToClose=1s"});
    CHECK_MESSAGE(updated.code == 0, updated.output);
    CHECK(updated.output == "tm: t RUNNING (workflow RUNNING)\n");
    std::ofstream(d + "/go").put('\n');
    auto result = c.cli({"result", "tm", "--timeout", "30s"});
    CHECK(result.code == 1);
    CHECK(contains(result.output, "Timeout:startToClose"));
  }

  TEST_CASE("list: newest first by default, by id with --sort id, live states with --state") {
    CliCluster c;
    const std::string d = c.dir();
    const auto ok = c.definition("ok", R"({"name": "ok", "tasks": [{"name": "a", "handler": "noop"}]})");
    const auto long_running = c.definition("long", R"({"name": "long", "tasks": [
        {"name": "t", "shell": {"command": ["sleep", "60"]}}]})");
    // Created in an order that is not the ids' order.
    for (const char* id : {"wf-c", "wf-a", "wf-b"}) REQUIRE(c.cli({"submit", ok, "--id", id, "--wait"}).code == 0);
    REQUIRE(c.cli({"submit", long_running, "--id", "wf-long"}).code == 0);
    REQUIRE(c.task_reaches("wf-long", "t", "RUNNING"));

    auto newest = c.cli({"list", "--json"});
    CHECK(newest.code == 0);
    CHECK(is_json(newest.output));
    CHECK(listed_ids(newest.output) == std::vector<std::string>{"wf-long", "wf-b", "wf-a", "wf-c"});
    CHECK(contains(newest.output, R"("workflowId":"wf-b","name":"ok","state":"SUCCESS","stateCode":"SUCCESS")"));
    auto by_id = c.cli({"list", "--sort", "id", "--json"});
    CHECK(listed_ids(by_id.output) == std::vector<std::string>{"wf-a", "wf-b", "wf-c", "wf-long"});
    CHECK(c.cli({"list", "--sort", "name"}).code == 2);

    // A page of two by id, and the command for the next page, which keeps the order.
    auto page = c.cli({"list", "--sort", "id", "--limit", "2"});
    CHECK(page.code == 0);
    const auto more = page.output.find("more: troupe list ");
    REQUIRE(more != std::string::npos);
    std::istringstream hint(page.output.substr(more + 6));
    std::vector<std::string> words;
    for (std::string word; hint >> word;) words.push_back(word);
    REQUIRE(words.size() > 2);
    CHECK(contains(page.output, "--sort id"));
    auto next = troupe::test::troupe_cli(std::vector<std::string>(words.begin() + 1, words.end()));
    CHECK_MESSAGE(next.code == 0, next.output);
    CHECK(contains(next.output, "wf-c "));
    CHECK(contains(next.output, "wf-long "));
    CHECK_FALSE(contains(next.output, "wf-a "));

    auto running = c.cli({"list", "--state", "RUNNING", "--json"});
    CHECK_MESSAGE(running.code == 0, running.output);
    CHECK(listed_ids(running.output) == std::vector<std::string>{"wf-long"});
    CHECK(contains(running.output, R"("state":"RUNNING","stateCode":"RUNNING")"));
    CHECK(listed_ids(c.cli({"list", "--state", "success", "--json"}).output).size() == 3);

    // Its task still runs: a pause leaves it READY_PAUSE, the widest state, which the table fits.
    REQUIRE(c.cli({"pause", "wf-long"}).code == 0);
    auto pausing = c.cli({"list", "--state", "READY_PAUSE"});
    CHECK_MESSAGE(pausing.code == 0, pausing.output);
    CHECK(contains(pausing.output, "WORKFLOW ID  STATE        CREATED"));
    CHECK(contains(pausing.output, "wf-long      READY_PAUSE  "));
    CHECK(contains(c.cli({"list", "--state", "OPEN", "--json"}).output, R"("workflowId":"wf-long")"));
    auto bad_state = c.cli({"list", "--state", "WAITING"});
    CHECK(bad_state.code == 2);
    CHECK(contains(bad_state.output, "RUNNING"));
  }

  TEST_CASE("status --json: a spawn failure's whole message, a result, start and end times") {
    CliCluster c;
    const auto path = c.definition("spawn", R"({"name": "spawn", "tasks": [
        {"name": "a", "handler": "noop"},
        {"name": "b", "dependsOn": ["a"], "shell": {"command": ["/no/such/binary"]}},
        {"name": "c", "dependsOn": ["b"], "handler": "noop"}]})");
    REQUIRE(c.cli({"submit", path, "--id", "sp", "--wait"}).code == 1);
    auto status = c.cli({"status", "sp", "--json"});
    CHECK(status.code == 0);
    CHECK(is_json(status.output));
    CHECK(contains(status.output, R"("workflowId":"sp","state":"FAILED","stateCode":"FAILED")"));
    CAPTURE(status.output);
    CHECK(contains(status.output, R"("failure":"SpawnFailed")"));
    CHECK(contains(status.output,
                   R"("failureMessage":"SpawnFailed: cannot run '/no/such/binary': No such file or directory)"));
    CHECK(contains(status.output, R"("result":{"ok":true})"));
    CHECK(contains(status.output, R"({"name":"c","state":"UPSTREAM_FAILED")"));
    CHECK(contains(status.output, R"("stateCode":"UPSTREAM_FAILED")"));
    const int64_t started = task_field(status.output, "a", "startedUs");
    const int64_t ended = task_field(status.output, "a", "endedUs");
    CHECK(started > 0);
    CHECK(ended >= started);
    CHECK(task_field(status.output, "a", "durationUs") == ended - started);
    CHECK(task_field(status.output, "c", "startedUs") == 0);  // never ran
    CHECK(task_field(status.output, "c", "durationUs") == 0);
    // The table shows the whole message too.
    auto table = c.cli({"status", "sp"});
    CHECK(contains(table.output, "cannot run '/no/such/binary': No such file or directory"));
  }

  TEST_CASE("result and submit --wait print the final tasks' outputs") {
    CliCluster c;
    const std::string d = c.dir();
    // Two final tasks: b (noop's result) and c, an asyncCompletion task completed below.
    const auto path = c.definition("outputs", R"({"name": "outputs", "tasks": [
        {"name": "a", "handler": "noop"},
        {"name": "b", "dependsOn": ["a"], "handler": "noop"},
        {"name": "c", "dependsOn": ["a"], "asyncCompletion": true, )" +
        shell(d, "printf '%s\\\\n' \\\"$TROUPE_TASK_TOKEN\\\" > $D/c.token") + R"(}]})");
    REQUIRE(c.cli({"submit", path, "--id", "out"}).code == 0);
    std::string token;
    REQUIRE(troupe::test::eventually([&] {
      std::ifstream in(d + "/c.token");
      return static_cast<bool>(std::getline(in, token)) && !token.empty();
    }, 30s));
    // A result written over lines is printed on one.
    REQUIRE(c.cli({"complete", token, "{\n  \"rows\": [1, 2],\n  \"name\": \"a b\"\n}"}).code == 0);

    auto result = c.cli({"result", "out", "--timeout", "30s"});
    CHECK_MESSAGE(result.code == 0, result.output);
    CHECK(result.output == "out SUCCESS\n  b: {\"ok\":true}\n  c: {\"rows\":[1,2],\"name\":\"a b\"}\n");
    auto json = c.cli({"result", "out", "--json"});
    CHECK(json.code == 0);
    CHECK(is_json(json.output));
    CHECK(contains(json.output, R"("outputs":[{"task":"b","result":{"ok":true}},)"
                                R"({"task":"c","result":{"rows":[1,2],"name":"a b"}}])"));

    const auto simple = c.definition("simple", R"({"name": "simple", "tasks": [{"name": "only", "handler": "noop"}]})");
    auto waited = c.cli({"submit", simple, "--id", "simple-1", "--wait"});
    CHECK(waited.code == 0);
    CHECK(waited.output == "simple-1 SUCCESS\n  only: {\"ok\":true}\n");
    auto waited_json = c.cli({"submit", simple, "--id", "simple-2", "--wait", "--json"});
    CHECK(waited_json.code == 0);
    CHECK(contains(waited_json.output, R"("outputs":[{"task":"only","result":{"ok":true}}])"));
    auto rerun = c.cli({"rerun", "simple-1", "--from", "only", "--wait"});
    CHECK(rerun.code == 0);
    CHECK(rerun.output == "simple-1 SUCCESS\n  only: {\"ok\":true}\n");
  }

  TEST_CASE("submit --input @FILE: an input larger than a command line takes reaches the task") {
    CliCluster c;
    const std::string d = c.dir();
    // 200 KiB of JSON, with no whitespace, so its size is what the task must see.
    const std::string input = R"({"blob":")" + std::string(200 * 1024, 'x') + R"("})";
    std::ofstream(d + "/input.json") << input;
    const auto path = c.definition("big", R"({"name": "big", "tasks": [{"name": "t", )" +
        shell(d, "if [ -n \\\"$TROUPE_INPUT_FILE\\\" ]; then cat \\\"$TROUPE_INPUT_FILE\\\"; "
                 "else printf %s \\\"$TROUPE_INPUT\\\"; fi > $D/seen") + R"(}]})");
    auto run = c.cli({"submit", path, "--id", "big-1", "--input", "@" + d + "/input.json", "--wait"});
    CHECK_MESSAGE(run.code == 0, run.output);
    std::ifstream seen(d + "/seen");
    std::stringstream text;
    text << seen.rdbuf();
    CHECK(text.str().size() == input.size());
    CHECK(text.str() == input);

    // Checked here, the file named with its line and column; nothing reaches the scheduler.
    std::ofstream(d + "/bad.json") << "{\"n\": 1,\n  \"m\": }";
    auto bad = c.cli({"submit", path, "--id", "big-2", "--input", "@" + d + "/bad.json"});
    CHECK(bad.code == 2);
    CHECK(contains(bad.output, d + "/bad.json:2:8: "));
    auto missing = c.cli({"submit", path, "--id", "big-3", "--input", "@" + d + "/nowhere.json"});
    CHECK(missing.code == 2);
    CHECK(contains(missing.output, "cannot read '" + d + "/nowhere.json'"));
    CHECK(c.cli({"status", "big-2"}).code == 2);
    CHECK(c.cli({"status", "big-3"}).code == 2);
  }
}
