// The scheduler's [connections] limits on a real troupe-node on 127.0.0.1: how many connections
// it keeps (in all and per peer address), how long one may wait to be admitted or stay idle,
// what it may send before admission, and how much memory a peer that never reads its answers
// can make the scheduler hold, with credentials and without.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <thread>
#include <algorithm>
#include <string>
#include <vector>

#include <capnp/message.h>
#include <capnp/rpc.capnp.h>
#include <capnp/schema.h>
#include <capnp/serialize.h>

#include "runtime/client/gateway_client.hpp"
#include "schema/gateway.capnp.h"
#include "test/support/cluster.hpp"
#include "test/support/temp_dir.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::eventually;
using troupe::test::open_connection;
using troupe::test::still_running;

namespace {

// --- raw connections ------------------------------------------------------------------------

/// Whether the peer closed `fd` within `timeout` (whatever it sent first is read and dropped).
bool hung_up_within(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char discard[65536];
    const ssize_t n = ::recv(fd, discard, sizeof discard, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return true;
  }
}

/// Writes as much of `bytes` as the socket takes within `timeout` without the peer reading
/// (the socket is made non-blocking); how many bytes went.
size_t write_until_blocked(int fd, const std::string& bytes, std::chrono::milliseconds timeout) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t sent = 0;
  while (sent < bytes.size() && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) break;
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, 50);
  }
  return sent;
}

std::string framed(capnp::MessageBuilder& message) {
  auto words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

/// Bootstrap (question 0), then Gateway.client(`token`) on it (question 1).
std::string gateway_client_call(const std::string& token) {
  capnp::MallocMessageBuilder bootstrap;
  bootstrap.initRoot<capnp::rpc::Message>().initBootstrap().setQuestionId(0);
  capnp::MallocMessageBuilder call;
  auto c = call.initRoot<capnp::rpc::Message>().initCall();
  c.setQuestionId(1);
  c.initTarget().initPromisedAnswer().setQuestionId(0);
  c.setInterfaceId(capnp::typeId<troupe::schema::Gateway>());
  c.setMethodId(capnp::Schema::from<troupe::schema::Gateway>().getMethodByName("client").getIndex());
  c.initParams().getContent().initAs<troupe::schema::Gateway::ClientParams>().setToken(token);
  return framed(bootstrap) + framed(call);
}

/// `count` calls of ClientService.list pipelined on the service Gateway.client (question 1)
/// answers, questions 2, 3, ...
std::string pipelined_list_calls(uint32_t count) {
  const auto method = capnp::Schema::from<troupe::schema::Gateway>().getMethodByName("client");
  const uint16_t client_field = static_cast<uint16_t>(
      method.getResultType().getFieldByName("client").getProto().getSlot().getOffset());
  const uint16_t list = capnp::Schema::from<troupe::schema::ClientService>().getMethodByName("list").getIndex();
  std::string out;
  for (uint32_t i = 0; i < count; ++i) {
    capnp::MallocMessageBuilder call(64);
    auto c = call.initRoot<capnp::rpc::Message>().initCall();
    c.setQuestionId(2 + i);
    auto promised = c.initTarget().initPromisedAnswer();
    promised.setQuestionId(1);
    promised.initTransform(1)[0].setGetPointerField(client_field);
    c.setInterfaceId(capnp::typeId<troupe::schema::ClientService>());
    c.setMethodId(list);
    c.initParams().getContent().initAs<troupe::schema::ClientService::ListParams>();
    out += framed(call);
  }
  return out;
}

/// The resident memory of process `pid` in bytes (VmRSS), or 0.
uint64_t resident_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

/// The most resident memory process `pid` had while watched for `window` (sampled every 50 ms):
/// what a peer made the scheduler hold, including what it was still working through.
uint64_t peak_resident_bytes(pid_t pid, std::chrono::milliseconds window) {
  const auto end = std::chrono::steady_clock::now() + window;
  uint64_t peak = 0;
  do {
    peak = std::max(peak, resident_bytes(pid));
    std::this_thread::sleep_for(50ms);
  } while (std::chrono::steady_clock::now() < end);
  return peak;
}

bool client_answers(uint16_t port, const std::string& token = {}) {
  troupe::client::ConnectOptions options;
  options.timeout = 2s;
  options.token = token;
  auto client = troupe::client::GatewayClient::connect("127.0.0.1", port, options);
  return client.has_value() && (*client)->list(troupe::client::ListQuery{}).has_value();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A scheduler alone, its output in scheduler.log at debug level, with `connections` lines.
struct Scheduler {
  Cluster cluster;
  std::string log = cluster.dir / "scheduler.log";

  explicit Scheduler(std::vector<std::string> connections, std::string token_file = {})
      : cluster(spec(std::move(connections), std::move(token_file))) {
    cluster.nodes["scheduler"] = std::make_unique<troupe::test::ChildProcess>(std::vector<std::string>{
        "/bin/sh", "-c", "exec \"$0\" --config \"$1\" --node scheduler 2>>\"$2\"", troupe::test::node_binary(),
        cluster.config, log});
    REQUIRE(eventually([&] { return troupe::test::has_log_line(read_file(log), "ready"); }, 30s));
  }

  static ClusterSpec spec(std::vector<std::string> connections, std::string token_file) {
    ClusterSpec s;
    s.workers = {};
    s.log_level = "debug";
    s.connections = std::move(connections);
    s.token_file = std::move(token_file);
    return s;
  }

  bool logged(std::string_view message, std::string_view why) const {
    return troupe::test::has_log_line(read_file(log), message, {{"why", why}});
  }
  pid_t pid() { return cluster.nodes.at("scheduler")->pid(); }
};

struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds) ::close(fd);
  }
};

}  // namespace

