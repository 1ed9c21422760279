// The admin shell against a real scheduler and worker: every command through `troupe shell -c`
// with --json, a stuck workflow diagnosed for each reason it can be stuck (an unserved task
// list, exhausted slots, a paused workflow), and the interactive shell in a terminal (tmux) for
// Tab completion and history.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
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

/// A scheduler and one worker with a single slot of the default task list.
struct ShellCluster {
  ShellCluster() : cluster(spec()) {
    cluster.start("scheduler");
    cluster.start("worker-a");
    troupe::test::connect(cluster.port);
  }

  static troupe::test::ClusterSpec spec() {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 1}}, std::nullopt}};
    return spec;
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(cluster.port); }

  /// `troupe shell -c COMMAND --address SCHEDULER [--json]`.
  CliRun shell(const std::string& command, bool json = true) const {
    std::vector<std::string> words = {"shell", "-c", command, "--address", address()};
    if (json) words.push_back("--json");
    return troupe::test::troupe_cli(words);
  }

  /// Submits the stuck workflow: `hold` runs long on the only slot, `queued` waits for that
  /// slot, `gpu` waits for a task list no worker serves.
  void submit_stuck(const std::string& id) const {
    const std::string path = cluster.dir.path() + "/" + id + ".json";
    std::ofstream(path) << R"({"name": "stuck", "tasks": [
      {"name": "hold", "shell": {"command": ["sleep", "60"]}},
      {"name": "queued", "shell": {"command": ["true"]}},
      {"name": "gpu", "taskList": "gpu", "shell": {"command": ["true"]}}]})";
    auto submitted = troupe::test::troupe_cli({"submit", path, "--id", id, "--address", address()});
    REQUIRE_MESSAGE(submitted.code == 0, submitted.output);
  }

  Cluster cluster;
};

}  // namespace

