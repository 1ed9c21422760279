// A real cluster: a scheduler and two workers as troupe-node processes on 127.0.0.1, driven
// through the Gateway over Cap'n Proto. Nodes are stopped by pid; the fault test uses kill -9.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <map>
#include <thread>

#include <csignal>

#include <kj/async-io.h>

#include <capnp/ez-rpc.h>

#include "schema/gateway.capnp.h"
#include "test/support/child_process.hpp"
#include "test/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string node_binary() {
  const char* path = std::getenv("TROUPE_NODE");
  REQUIRE_MESSAGE(path != nullptr, "TROUPE_NODE must name the troupe-node binary");
  return path;
}

/// A scheduler and two workers (a, b: two slots each on the default task list) with fast
/// heartbeats, so a lost worker is declared dead within 600 ms.
struct Cluster {
  troupe::test::TempDir dir;
  uint16_t port = free_port();
  std::string config = dir.path() + "/cluster.toml";
  std::map<std::string, std::unique_ptr<troupe::test::ChildProcess>> nodes;

  Cluster() {
    std::ofstream out(config);
    out << "[cluster]\nname = \"test\"\nheartbeat_interval = \"200ms\"\nunhealthy_after = \"400ms\"\n"
           "must_die_after = \"600ms\"\n\n"
        << "[[node]]\nname = \"scheduler\"\nroles = [\"scheduler\"]\nlisten = \"127.0.0.1:" << port
        << "\"\ndata_dir = \"data\"\n\n";
    for (const char* worker : {"worker-a", "worker-b"}) {
      out << "[[node]]\nname = \"" << worker << "\"\nroles = [\"worker\"]\nscheduler = \"127.0.0.1:" << port
          << "\"\ntask_lists = { default = 2 }\nlog_dir = \"logs/" << worker << "\"\n\n";
    }
  }

  void start(const std::string& name) {
    nodes[name] = std::make_unique<troupe::test::ChildProcess>(
        std::vector<std::string>{node_binary(), "--config", config, "--node", name});
  }

  std::string logs(const std::string& worker) const { return dir.path() + "/logs/" + worker; }
};

/// The Gateway's client side, with a deadline on every wait.
struct Client {
  capnp::EzRpcClient rpc;
  troupe::schema::ClientService::Client service;

  explicit Client(uint16_t port)
      : rpc("127.0.0.1", port), service(connect(rpc)) {}

  static troupe::schema::ClientService::Client connect(capnp::EzRpcClient& rpc) {
    auto gateway = rpc.getMain<troupe::schema::Gateway>();
    return gateway.clientRequest().send().wait(rpc.getWaitScope()).getClient();
  }

  std::string start(const std::string& id, const std::string& definition) {
    auto request = service.startWorkflowRequest();
    request.setWorkflowId(id);
    request.setDefinitionJson(definition);
    auto response = request.send().wait(rpc.getWaitScope());
    if (response.hasError() && response.getError().getCode() != troupe::schema::ErrorCode::NONE) {
      return std::string("error: ") + response.getError().getMessage().cStr();
    }
    return response.getWorkflowId().cStr();
  }

  std::string result(const std::string& id, std::chrono::seconds deadline) {
    auto request = service.resultRequest();
    request.setWorkflowId(id);
    auto timeout = rpc.getIoProvider().getTimer().afterDelay(deadline.count() * kj::SECONDS).then([] {
      return std::string("timed out");
    });
    auto answer = request.send().then([](auto response) {
      if (response.hasError() && response.getError().getCode() != troupe::schema::ErrorCode::NONE) {
        return std::string("error: ") + response.getError().getMessage().cStr();
      }
      auto r = response.getResult();
      return std::string(r.getState().cStr()) + (r.getDetail().size() ? std::string(": ") + r.getDetail().cStr() : "");
    });
    return answer.exclusiveJoin(kj::mv(timeout)).wait(rpc.getWaitScope());
  }
};

/// Connects once the scheduler accepts connections (polled, with a deadline).
std::unique_ptr<Client> connect(uint16_t port) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    try {
      return std::make_unique<Client>(port);
    } catch (const kj::Exception&) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(50ms);
    }
  }
}

/// Polls `condition` until it holds or `timeout` passes.
template <class F>
bool eventually(F condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

size_t count_files(const std::string& dir) {
  if (!fs::exists(dir)) return 0;
  size_t n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) n += entry.is_regular_file();
  return n;
}

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
    CHECK(count_files(cluster.logs("worker-a")) + count_files(cluster.logs("worker-b")) == 4);
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

    SUBCASE("the killed worker restarted with the same shard id registers again and runs tasks") {
      cluster.start(victim);
      REQUIRE(client->start("after-restart", R"({"name": "n", "tasks": [{"name": "t", "handler": "noop"}]})") ==
              "after-restart");
      CHECK(client->result("after-restart", 30s) == "SUCCESS");
    }
  }
}