TEST_SUITE("integration.connection_limits") {
  TEST_CASE("a peer over max_connections_per_peer is closed at once; once one of its connections ends, it is served") {
    Scheduler scheduler({"max_connections_per_peer = 4", "handshake_timeout = \"1h\""});
    Fds held;
    for (int i = 0; i < 4; ++i) {
      held.fds.push_back(open_connection(scheduler.cluster.port));
      REQUIRE(held.fds.back() >= 0);
    }
    const int fifth = open_connection(scheduler.cluster.port);
    REQUIRE(fifth >= 0);
    CHECK(hung_up_within(fifth, 10s));
    ::close(fifth);
    for (int fd : held.fds) CHECK_FALSE(hung_up_within(fd, 100ms));
    CHECK(troupe::test::has_log_line(read_file(scheduler.log), "connection limit reached; closing new connections until some end",
                                     {{"limit", "max_connections_per_peer"}}));

    ::close(held.fds.back());
    held.fds.pop_back();
    CHECK(eventually([&] { return client_answers(scheduler.cluster.port); }, 10s));
  }

  TEST_CASE("max_connections counts every connection; past half of them waiting for admission, the oldest makes room") {
    Scheduler scheduler({"max_connections = 4", "handshake_timeout = \"1h\""});
    const int first = open_connection(scheduler.cluster.port);
    const int second = open_connection(scheduler.cluster.port);
    // A third connection without a credential: the oldest waiting one is closed for it.
    const int third = open_connection(scheduler.cluster.port);
    CHECK(hung_up_within(first, 10s));
    CHECK_FALSE(hung_up_within(second, 100ms));
    // A client with a credential gets in the same way (the oldest waiting one, second, makes
    // room), and keeps its slot once admitted.
    troupe::client::ConnectOptions options;
    std::vector<std::unique_ptr<troupe::client::GatewayClient>> admitted;
    auto connect_client = [&] {
      auto c = troupe::client::GatewayClient::connect("127.0.0.1", scheduler.cluster.port, options);
      REQUIRE(c.has_value());
      admitted.push_back(std::move(*c));
    };
    connect_client();
    CHECK(hung_up_within(second, 10s));
    connect_client();
    connect_client();
    CHECK_FALSE(hung_up_within(third, 100ms));
    // Three admitted and one waiting fill max_connections: the next is closed at once.
    const int fifth = open_connection(scheduler.cluster.port);
    CHECK(hung_up_within(fifth, 10s));
    CHECK_FALSE(hung_up_within(third, 100ms));
    CHECK(eventually([&] {
      return troupe::test::has_log_line(read_file(scheduler.log), "connection limit reached; closing new connections until some end",
                                        {{"limit", "max_connections"}});
    }, 5s));
    for (const auto& client : admitted) CHECK(client->list(troupe::client::ListQuery{}).has_value());
    for (int fd : {first, second, third, fifth}) ::close(fd);
  }

  TEST_CASE("a connection that presents no credential within handshake_timeout is closed; an admitted one stays") {
    Scheduler scheduler({"handshake_timeout = \"500ms\""});
    troupe::client::ConnectOptions options;
    auto admitted = troupe::client::GatewayClient::connect("127.0.0.1", scheduler.cluster.port, options);
    REQUIRE(admitted.has_value());
    const int silent = open_connection(scheduler.cluster.port);
    REQUIRE(silent >= 0);
    CHECK(hung_up_within(silent, 10s));
    ::close(silent);
    CHECK(eventually([&] { return scheduler.logged("closing a connection", "handshake_timeout"); }, 5s));
    // Well past the handshake timeout, the admitted connection still answers.
    CHECK((*admitted)->list(troupe::client::ListQuery{}).has_value());
  }

  TEST_CASE("an admitted connection idle for idle_timeout is closed; one waiting on a long call is not") {
    Scheduler scheduler({"idle_timeout = \"500ms\""});
    troupe::client::ConnectOptions options;
    auto idle = troupe::client::GatewayClient::connect("127.0.0.1", scheduler.cluster.port, options);
    auto waiting = troupe::client::GatewayClient::connect("127.0.0.1", scheduler.cluster.port, options);
    REQUIRE(idle.has_value());
    REQUIRE(waiting.has_value());
    // A workflow whose task list no worker serves never ends: result() waits its whole timeout.
    troupe::client::StartRequest start;
    start.workflow_id = "never-ends";
    start.definition_json =
        R"({"name": "n", "tasks": [{"name": "t", "taskList": "nobody", "shell": {"command": ["true"]}}]})";
    REQUIRE((*waiting)->start(start).has_value());
    auto result = (*waiting)->result("never-ends", std::chrono::seconds(3));
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code == troupe::Errc::TIMED_OUT);
    // Three seconds with a call in progress did not count as idle; it still answers.
    CHECK((*waiting)->describe("never-ends").has_value());
    CHECK(eventually([&] { return scheduler.logged("closing a connection", "idle_timeout"); }, 10s));
    CHECK_FALSE((*idle)->list(troupe::client::ListQuery{}).has_value());
  }

  TEST_CASE("a refused credential closes its connection, and calls pipelined behind it are never answered") {
    troupe::test::TempDir secrets;
    const std::string token_file = secrets / "token";
    std::ofstream(token_file) << "the-right-token-of-this-cluster\n";
    Scheduler scheduler({}, token_file);
    const int fd = open_connection(scheduler.cluster.port);
    REQUIRE(fd >= 0);
    const std::string calls = gateway_client_call("wrong") + pipelined_list_calls(1000);
    write_until_blocked(fd, calls, 2s);
    CHECK(hung_up_within(fd, 10s));
    ::close(fd);
    CHECK(eventually([&] { return scheduler.logged("closing a connection", "refused"); }, 5s));
    CHECK(client_answers(scheduler.cluster.port, "the-right-token-of-this-cluster"));
  }

  TEST_CASE("a connection sending a large message before it is admitted is closed once past max_unadmitted_bytes") {
    Scheduler scheduler({});
    const uint64_t before = resident_bytes(scheduler.pid());
    // 16 connections each announcing a 60 MiB message and sending all of it but the last
    // MiB, all open at once: 944 MiB, were it held.
    Fds held;
    std::string message(60u << 20, 'x');
    const uint32_t words = static_cast<uint32_t>(message.size() / 8 - 1);
    std::memset(message.data(), 0, 4);
    std::memcpy(message.data() + 4, &words, 4);
    message.resize(message.size() - (1u << 20));
    for (int i = 0; i < 16; ++i) {
      const int fd = open_connection(scheduler.cluster.port);
      REQUIRE(fd >= 0);
      held.fds.push_back(fd);
      const size_t sent = write_until_blocked(fd, message, 2s);
      CHECK(sent < message.size());  // the scheduler stopped taking it
    }
    const uint64_t peak = peak_resident_bytes(scheduler.pid(), 2s);
    MESSAGE("resident before ", before >> 20, " MiB, at most ", peak >> 20, " MiB after");
    CHECK(peak < before + (64u << 20));
    for (int fd : held.fds) CHECK(hung_up_within(fd, 10s));
    CHECK(client_answers(scheduler.cluster.port));
  }

  TEST_CASE("a client that pipelines calls and never reads the answers stops being heard; the scheduler's memory stays bounded") {
    Scheduler scheduler({});
    // Enough workflows that every list answer is large.
    {
      troupe::client::ConnectOptions options;
      auto client = troupe::client::GatewayClient::connect("127.0.0.1", scheduler.cluster.port, options);
      REQUIRE(client.has_value());
      for (int i = 0; i < 100; ++i) {
        troupe::client::StartRequest start;
        start.workflow_id = "w-" + std::to_string(i) + std::string(100, 'x');
        start.definition_json =
            R"({"name": "n", "tasks": [{"name": "t", "taskList": "nobody", "shell": {"command": ["true"]}}]})";
        REQUIRE((*client)->start(start).has_value());
      }
    }
    const uint64_t before = resident_bytes(scheduler.pid());
    const int fd = open_connection(scheduler.cluster.port);
    REQUIRE(fd >= 0);
    const std::string calls = gateway_client_call("") + pipelined_list_calls(30000);
    const size_t sent = write_until_blocked(fd, calls, 5s);
    INFO("sent ", sent, " of ", calls.size(), " bytes");
    CHECK(sent < calls.size());  // the scheduler stopped reading
    const uint64_t peak = peak_resident_bytes(scheduler.pid(), 3s);
    MESSAGE("resident before ", before >> 20, " MiB, at most ", peak >> 20, " MiB after");
    CHECK(peak < before + (64u << 20));
    // Meanwhile everyone else is served.
    CHECK(client_answers(scheduler.cluster.port));
    ::close(fd);
    CHECK(still_running(*scheduler.cluster.nodes.at("scheduler")));
  }

  TEST_CASE("a [connections] key out of range is refused with its line") {
    troupe::test::TempDir dir;
    const std::string config = dir / "cluster.toml";
    std::ofstream(config) << "[cluster]\nname = \"c\"\n\n[connections]\nmax_message_bytes = 100\nmax_conections = 3\n\n"
                             "[[node]]\nname = \"s\"\nroles = [\"scheduler\"]\nlisten = \"127.0.0.1:"
                          << troupe::test::free_port() << "\"\ndata_dir = \"d\"\n";
    troupe::test::ChildProcess node(
        std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" --config \"$1\" --node s 2>&1", troupe::test::node_binary(), config});
    const std::string output = troupe::test::read_output(node, 10s);
    CHECK(output.find(":5: connections.max_message_bytes: must be from 65536") != std::string::npos);
    CHECK(output.find(":6: connections.max_conections: unknown key") != std::string::npos);
  }
}
