// A workflow's input as shell tasks see it, against real troupe-node processes ($TROUPE_NODE),
// the troupe CLI ($TROUPE_CLI) and the C++ GatewayClient: TROUPE_INPUT and TROUPE_WORKFLOW_INPUT
// in each task's environment (read back from the task's log), across a scheduler kill -9 and a
// rerun, and through files for an input too long for the environment.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "runtime/client/gateway_client.hpp"
#include "schema/json_syntax.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/gateway.hpp"

using namespace std::chrono_literals;
namespace client = troupe::client;
namespace fs = std::filesystem;
using troupe::test::Cluster;
using troupe::test::gateway;
using troupe::test::ClusterSpec;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::troupe_cli;

namespace {

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

/// A task running `script` with sh -c; `extra` adds members ("input", "dependsOn").
std::string shell_task(const std::string& name, const std::string& script, const std::string& extra = "") {
  return R"({"name": ")" + name + R"(", "shell": {"command": ["sh", "-c", )" + troupe::json_quote(script) + "]}" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

/// Prints the two input variables, one per line.
const std::string print_inputs = R"(printf 'input=%s\nworkflow=%s\n' "$TROUPE_INPUT" "$TROUPE_WORKFLOW_INPUT")";

ClusterSpec one_worker() {
  ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt}};
  return spec;
}

std::string start(client::GatewayClient& gateway, const std::string& id, const std::string& definition,
                  const std::string& input) {
  client::StartRequest request;
  request.definition_json = definition;
  request.input_json = input;
  request.workflow_id = id;
  auto started = gateway.start(request);
  REQUIRE_MESSAGE(started, (started ? "" : started.error().message));
  return *started;
}

std::string ended(client::GatewayClient& gateway, const std::string& id) {
  auto result = gateway.result(id, std::chrono::seconds(60));
  REQUIRE_MESSAGE(result, (result ? "" : result.error().message));
  return result->state + (result->detail.empty() ? "" : ": " + result->detail);
}

}  // namespace

