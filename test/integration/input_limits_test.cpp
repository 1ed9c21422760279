// The limits on what users submit, against real processes: each refused by the scheduler with
// the limit, the size given and what to do (and by the CLI, before sending, what no scheduler
// takes); invalid UTF-8 and members named twice refused with their JSON path; the longest
// workflow ids and names a scheduler takes run their shell tasks; and an asyncCompletion task
// whose token is never used times out at its startToClose.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "runtime/client/gateway_client.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/gateway.hpp"

using namespace std::chrono_literals;
namespace client = troupe::client;
using troupe::Errc;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::gateway;
using troupe::test::troupe_cli;

namespace {

/// A scheduler and one worker from `spec`, running; the address clients use.
struct Running {
  explicit Running(ClusterSpec spec = one_worker())
      : cluster(std::move(spec)), address("127.0.0.1:" + std::to_string(cluster.port)) {
    cluster.start("scheduler");
    cluster.start("worker-a");
    client = gateway(cluster.port);
  }
  static ClusterSpec one_worker() {
    ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    return spec;
  }
  /// Writes `text` to a file in the cluster's directory; returns its path.
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = cluster.dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  /// Starts `definition` under `id` with `input`; the scheduler's answer.
  troupe::Result<std::string> start(const std::string& id, const std::string& definition,
                                    const std::string& input = "") {
    return client->start(client::StartRequest{definition, input, id, ""});
  }
  Cluster cluster;
  std::string address;
  std::unique_ptr<client::GatewayClient> client;
};

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

const char* noop_definition = R"({"name": "one", "tasks": [{"name": "t", "handler": "noop"}]})";

/// `error` is INVALID_ARGUMENT and says `part`.
bool refused_saying(const troupe::Result<std::string>& answer, const std::string& part) {
  if (answer) return false;
  const bool says = answer.error().code == Errc::INVALID_ARGUMENT && contains(answer.error().message, part);
  if (!says) MESSAGE("the refusal was: " << answer.error().message);
  return says;
}

}  // namespace