TEST_SUITE("integration.admin_shell") {
  TEST_CASE("diagnose names why each task of a stuck workflow waits, and a paused workflow's operator") {
    ShellCluster c;
    c.submit_stuck("stuck-1");
    CliRun d;
    REQUIRE_MESSAGE(troupe::test::eventually([&] {
                      d = c.shell("diagnose stuck-1");
                      return contains(d.output, R"("subject":"task 'hold'","state":"RUNNING")") &&
                             contains(d.output, "no live worker serves task list 'gpu'") &&
                             contains(d.output, "the only worker of 'default' is busy");
                    }, 20s),
                    d.output);
    CHECK(d.code == 0);
    CHECK(is_json(d.output));
    CHECK(contains(d.output, R"("live":true)"));
    CHECK(contains(d.output, R"("subject":"task 'queued'","state":"DISPATCHING")"));
    CHECK(contains(d.output, "invocation stuck-1/hold/1.1 to end on worker 'worker-a'"));

    // Text, as people read it: the first line is the summary.
    auto text = c.shell("diagnose stuck-1", false);
    CHECK(text.code == 0);
    CHECK(contains(text.output, "stuck-1 RUNNING: task '"));

    auto paused = troupe::test::troupe_cli({"pause", "stuck-1", "--address", c.address()});
    REQUIRE_MESSAGE(paused.code == 0, paused.output);
    REQUIRE_MESSAGE(troupe::test::eventually([&] {
                      d = c.shell("diagnose stuck-1");
                      return contains(d.output, R"("subject":"task 'gpu'","state":"PAUSED","waitsFor":"its workflow to resume")");
                    }, 20s),
                    d.output);
    CHECK(contains(d.output, "it is pausing: it waits for its active tasks to finish before it is PAUSED: 'hold'"));

    auto unknown = c.shell("diagnose no-such-workflow");
    CHECK(unknown.code == 2);
    CHECK(contains(unknown.output, "no workflow has id 'no-such-workflow'"));
  }

  TEST_CASE("every command answers in JSON: actors, actor, history, tasklists, sessions, store, and the CLI's own") {
    ShellCluster c;
    c.submit_stuck("stuck-2");
    CliRun actors;
    REQUIRE_MESSAGE(troupe::test::eventually([&] {
                      actors = c.shell("actors");
                      return contains(actors.output, R"("kind":"task","id":"stuck-2/gpu","state":"DISPATCHING")") &&
                             contains(actors.output, R"("kind":"task","id":"stuck-2/hold","state":"RUNNING")");
                    }, 20s),
                    actors.output);
    CHECK(actors.code == 0);
    CHECK(is_json(actors.output));
    for (const char* live : {R"("kind":"workflow","id":"stuck-2","state":"RUNNING")",
                             R"("kind":"task","id":"stuck-2/hold","state":"RUNNING")",
                             R"("kind":"worker","id":"worker-a","state":"STARTED")",
                             R"("kind":"matching","id":"gpu","state":"TASKS_WAITING")",
                             R"("kind":"directory","id":"directory")", R"("kind":"dispatcher","id":"dispatcher")"}) {
      CHECK_MESSAGE(contains(actors.output, live), live);
    }
    CHECK(contains(actors.output, R"("live":{"directory":1,"dispatcher":1,"matching":2,"task":3,"worker":1,"workflow":1})"));
    CHECK(contains(actors.output, R"("passivatedWorkflows":0)"));

    auto tasks = c.shell("actors task --sort mailbox --limit 2");
    CHECK(tasks.code == 0);
    CHECK(!contains(tasks.output, R"("kind":"workflow")"));
    CHECK(contains(tasks.output, R"("kind":"task")"));
    CHECK(contains(tasks.output, R"("live":{)"));
    auto bad_kind = c.shell("actors gizmo");
    CHECK(bad_kind.code == 2);
    CHECK(contains(bad_kind.output, "no actor kind 'gizmo'"));

    auto task = c.shell("actor stuck-2/gpu");
    CHECK(task.code == 0);
    CHECK(is_json(task.output));
    CHECK(contains(task.output, R"("fields":{"attempt":"1","task list":"gpu")"));
    CHECK(contains(task.output, R"("kind":"taskDispatching")"));
    CHECK(!contains(task.output, R"("actorId":"hold")"));  // only its own events
    auto worker = c.shell("actor worker-a");
    CHECK(worker.code == 0);
    CHECK(contains(worker.output, R"("task list default":"1 of 1 slots")"));
    CHECK(contains(worker.output, R"("kind":"workerRegistered")"));
    auto missing = c.shell("actor stuck-2/nothing");
    CHECK(missing.code == 2);
    CHECK(contains(missing.output, "no live actor has id 'stuck-2/nothing'"));

    auto history = c.shell("history stuck-2 --from 2 --limit 2");
    CHECK(history.code == 0);
    CHECK(is_json(history.output));
    CHECK(contains(history.output, R"({"events":[{"sequence":2,)"));
    CHECK(contains(history.output, R"("sequence":3,)"));
    CHECK(!contains(history.output, R"("sequence":4,)"));

    auto lists = c.shell("tasklists");
    CHECK(lists.code == 0);
    CHECK(is_json(lists.output));
    CHECK(contains(lists.output,
                   R"({"name":"default","queued":[{"priority":0,"queued":1}],"sessionQueued":0,"workers":[{"worker":"worker-a","slots":1,"inUse":1}])"));
    CHECK(contains(lists.output, R"("waitReason":"no live worker serves task list 'gpu'")"));

    auto sessions = c.shell("sessions");
    CHECK(sessions.code == 0);
    CHECK(contains(sessions.output, R"({"actors":[],)"));

    auto store = c.shell("store");
    CHECK(store.code == 0);
    CHECK(is_json(store.output));
    CHECK(contains(store.output, R"("memtable bytes":")"));
    CHECK(!contains(store.output, R"("batches":0,)"));

    // The CLI's commands run in the shell with its connection, answering JSON too.
    auto status = c.shell("status stuck-2");
    CHECK(status.code == 0);
    CHECK(contains(status.output, R"({"workflowId":"stuck-2","state":"RUNNING")"));
    auto workflows = c.shell("workflows --state RUNNING");
    CHECK(workflows.code == 0);
    CHECK(contains(workflows.output, R"("workflowId":"stuck-2")"));
    auto drain = c.shell("worker drain worker-a");
    CHECK(drain.code == 0);
    CHECK(contains(drain.output, R"("status":"DRAINING")"));
    auto unknown = c.shell("frobnicate");
    CHECK(unknown.code == 2);
    CHECK(contains(unknown.output, "no shell command 'frobnicate'"));
  }

  TEST_CASE("in a terminal: Tab completes commands and workflow ids, and the history is kept") {
    if (std::system("command -v tmux >/dev/null 2>&1") != 0) FAIL("tmux is missing (tools/setup installs it)");
    ShellCluster c;
    // A closed workflow has no actor: its id comes from the index.
    const std::string done = c.cluster.dir.path() + "/done.json";
    std::ofstream(done) << R"({"name": "done", "tasks": [{"name": "t", "handler": "noop"}]})";
    auto finished = troupe::test::troupe_cli({"submit", done, "--id", "finished-7", "--wait", "--address", c.address()});
    REQUIRE_MESSAGE(finished.code == 0, finished.output);
    c.submit_stuck("stuck-3");
    REQUIRE(troupe::test::eventually([&] { return contains(c.shell("actors workflow").output, "stuck-3"); }, 20s));
    const std::string home = c.cluster.dir.path();
    const std::string session = "troupe-shell-" + std::to_string(c.cluster.port);
    const std::string tmux = "tmux -L " + session + " ";
    auto run = [](const std::string& command) { return std::system(command.c_str()); };
    auto screen = [&] {
      std::string path = home + "/screen.txt";
      run(tmux + "capture-pane -p -t " + session + " > " + path + " 2>/dev/null");
      std::ifstream in(path);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    REQUIRE(run(tmux + "new-session -d -s " + session + " -x 200 -y 50 'HOME=" + home + " " +
                troupe::test::cli_binary() + " shell --address " + c.address() + "'") == 0);
    struct Kill {
      std::string tmux, session;
      ~Kill() { std::system((tmux + "kill-server").c_str()); }
    } kill{tmux, session};
    CHECK_MESSAGE(troupe::test::eventually([&] { return contains(screen(), "troupe>"); }, 10s), screen());
    // capture-pane trims the blanks that end a line.
    // "diag" completes to the command, "stuck" to the only live workflow id.
    run(tmux + "send-keys -t " + session + " diag Tab");
    CHECK(troupe::test::eventually([&] { return contains(screen(), "troupe> diagnose"); }, 10s));
    run(tmux + "send-keys -t " + session + " stuck Tab");
    CHECK(troupe::test::eventually([&] { return contains(screen(), "troupe> diagnose stuck-3"); }, 10s));
    run(tmux + "send-keys -t " + session + " Enter");
    CHECK(troupe::test::eventually([&] { return contains(screen(), "stuck-3 RUNNING: task '"); }, 10s));
    run(tmux + "send-keys -t " + session + " 'history fin' Tab");
    CHECK_MESSAGE(troupe::test::eventually([&] { return contains(screen(), "troupe> history finished-7"); }, 10s), screen());
    run(tmux + "send-keys -t " + session + " C-u");
    // Up brings the line back from the history; the history file keeps it for the next shell.
    run(tmux + "send-keys -t " + session + " Up");
    CHECK(troupe::test::eventually([&] {
      const auto s = screen();
      return s.rfind("troupe> diagnose stuck-3") != s.find("troupe> diagnose stuck-3");
    }, 10s));
    run(tmux + "send-keys -t " + session + " C-u C-d");
    CHECK(troupe::test::eventually([&] {
      std::ifstream in(home + "/.troupe_history");
      return contains(std::string(std::istreambuf_iterator<char>(in), {}), "diagnose");
    }, 10s));
  }
}

TEST_SUITE("integration.admin_shell") {
  TEST_CASE("a shell whose connection the scheduler closed as idle connects again at its next command") {
    troupe::test::ClusterSpec spec;
    spec.workers = {};
    spec.log_level = "debug";
    spec.connections = {"idle_timeout = \"500ms\""};
    Cluster cluster(spec);
    auto scheduler = troupe::test::start_node_with_output(cluster.config, "scheduler");
    REQUIRE(troupe::test::await_log_line(*scheduler, "ready", 30s));
    troupe::test::ChildProcess shell({troupe::test::cli_binary(), "shell", "--json", "--address",
                                      "127.0.0.1:" + std::to_string(cluster.port)});
    REQUIRE(shell.write_stdin("store\n"));
    auto first = shell.read_line(20s);
    REQUIRE(first);
    CHECK(contains(*first, "\"batches\""));
    std::string seen;
    auto closed = troupe::test::await_log_line(*scheduler, "closing a connection", 20s, &seen);
    REQUIRE_MESSAGE(closed, seen);
    CHECK(closed->field("why") == "idle_timeout");
    REQUIRE(shell.write_stdin("store\n"));
    auto second = shell.read_line(20s);
    REQUIRE(second);
    CHECK(contains(*second, "\"batches\""));
    shell.close_stdin();
    const int status = shell.wait();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}