TEST_SUITE("integration.task_input") {
  TEST_CASE("troupe submit --input reaches every shell task: TROUPE_INPUT is the task's own input, else the workflow's") {
    Cluster cluster(one_worker());
    cluster.start("scheduler");
    cluster.start("worker-a");
    const std::string definition = cluster.dir / "inputs.json";
    std::ofstream(definition) << R"({"name": "inputs", "tasks": [)" << shell_task("plain", print_inputs) << ", "
                              << shell_task("own", print_inputs, R"("input": {"part": 1})") << "]}";
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    gateway(cluster.port);  // the scheduler is up
    auto run = troupe_cli({"submit", definition, "--id", "in-1", "--input", R"({"n": 3})", "--wait", "--address",
                           address});
    REQUIRE_MESSAGE(run.code == 0, run.output);
    const std::string logs = cluster.logs("worker-a") + "/in-1/";
    CHECK(read_whole(logs + "plain.1.1.log") == "input={\"n\": 3}\nworkflow={\"n\": 3}\n");
    CHECK(read_whole(logs + "own.1.1.log") == "input={\"part\":1}\nworkflow={\"n\": 3}\n");

    // Without --input, the workflow's input is {}.
    run = troupe_cli({"submit", definition, "--id", "in-2", "--wait", "--address", address});
    REQUIRE_MESSAGE(run.code == 0, run.output);
    CHECK(read_whole(cluster.logs("worker-a") + "/in-2/plain.1.1.log") == "input={}\nworkflow={}\n");
  }

  TEST_CASE("tasks started after a scheduler kill -9, and in a rerun, still get the workflow's input") {
    ClusterSpec spec = one_worker();
    spec.worker_lease = "30s";  // the gate task rides out the scheduler's restart
    spec.recovery_window = "30s";
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    const std::string gate = cluster.dir / "gate";
    const std::string definition = R"({"name": "gated", "tasks": [)" +
                                   shell_task("gate", "while [ ! -e '" + gate + "' ]; do sleep 0.02; done") + ", " +
                                   shell_task("then", print_inputs, R"("dependsOn": ["gate"])") + "]}";
    auto client = gateway(cluster.port);
    start(*client, "restarted", definition, R"({"kept": "across restarts"})");
    const std::string logs = cluster.logs("worker-a") + "/restarted/";
    REQUIRE(eventually([&] { return fs::exists(logs + "gate.1.1.log"); }, 30s));

    client.reset();
    cluster.nodes["scheduler"]->kill(SIGKILL);
    cluster.nodes["scheduler"]->wait();
    cluster.start("scheduler");
    client = gateway(cluster.port);
    std::ofstream(gate) << "open";
    CHECK(ended(*client, "restarted") == "SUCCESS");
    const std::string expected = "input={\"kept\": \"across restarts\"}\nworkflow={\"kept\": \"across restarts\"}\n";
    CHECK(read_whole(logs + "then.1.1.log") == expected);

    auto rerun = client->rerun("restarted", "then");
    REQUIRE_MESSAGE(rerun, (rerun ? "" : rerun.error().message));
    CHECK(ended(*client, "restarted") == "SUCCESS");
    CHECK(read_whole(logs + "then.1.2.log") == expected);
  }

  TEST_CASE("a 1 MiB input reaches the tasks through files named by TROUPE_INPUT_FILE, removed once they end") {
    Cluster cluster(one_worker());
    cluster.start("scheduler");
    cluster.start("worker-a");
    const std::string copies = cluster.dir / "copies";
    fs::create_directories(copies);
    // Neither variable is set: the input is in a file, the same one for both without an own input.
    const std::string plain = R"(test -z "${TROUPE_INPUT+set}${TROUPE_WORKFLOW_INPUT+set}" || exit 3
test "$TROUPE_INPUT_FILE" = "$TROUPE_WORKFLOW_INPUT_FILE" || exit 4
cp "$TROUPE_INPUT_FILE" ')" + copies + R"(/plain.json' && echo "file=$TROUPE_INPUT_FILE")";
    // A small input of its own stays in the environment; the workflow's comes in a file.
    const std::string own = R"(test -z "${TROUPE_INPUT_FILE+set}${TROUPE_WORKFLOW_INPUT+set}" || exit 3
printf 'input=%s\n' "$TROUPE_INPUT"
cp "$TROUPE_WORKFLOW_INPUT_FILE" ')" + copies + R"(/own.json' && echo "file=$TROUPE_WORKFLOW_INPUT_FILE")";
    const std::string definition = R"({"name": "big", "tasks": [)" + shell_task("plain", plain) + ", " +
                                   shell_task("own", own, R"("input": {"part": 1})") + "]}";
    const std::string filler = "{\"blob\": \"\"}";
    const std::string input = "{\"blob\": \"" + std::string((size_t{1} << 20) - filler.size(), 'x') + "\"}";
    REQUIRE(input.size() == size_t{1} << 20);

    auto client = gateway(cluster.port);
    start(*client, "big-1", definition, input);
    const std::string logs = cluster.logs("worker-a") + "/big-1/";
    REQUIRE_MESSAGE(ended(*client, "big-1") == "SUCCESS",
                    read_whole(logs + "plain.1.1.log") << read_whole(logs + "own.1.1.log"));
    CHECK(read_whole(copies + "/plain.json") == input);
    CHECK(read_whole(copies + "/own.json") == input);
    // Beside the log, named after the invocation.
    const std::string plain_log = read_whole(logs + "plain.1.1.log");
    const std::string plain_prefix = "file=" + logs + "plain.1.1.";
    REQUIRE_MESSAGE(plain_log.starts_with(plain_prefix), plain_log);
    CHECK(plain_log.ends_with(".input.json\n"));
    const std::string own_log = read_whole(logs + "own.1.1.log");
    const std::string own_prefix = "input={\"part\":1}\nfile=" + logs + "own.1.1.";
    REQUIRE_MESSAGE(own_log.starts_with(own_prefix), own_log);
    CHECK(own_log.ends_with(".workflow-input.json\n"));
    // Gone with the processes that read them.
    CHECK_FALSE(fs::exists(plain_log.substr(5, plain_log.size() - 6)));
    CHECK_FALSE(fs::exists(own_log.substr(own_log.find("file=") + 5, own_log.size() - own_log.find("file=") - 6)));
  }

  TEST_CASE("tasks whose names map to the same file name get input files of their own, readable by the user alone") {
    Cluster cluster(one_worker());
    cluster.start("scheduler");
    cluster.start("worker-a");
    const std::string copies = cluster.dir / "copies";
    fs::create_directories(copies);
    // "a b" and "a_b" share their log's file name; both run at once, each with its own big input,
    // and each waits until the other's file exists, so neither can have ended and removed its own.
    auto task = [&](const std::string& name, const std::string& copy, char fill) {
      const std::string script = R"(stat -c %a "$TROUPE_INPUT_FILE" > ')" + copies + "/" + copy + R"(.mode'
cp "$TROUPE_INPUT_FILE" ')" + copies + "/" + copy + R"(.json'
touch ')" + copies + "/" + copy + R"(.ready'
i=0; while [ ! -e ')" + copies + R"(/a.ready' ] || [ ! -e ')" + copies + R"(/b.ready' ]; do i=$((i+1)); [ $i -gt 600 ] && exit 5; sleep 0.05; done
cmp "$TROUPE_INPUT_FILE" ')" + copies + "/" + copy + R"(.json' || exit 6)";
      return shell_task(name, script, R"("input": {"blob": ")" + std::string(size_t{100} << 10, fill) + R"("})");
    };
    const std::string definition =
        R"({"name": "clash", "tasks": [)" + task("a b", "a", 'a') + ", " + task("a_b", "b", 'b') + "]}";
    auto client = gateway(cluster.port);
    start(*client, "clash-1", definition, "{}");
    REQUIRE(ended(*client, "clash-1") == "SUCCESS");
    CHECK(read_whole(copies + "/a.json") == R"({"blob":")" + std::string(size_t{100} << 10, 'a') + R"("})");
    CHECK(read_whole(copies + "/b.json") == R"({"blob":")" + std::string(size_t{100} << 10, 'b') + R"("})");
    CHECK(read_whole(copies + "/a.mode") == "600\n");
    CHECK(read_whole(copies + "/b.mode") == "600\n");
  }
}