TEST_SUITE("integration.input_limits") {
  TEST_CASE("a scheduler refuses what exceeds its [limits], naming the limit, the size and what to do") {
    ClusterSpec spec = Running::one_worker();
    spec.limits = {{"definition_size", "\"2KiB\""}, {"tasks_per_workflow", "3"}, {"workflow_id_length", "64"},
                   {"name_length", "16"},           {"input_size", "\"1KiB\""},  {"result_size", "\"1KiB\""}};
    Running running(spec);

    std::string big = R"({"name": "big", "description": ")" + std::string(2048, 'd') + R"(", "tasks": [{"name": "t", "handler": "noop"}]})";
    CHECK(refused_saying(running.start("big", big), "$: the definition is " + std::to_string(big.size()) +
                                                        " bytes (2.1 KiB); the limit is 2048 bytes (2 KiB) "
                                                        "(limits.definition_size in the cluster config): make it smaller"));
    const std::string four = R"({"name": "four", "tasks": [{"name": "a", "handler": "noop"}, {"name": "b", "handler": "noop"},
        {"name": "c", "handler": "noop"}, {"name": "d", "handler": "noop"}]})";
    CHECK(refused_saying(running.start("four", four),
                         "$.tasks: the workflow is 4 tasks; the limit is 3 tasks (limits.tasks_per_workflow in the "
                         "cluster config): split it into several workflows, or raise the limit"));
    CHECK(refused_saying(running.start("named", R"({"name": "a-seventeen-bytes", "tasks": [{"name": "t", "handler": "noop"}]})"),
                         "$.name: the workflow name is 17 bytes; the limit is 16 bytes (limits.name_length"));
    CHECK(refused_saying(running.start(std::string(65, 'i'), noop_definition),
                         "the workflow id is 65 bytes; the limit is 64 bytes (limits.workflow_id_length in the "
                         "cluster config): choose a shorter id"));
    const std::string input = R"({"blob": ")" + std::string(1100, 'x') + R"("})";
    CHECK(refused_saying(running.start("input", noop_definition, input),
                         "the workflow input is 1112 bytes (1.1 KiB); the limit is 1024 bytes (1 KiB) "
                         "(limits.input_size in the cluster config)"));
    const std::string task_input = R"({"name": "own", "tasks": [{"name": "t", "handler": "noop", "input": )" + input + "}]}";
    CHECK(refused_saying(running.start("task-input", task_input), "$.tasks[0].input: the task's input is 1111 bytes"));
    // The CLI passes the scheduler's refusal on, exit code 2.
    auto cli = troupe_cli({"submit", running.file("four.json", four), "--address", running.address});
    CHECK(cli.code == 2);
    CHECK_MESSAGE(contains(cli.output, "the workflow is 4 tasks; the limit is 3 tasks"), cli.output);
    // Nothing of them was recorded.
    for (const char* id : {"big", "four", "named", "input", "task-input"}) {
      auto described = running.client->describe(id);
      REQUIRE_FALSE(described);
      CHECK(described.error().code == Errc::NOT_FOUND);
    }

    // Results and failures a client gives an asyncCompletion task: each limit at its place.
    const std::string token_file = running.cluster.dir / "token";
    const std::string handoff = R"({"name": "handoff", "tasks": [{"name": "hand", "asyncCompletion": true,
        "shell": {"command": ["sh", "-c", "printf %s \"$TROUPE_TASK_TOKEN\" > )" + token_file + R"("]}}]})";
    REQUIRE(running.start("handoff", handoff));
    REQUIRE(eventually([&] {
      auto status = running.client->describe("handoff");
      return status && !status->tasks.empty() && status->tasks[0].awaiting_completion;
    }, 30s));
    const std::string token = read_whole(token_file);
    auto big_result = running.client->complete_task(token, "\"" + std::string(1100, 'r') + "\"");
    REQUIRE_FALSE(big_result);
    CHECK(big_result.error().code == Errc::INVALID_ARGUMENT);
    CHECK_MESSAGE(contains(big_result.error().message, "the task's result is 1102 bytes (1.1 KiB); the limit is 1024 "
                                                       "bytes (1 KiB) (limits.result_size in the cluster config)"),
                  big_result.error().message);
    auto long_reason = running.client->fail_task(token, std::string(17, 'R'), "");
    REQUIRE_FALSE(long_reason);
    CHECK(contains(long_reason.error().message, "the failure's reason is 17 bytes; the limit is 16 bytes"));
    auto long_details = running.client->fail_task(token, "Rejected", std::string(1025, 'd'));
    REQUIRE_FALSE(long_details);
    CHECK(contains(long_details.error().message, "the failure's details is 1025 bytes"));
    // Within the limits, the token still ends the task.
    REQUIRE(running.client->complete_task(token, "{\"ok\": true}"));
    auto result = running.client->result("handoff", 30s);
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("the CLI refuses what no scheduler takes before sending it") {
    troupe::test::TempDir dir;
    const std::string address = "127.0.0.1:" + std::to_string(troupe::test::free_port());  // nobody listens
    const std::string huge = dir / "huge.json";
    {
      std::ofstream out(huge, std::ios::binary);
      out << std::string((size_t{48} << 20) + 1, ' ');
    }
    auto refused = troupe_cli({"submit", huge, "--address", address});
    CHECK(refused.code == 2);
    CHECK_MESSAGE(contains(refused.output, huge + " is 50331649 bytes (48.0 MiB); no scheduler takes more than 50331648 "
                                                  "bytes (48 MiB) (the most limits.definition_size may be set to in a "
                                                  "cluster config)"),
                  refused.output);
    const std::string one = dir / "one.json";
    std::ofstream(one) << noop_definition;
    auto long_id = troupe_cli({"submit", one, "--id", std::string(513, 'i'), "--address", address});
    CHECK(long_id.code == 2);
    CHECK_MESSAGE(contains(long_id.output, "the workflow id is 513 bytes; the limit is 512 bytes"), long_id.output);
    auto control = troupe_cli({"submit", one, "--id", "wf\x1b[2J", "--address", address});
    CHECK(control.code == 2);
    CHECK_MESSAGE(contains(control.output, "the workflow id 'wf\\x1b[2J' has a control character at byte offset 2"),
                  control.output);
    CHECK_FALSE(contains(long_id.output + control.output + refused.output, "cannot connect"));
  }

  TEST_CASE("invalid UTF-8 in a definition, an id or an input is refused with its JSON path and byte offset") {
    Running running;
    const std::string definition = "{\"name\": \"one\",\n \"tasks\": [{\"name\": \"caf\xe9\", \"handler\": \"noop\"}]}";
    auto refused = running.start("utf8", definition);
    CHECK(refused_saying(refused, "$.tasks[0].name: line 2, column 25: invalid UTF-8 at byte offset 40 (byte 3 of "
                                  "the string): the character that begins with byte 0xe9 is cut short by byte 0x22"));
    auto cli = troupe_cli({"submit", running.file("latin1.json", definition), "--address", running.address});
    CHECK(cli.code == 2);
    CHECK_MESSAGE(contains(cli.output, "latin1.json:2:25: at $.tasks[0].name: invalid UTF-8 at byte offset 40"),
                  cli.output);
    CHECK(refused_saying(running.start("utf8-input", noop_definition, "{\"who\": \"\xff\"}"),
                         "the workflow input is not valid JSON: line 1, column 10, at $.who: invalid UTF-8 at byte "
                         "offset 9"));
    // An escape for half a surrogate pair decodes to no character either.
    CHECK(refused_saying(running.start("surrogate", noop_definition, R"(["\ud800"])"),
                         "at $[0]: invalid UTF-8 at byte offset 2"));
    CHECK(refused_saying(running.start("wf-\xc0\xaf", noop_definition),
                         "the workflow id is not valid UTF-8: at byte offset 3, byte 0xc0 begins an overlong encoding"));
    // Nothing is stored, so nothing prints back wrong.
    auto listed = troupe_cli({"list", "--json", "--address", running.address});
    CHECK(listed.code == 0);
    CHECK_MESSAGE(contains(listed.output, "\"workflows\":[]"), listed.output);
  }

  TEST_CASE("a definition that names a member twice is refused at the member's path") {
    Running running;
    const std::string definition = "{\"name\": \"twice\", \"tasks\": [\n"
                                   "  {\"name\": \"a\", \"handler\": \"noop\", \"handler\": \"sleep\"}]}";
    CHECK(refused_saying(running.start("twice", definition),
                         "$.tasks[0].handler: line 2, column 36: the member name \"handler\" is given twice in one "
                         "object (at byte offset 64, and first at line 2, column 17)"));
    auto cli = troupe_cli({"submit", running.file("twice.json", definition), "--address", running.address});
    CHECK(cli.code == 2);
    CHECK_MESSAGE(contains(cli.output, "twice.json:2:36: at $.tasks[0].handler: the member name \"handler\" is given twice"),
                  cli.output);
    // An input may name members as it likes: it is the tasks' to read.
    auto started = running.start("input-twice", noop_definition, R"({"k": 1, "k": 2})");
    REQUIRE_MESSAGE(started, started.error().message);
    auto result = running.client->result("input-twice", 30s);
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("the longest workflow id and task name a scheduler takes run their shell tasks and keep their logs") {
    Running running;
    // 512 bytes (the longest id), with characters that file names cannot hold as they are.
    std::string id = "nightly/";
    while (id.size() < 512) id += "étape-";
    id.resize(511);
    id += "z";
    REQUIRE(id.size() == 512);
    const std::string task(200, 't');  // the longest name by default
    // An input too long for the environment goes to a file beside the log.
    const std::string input = R"({"blob": ")" + std::string(100 * 1024, 'x') + R"("})";
    const std::string definition = R"({"name": "long", "tasks": [{"name": ")" + task +
                                   R"(", "shell": {"command": ["sh", "-c", "echo hello from $TROUPE_ATTEMPT; test -s \"$TROUPE_INPUT_FILE\""]}}]})";
    REQUIRE(running.start(id, definition, input));
    auto result = running.client->result(id, 60s);
    REQUIRE(result);
    CHECK_MESSAGE(result->state == "SUCCESS", result->detail);
    auto logs = troupe_cli({"logs", id, task, "--address", running.address});
    CHECK_MESSAGE(logs.code == 0, logs.output);
    CHECK_MESSAGE(contains(logs.output, "hello from 1"), logs.output);
  }

  TEST_CASE("an asyncCompletion task whose token is never used times out at its startToClose, and the workflow fails so") {
    Running running;
    const std::string definition = R"({"name": "forgotten", "tasks": [{"name": "ask", "asyncCompletion": true,
        "shell": {"command": ["true"]},
        "timeouts": {"scheduleToStart": "1m", "startToClose": "2s"},
        "retry": {"initialInterval": "100ms", "maximumAttempts": 2}}]})";
    REQUIRE(running.start("forgotten", definition));
    REQUIRE(eventually([&] {
      auto status = running.client->describe("forgotten");
      return status && !status->tasks.empty() && status->tasks[0].awaiting_completion;
    }, 30s));
    // Each attempt hands off and waits for a token nobody uses; each times out after 2 s.
    auto result = running.client->result("forgotten", 60s);
    REQUIRE(result);
    CHECK(result->state == "FAILED");
    CHECK_MESSAGE(contains(result->detail, "Timeout:startToClose"), result->detail);
    auto status = running.client->describe("forgotten");
    REQUIRE(status);
    CHECK(status->tasks[0].attempt == 2);
    CHECK(status->tasks[0].failure == "Timeout:startToClose");
    CHECK_FALSE(status->tasks[0].awaiting_completion);
  }
}
