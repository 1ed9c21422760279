// What a user is told when what they give is wrong, against real processes: JSON that is no
// JSON (a workflow input, a task's result, a definition) refused with its line and column, a
// definition file holding JSON that is no object, a listen address in use (troupe-node and
// troupe dev), and a --listen that would have broken the TOML file troupe dev writes.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "runtime/auth/task_token.hpp"
#include "runtime/client/gateway_client.hpp"
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

/// A scheduler and one worker, running; the address clients use.
struct Running {
  Running() : cluster(one_worker()), address("127.0.0.1:" + std::to_string(cluster.port)) {
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
    std::ofstream(path) << text;
    return path;
  }
  Cluster cluster;
  std::string address;
  std::unique_ptr<client::GatewayClient> client;
};

const char* noop_definition = R"({"name": "one", "tasks": [{"name": "t", "handler": "noop"}]})";

/// A TCP socket listening on 127.0.0.1 on a port the kernel picked: the port is in use while
/// the object lives.
struct HeldPort {
  HeldPort() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port = ntohs(address.sin_port);
  }
  ~HeldPort() { ::close(fd); }
  int fd = -1;
  uint16_t port = 0;
};

}  // namespace

TEST_SUITE("integration.user_errors") {
  TEST_CASE("a workflow input that is not JSON is refused at submit with its line and column, and nothing starts") {
    Running running;
    const std::string definition = running.file("one.json", noop_definition);
    auto refused = troupe_cli({"submit", definition, "--id", "bad-input", "--input", "notjson", "--address",
                               running.address});
    CHECK(refused.code == 2);
    CHECK_MESSAGE(contains(refused.output, "the workflow input is not valid JSON: line 1, column 1: expected a value"),
                  refused.output);
    CHECK(contains(refused.output, "found 'notjson'"));
    auto described = running.client->describe("bad-input");
    REQUIRE_FALSE(described);
    CHECK(described.error().code == troupe::Errc::NOT_FOUND);

    client::StartRequest request;
    request.definition_json = noop_definition;
    request.input_json = "{\"n\": 3,\n \"m\": }";
    auto started = running.client->start(request);
    REQUIRE_FALSE(started);
    CHECK(started.error().code == troupe::Errc::INVALID_ARGUMENT);
    CHECK(started.error().message ==
          "the workflow input is not valid JSON: line 2, column 7: expected a value (an object, array, string, "
          "number, true, false or null), found '}'");
  }

  TEST_CASE("a completion token minted with the cluster token is refused: task tokens have a key of their own") {
    ClusterSpec spec = Running::one_worker();
    spec.token_file = "cluster.token";
    Cluster cluster(spec);
    const std::string secret = "the-cluster-token-everyone-has-0123456789";
    std::ofstream(cluster.dir / "cluster.token") << secret << "\n";
    cluster.start("scheduler");
    cluster.start("worker-a");
    client::ConnectOptions options;
    options.token = secret;
    std::unique_ptr<client::GatewayClient> client;
    REQUIRE(eventually([&] {
      auto c = client::GatewayClient::connect("127.0.0.1", cluster.port, options);
      if (c) client = std::move(*c);
      return client != nullptr;
    }, 30s));
    const std::string token_file = cluster.dir / "token";
    client::StartRequest request;
    request.definition_json = R"({"name": "handoff", "tasks": [{"name": "hand", "asyncCompletion": true,
        "shell": {"command": ["sh", "-c", "printf %s \"$TROUPE_TASK_TOKEN\" > )" + token_file + R"("]}}]})";
    request.workflow_id = "forged";
    REQUIRE(client->start(request));
    REQUIRE(eventually([&] {
      auto status = client->describe("forged");
      return status && !status->tasks.empty() && status->tasks[0].awaiting_completion;
    }, 30s));
    const std::string token = read_whole(token_file);
    // What anyone with the cluster token could make, for an invocation id anyone can predict.
    CHECK_FALSE(troupe::runtime::verify_task_token(secret, token).has_value());
    for (const std::string nonce : {"", "00112233445566778899aabbccddeeff"}) {
      const std::string forged = troupe::runtime::mint_task_token(secret, {"forged", "hand", "forged/hand/1.1", nonce});
      auto refused = client->complete_task(forged, "{\"approved\": true}");
      REQUIRE_FALSE(refused);
      CHECK(refused.error().code == troupe::Errc::INVALID_ARGUMENT);
      CHECK_MESSAGE(contains(refused.error().message, "not signed by this scheduler"), refused.error().message);
    }
    auto status = client->describe("forged");
    REQUIRE(status);
    CHECK(status->tasks[0].awaiting_completion);
    REQUIRE(client->complete_task(token, "{\"approved\": true}"));
    auto result = client->result("forged", std::chrono::seconds(30));
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("a task's result given to complete that is not JSON is refused with its line and column") {
    Running running;
    const std::string token_file = running.cluster.dir / "token";
    client::StartRequest request;
    request.definition_json = R"({"name": "handoff", "tasks": [{"name": "hand", "asyncCompletion": true,
        "shell": {"command": ["sh", "-c", "printf %s \"$TROUPE_TASK_TOKEN\" > )" + token_file + R"("]}}]})";
    request.workflow_id = "handoff-1";
    REQUIRE(running.client->start(request));
    REQUIRE(eventually([&] {
      auto status = running.client->describe("handoff-1");
      return status && !status->tasks.empty() && status->tasks[0].awaiting_completion;
    }, 30s));
    const std::string token = read_whole(token_file);
    REQUIRE(token.size() > 20);

    auto refused = troupe_cli({"complete", token, "{\"ok\": yes}", "--address", running.address});
    CHECK(refused.code == 2);
    CHECK_MESSAGE(contains(refused.output, "the task's result is not valid JSON: line 1, column 8: expected a value"),
                  refused.output);
    auto plain = running.client->complete_task(token, "done");
    REQUIRE_FALSE(plain);
    CHECK(plain.error().code == troupe::Errc::INVALID_ARGUMENT);
    // The task still waits for its token, which still ends it.
    auto status = running.client->describe("handoff-1");
    REQUIRE(status);
    CHECK(status->state == "RUNNING");
    CHECK(status->tasks[0].awaiting_completion);
    auto completed = troupe_cli({"complete", token, "{\"ok\": true}", "--address", running.address});
    CHECK_MESSAGE(completed.code == 0, completed.output);
    auto result = running.client->result("handoff-1", std::chrono::seconds(30));
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("a control action the schema does not define is refused, and the workflow carries on") {
    Cluster cluster(Running::one_worker());
    cluster.start("scheduler");
    cluster.start("worker-a");
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
    auto raw = troupe::test::connect(cluster.port);
    REQUIRE(raw->start("held-1", R"({"name": "held", "tasks": [{"name": "wait", "shell": {"command": ["sleep", "30"]}}]})") ==
            "held-1");
    auto control = raw->service.controlRequest();
    control.setWorkflowId("held-1");
    control.setAction(static_cast<troupe::schema::ControlAction>(4));  // what a newer or hostile client may send
    auto answer = control.send().wait(raw->rpc.getWaitScope());
    REQUIRE(answer.hasError());
    CHECK(answer.getError().getCode() == troupe::schema::ErrorCode::INVALID_ARGUMENT);
    CHECK_MESSAGE(contains(answer.getError().getMessage().cStr(),
                           "unknown control action 4 (expected pause, resume, stop or kill)"),
                  answer.getError().getMessage().cStr());
    auto status = troupe_cli({"status", "held-1", "--json", "--address", address});
    CHECK_MESSAGE(contains(status.output, R"({"workflowId":"held-1","state":"RUNNING")"), status.output);
    CHECK(troupe_cli({"kill", "held-1", "--address", address}).code == 0);
  }

  TEST_CASE("a definition file with a syntax error is refused with the error's line and column") {
    Running running;
    const std::string path = running.file("broken.json", "{\"name\": \"broken\",\n  \"tasks\": [\n"
                                                         "    {\"name\": \"a\", \"handler\": \"noop\",}]}\n");
    auto refused = troupe_cli({"submit", path, "--address", running.address});
    CHECK(refused.code == 2);
    // Checked by the CLI before it is sent: FILE:LINE:COLUMN, as compilers say it.
    CHECK_MESSAGE(contains(refused.output, path + ":3:37: a comma must be followed by another member"), refused.output);
    // The scheduler says the same of definition text sent to it.
    auto started = running.client->start(client::StartRequest{read_whole(path), "", "", ""});
    REQUIRE_FALSE(started);
    CHECK_MESSAGE(contains(started.error().message, "$: is not valid JSON: line 3, column 37: a comma must be followed by "
                                                    "another member"),
                  started.error().message);
  }

  TEST_CASE("a definition file holding JSON that is no object is refused as such, not looked up as a name") {
    Running running;
    auto refused = troupe_cli({"submit", running.file("list.json", "[]\n"), "--address", running.address});
    CHECK(refused.code == 2);
    CHECK_MESSAGE(contains(refused.output, "a workflow definition is a JSON object; this is an array"),
                  refused.output);
    CHECK_FALSE(contains(refused.output, "no definition named"));
  }

  TEST_CASE("troupe-node whose listen address is in use says so and how to choose another, exit code 3") {
    HeldPort held;
    troupe::test::TempDir dir;
    ClusterSpec spec;
    spec.workers = {};
    const std::string config = dir / "cluster.toml";
    std::ofstream(config) << troupe::test::cluster_config_text(spec, held.port);
    auto node = troupe::test::start_node_with_output(config, "scheduler");
    const std::string said = troupe::test::read_output(*node, 30s);
    const int status = node->wait();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 3);
    CHECK_MESSAGE(contains(said, "cannot listen on 127.0.0.1:" + std::to_string(held.port) +
                                     ": address already in use; another troupe may be running there; choose "
                                     "another port with --listen (troupe dev) or the node's listen address in "
                                     "the config"),
                  said);
  }

  TEST_CASE("troupe dev whose --listen address is in use says so, exit code 3") {
    HeldPort held;
    troupe::test::TempDir dir;
    const std::string address = "127.0.0.1:" + std::to_string(held.port);
    auto run = troupe_cli({"dev", "--listen", address, "--dir", dir / "dev"});
    CHECK(run.code == 3);
    CHECK_MESSAGE(contains(run.output, "cannot listen on " + address + ": address already in use"), run.output);
    CHECK(contains(run.output, "--listen"));
  }

  TEST_CASE("troupe dev writes --listen into its config as a TOML string, whatever it holds, and refuses it") {
    troupe::test::TempDir dir;
    // Quotes and line breaks that, pasted into the file, would have added keys and a table.
    const std::string hostile = "127.0.0.1:" + std::to_string(troupe::test::free_port()) +
                                "\"\nroles = [\"worker\"]\n[injected]\nx = \"1";
    auto run = troupe_cli({"dev", "--listen", hostile, "--dir", dir / "dev"});
    CHECK(run.code == 2);
    CHECK_MESSAGE(contains(run.output, "node[0].listen: bad address"), run.output);
    // The file parses, and holds the text as the listen address and nothing else of it.
    toml::table root;
    try {
      root = toml::parse_file(dir / "dev/dev.toml");
    } catch (const toml::parse_error& e) {
      FAIL("dev.toml does not parse: " << e.description());
    }
    CHECK(root.size() == 2);  // [cluster] and [[node]]
    CHECK_FALSE(root.contains("injected"));
    const auto* nodes = root["node"].as_array();
    REQUIRE(nodes);
    REQUIRE(nodes->size() == 1);
    const auto& node = *nodes->get(0)->as_table();
    CHECK(node["listen"].value_or(std::string()) == hostile);
    const auto* roles = node["roles"].as_array();
    REQUIRE(roles);
    CHECK(roles->size() == 2);
    CHECK(node["data_dir"].value_or(std::string()) == dir / "dev");
  }
}
