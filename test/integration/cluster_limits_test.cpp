// Limits and bad input on a real cluster (troupe-node processes on 127.0.0.1): a worker's
// slots cap how many of its tasks run at once, task-list and per-worker rates pace how fast
// tasks start, and a malformed config, a duplicate or intruding worker, or garbage on the wire
// gets a clear refusal while the nodes keep the workflows they hold.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <capnp/ez-rpc.h>
#include <capnp/message.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize.h>
#include <kj/async-io.h>

#include "runtime/client/gateway_client.hpp"
#include "schema/gateway.capnp.h"
#include "schema/worker.capnp.h"
#include "test/support/cluster.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using troupe::schema::ErrorCode;
using troupe::test::Client;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::connect;
using troupe::test::eventually;
using troupe::test::still_running;

namespace {

// --- workflows and what their tasks record -------------------------------------------------

/// One worker, "worker-a", with `slots` slots on the default task list.
ClusterSpec one_worker(uint32_t slots, std::optional<double> rate = std::nullopt) {
  ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", slots}}, rate}};
  return spec;
}

std::string shell_task(const std::string& name, const std::string& script) {
  return R"({"name": ")" + name + R"(", "shell": {"command": ["sh", "-c", ")" + script + R"("]}})";
}

/// A workflow of `count` independent shell tasks t0, t1, ... each running `script` (in which
/// $TROUPE_TASK names the task). `script` must not contain '"' or '\'.
std::string parallel_workflow(const std::string& name, int count, const std::string& script) {
  std::string tasks;
  for (int i = 0; i < count; ++i) tasks += (i ? ", " : "") + shell_task("t" + std::to_string(i), script);
  return R"({"name": ")" + name + R"(", "tasks": [)" + tasks + "]}";
}

std::string single_task_workflow(const std::string& name, const std::string& task, const std::string& script) {
  return R"({"name": ")" + name + R"(", "tasks": [)" + shell_task(task, script) + "]}";
}

void touch(const std::string& path) { std::ofstream(path).put('\n'); }

/// A time written by `date +%s%N` (nanoseconds since the epoch); nullopt if absent.
std::optional<int64_t> read_nanos(const std::string& path) {
  std::ifstream in(path);
  int64_t nanos = 0;
  if (!(in >> nanos)) return std::nullopt;
  return nanos;
}

/// The times in DIR/t0.SUFFIX, DIR/t1.SUFFIX, ... that exist, sorted.
std::vector<int64_t> read_times(const std::string& dir, int count, const std::string& suffix) {
  std::vector<int64_t> times;
  for (int i = 0; i < count; ++i) {
    if (auto t = read_nanos(dir + "/t" + std::to_string(i) + "." + suffix)) times.push_back(*t);
  }
  std::sort(times.begin(), times.end());
  return times;
}

struct Interval {
  int64_t start;
  int64_t end;
};

/// The largest number of intervals that contain one instant. An interval that ends at the
/// instant another starts does not overlap it.
size_t max_overlap(const std::vector<Interval>& intervals) {
  std::vector<std::pair<int64_t, int>> edges;  // (time, +1 start / -1 end); ends sort first
  for (const auto& i : intervals) {
    edges.emplace_back(i.start, +1);
    edges.emplace_back(i.end, -1);
  }
  std::sort(edges.begin(), edges.end());
  size_t open = 0, most = 0;
  for (const auto& [time, step] : edges) {
    open += step;
    most = std::max(most, open);
  }
  return most;
}

/// Starts per second from the `from`-th start (in time order) on: the inverse of the least-squares
/// slope of start time over start number, so one start delayed by a busy machine moves it little.
double observed_rate(const std::vector<int64_t>& starts, size_t from) {
  const size_t n = starts.size() - from;
  double mean_index = 0, mean_seconds = 0;
  for (size_t i = 0; i < n; ++i) {
    mean_index += static_cast<double>(i) / static_cast<double>(n);
    mean_seconds += static_cast<double>(starts[from + i] - starts[from]) / 1e9 / static_cast<double>(n);
  }
  double covariance = 0, variance = 0;
  for (size_t i = 0; i < n; ++i) {
    const double di = static_cast<double>(i) - mean_index;
    covariance += di * (static_cast<double>(starts[from + i] - starts[from]) / 1e9 - mean_seconds);
    variance += di * di;
  }
  return variance / covariance;  // 1 / (seconds per start)
}

// --- raw Cap'n Proto -----------------------------------------------------------------------

/// Waits for `promise` on `rpc`'s event loop; nullopt when `deadline` passes first.
template <class T>
std::optional<T> wait_for(capnp::EzRpcClient& rpc, kj::Promise<T> promise, std::chrono::seconds deadline) {
  auto timeout = rpc.getIoProvider().getTimer().afterDelay(deadline.count() * kj::SECONDS).then([] {
    return std::optional<T>();
  });
  return promise.then([](T value) { return std::optional<T>(kj::mv(value)); })
      .exclusiveJoin(kj::mv(timeout))
      .wait(rpc.getWaitScope());
}

/// Answers the scheduler like a worker that runs nothing: no running tasks, every runTask
/// refused, so a test can register without taking real work.
class IdleWorkerControl final : public troupe::schema::WorkerControl::Server {
 protected:
  kj::Promise<void> getRunningTasks(GetRunningTasksContext context) override {
    context.getResults().initInvocationIds(0);
    return kj::READY_NOW;
  }
  kj::Promise<void> runTask(RunTaskContext context) override {
    auto error = context.getResults().initError();
    error.setCode(ErrorCode::NOT_ALLOWED_IN_STATE);
    error.setMessage("this test worker runs nothing");
    return kj::READY_NOW;
  }
  kj::Promise<void> notifyIfTasksNotRunning(NotifyIfTasksNotRunningContext context) override {
    context.getResults().setNotRunning(context.getParams().getInvocationIds());
    return kj::READY_NOW;
  }
  kj::Promise<void> cancelTask(CancelTaskContext) override { return kj::READY_NOW; }
  kj::Promise<void> requestSuicide(RequestSuicideContext) override { return kj::READY_NOW; }
};

/// An error from a result struct: code NONE when the call succeeded.
struct Answer {
  ErrorCode code = ErrorCode::NONE;
  std::string message;
};

Answer answer_of(bool has_error, troupe::schema::Error::Reader error) {
  if (!has_error) return {};
  return {error.getCode(), error.getMessage().cStr()};
}

/// A worker written by hand against the Gateway, to send what a real worker agent never would.
/// Every wait has a deadline of 10 s.
class RawWorker {
 public:
  explicit RawWorker(uint16_t port) : rpc_("127.0.0.1", port) {}

  /// Registers as `shard` serving only `task_list` (one slot).
  Answer register_as(const std::string& shard, const std::string& instance, const std::string& task_list) {
    auto request = rpc_.getMain<troupe::schema::Gateway>().registerWorkerRequest();
    auto info = request.initInfo();
    info.setShardId(shard);
    info.setHostname("localhost");
    info.setPid(static_cast<uint32_t>(::getpid()));
    info.setInstanceId(instance);
    auto lists = info.initTaskLists(1);
    lists[0].setName(task_list);
    lists[0].setSlots(1);
    request.setControl(kj::heap<IdleWorkerControl>());
    auto answer = wait_for(rpc_, request.send().then([this](auto response) {
      if (response.hasRegistration()) session_ = response.getRegistration().getSession();
      return answer_of(response.hasError(), response.getError());
    }), 10s);
    REQUIRE_MESSAGE(answer, "registerWorker did not answer within 10 s");
    return *answer;
  }

  /// The scheduler's view of this worker's health (after a registration that succeeded).
  troupe::schema::Health heartbeat() {
    auto health = wait_for(rpc_, session().heartbeatRequest().send().then([](auto response) {
      return response.getHealth();
    }), 10s);
    REQUIRE_MESSAGE(health, "heartbeat did not answer within 10 s");
    return *health;
  }

  /// Reports that invocation `id` failed, as a worker whose reporter was lost would.
  Answer update_status(const std::string& id) {
    auto request = session().updateStatusRequest();
    request.setInvocationId(id);
    auto failed = request.initOutcome().initFailed();
    failed.setReason("Forged");
    failed.setDetails("reported by a worker that was never given this invocation");
    failed.setNonRetryable(true);
    auto answer = wait_for(rpc_, request.send().then([](auto response) {
      return answer_of(response.hasError(), response.getError());
    }), 10s);
    REQUIRE_MESSAGE(answer, "updateStatus did not answer within 10 s");
    return *answer;
  }

 private:
  troupe::schema::WorkerSession::Client session() {
    REQUIRE_MESSAGE(session_, "not registered");
    return *session_;
  }

  capnp::EzRpcClient rpc_;
  std::optional<troupe::schema::WorkerSession::Client> session_;
};

/// A framed Cap'n Proto message as bytes on the wire.
std::string framed(capnp::MessageBuilder& message) {
  auto words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

/// Little-endian 32-bit words: a segment table written by hand.
std::string words32(std::initializer_list<uint32_t> values) {
  std::string out;
  for (uint32_t v : values) {
    for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((v >> shift) & 0xff);
  }
  return out;
}

/// What a broken or hostile peer might send the scheduler, by description. Each is sent on its
/// own connection, which is then closed.
std::vector<std::pair<std::string, std::string>> bad_messages() {
  std::vector<std::pair<std::string, std::string>> out;
  std::mt19937 random(7);  // fixed: the same bytes every run
  std::string noise(512, '\0');
  for (auto& c : noise) c = static_cast<char>(random());
  out.emplace_back("random bytes", noise);
  out.emplace_back("a segment table cut short", words32({3, 16}));
  out.emplace_back("more segments than allowed", words32({0xfffffffe, 1}));
  out.emplace_back("a segment count that wraps to zero", words32({0xffffffff, 1}));
  out.emplace_back("a segment larger than any message may be", words32({0, 0x7fffffff}) + std::string(64, 'x'));
  out.emplace_back("a root pointer that is not a struct", words32({0, 2}) + std::string(16, '\xff'));

  capnp::MallocMessageBuilder bootstrap;
  bootstrap.initRoot<capnp::rpc::Message>().initBootstrap().setQuestionId(0);
  const std::string whole = framed(bootstrap);
  out.emplace_back("a bootstrap message cut in half", whole.substr(0, whole.size() / 2));

  capnp::MallocMessageBuilder call;
  auto c = call.initRoot<capnp::rpc::Message>().initCall();
  c.setQuestionId(1);
  c.initTarget().setImportedCap(42);
  c.setInterfaceId(capnp::typeId<troupe::schema::Gateway>());
  c.setMethodId(0);
  out.emplace_back("a call on a capability the connection was never given", whole + framed(call));
  return out;
}

/// Sends `bytes` to 127.0.0.1:`port` on a fresh connection, closes the sending side, and waits
/// for the peer to hang up. False when it keeps the connection open past `timeout`.
bool send_then_hang_up(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  // A peer that hangs up mid-send is an answer too; MSG_NOSIGNAL keeps that from killing us.
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool hung_up = false;
  while (!hung_up) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char discard[4096];  // an Abort message, if the peer explains itself
    const ssize_t n = ::read(fd, discard, sizeof discard);
    if (n < 0 && errno == EINTR) continue;
    hung_up = n <= 0;
  }
  ::close(fd);
  return hung_up;
}

/// The next line of `child`'s output that contains `needle`, or nullopt after `timeout`.
std::optional<std::string> read_line_containing(troupe::test::ChildProcess& child, const std::string& needle,
                                                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto line = child.read_line(left);
    if (!line) return std::nullopt;
    if (line->find(needle) != std::string::npos) return line;
  }
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// A scheduler and one worker (worker-a, two slots) holding a workflow in flight: its one shell
/// task, "wait", has started and waits for a gate file, so the workflow spans whatever the test
/// does before it opens the gate.
struct InFlight {
  Cluster cluster{one_worker(2)};
  std::string marks = cluster.dir / "marks";
  std::unique_ptr<Client> client;

  InFlight() {
    fs::create_directories(marks);
    cluster.start("scheduler");
    cluster.start("worker-a");
    client = connect(cluster.port);
    const std::string wait =
        "touch " + marks + "/started; until [ -e " + marks + "/gate ]; do sleep 0.05; done";
    REQUIRE(client->start("in-flight", single_task_workflow("gate", "wait", wait)) == "in-flight");
    REQUIRE(eventually([&] { return fs::exists(marks + "/started"); }, 30s));
  }

  /// The invocation id of the waiting task ("WORKFLOW/TASK/ATTEMPT.DISPATCH"), checked against
  /// the name of its log.
  std::string waiting_invocation() const {
    REQUIRE(fs::exists(cluster.logs("worker-a") + "/in-flight/wait.1.1.log"));
    return "in-flight/wait/1.1";
  }

  /// Both nodes are up; once the gate opens, the workflow that spanned the bad input succeeds,
  /// and a new connection runs a new workflow on worker-a.
  void check_cluster_carries_on() {
    CHECK(still_running(*cluster.nodes.at("scheduler")));
    CHECK(still_running(*cluster.nodes.at("worker-a")));
    touch(marks + "/gate");
    CHECK(client->result("in-flight", 30s) == "SUCCESS");
    auto fresh = connect(cluster.port);
    REQUIRE(fresh->start("after", single_task_workflow("after", "t", "touch " + marks + "/after")) == "after");
    CHECK(fresh->result("after", 30s) == "SUCCESS");
    CHECK(fs::exists(marks + "/after"));
    CHECK(fs::exists(cluster.logs("worker-a") + "/after/t.1.1.log"));
  }
};

}  // namespace

TEST_SUITE("integration.cluster_limits") {
  TEST_CASE("a scheduler out of file descriptors keeps accepting once some are free again") {
    ClusterSpec no_workers;
    no_workers.workers = {};
    Cluster cluster(no_workers);
    // Few descriptors, so that idle connections use up what the store and the loop leave.
    const std::string log = cluster.dir / "scheduler.log";
    cluster.nodes["scheduler"] = std::make_unique<troupe::test::ChildProcess>(std::vector<std::string>{
        "/bin/sh", "-c", "ulimit -n 128; exec \"$0\" --config \"$1\" --node scheduler 2>>\"$2\"",
        troupe::test::node_binary(), cluster.config, log});
    { auto first = connect(cluster.port); }  // it serves
    std::vector<int> idle;
    for (int i = 0; i < 200; ++i) {
      const int fd = troupe::test::open_connection(cluster.port);
      if (fd >= 0) idle.push_back(fd);
    }
    auto logged = [&] {
      std::ifstream in(log);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    // It ran out: accept() failed (EMFILE) while the kernel kept queueing the connections.
    REQUIRE_MESSAGE(eventually([&] { return logged().find("accept") != std::string::npos; }, 20s), logged());
    for (int fd : idle) ::close(fd);

    troupe::client::ConnectOptions options;
    options.timeout = std::chrono::seconds(1);
    const bool answered = eventually([&] {
      return troupe::client::GatewayClient::connect("127.0.0.1", cluster.port, options).has_value();
    }, 30s);
    CHECK_MESSAGE(answered, logged());
    CHECK(still_running(*cluster.nodes["scheduler"]));
    CHECK(troupe::test::has_log_line(logged(), "cannot accept connections; retrying, backing off up to 1s"));
    CHECK(troupe::test::has_log_line(logged(), "accepting connections again"));
  }

  TEST_CASE("a worker with two slots on a task list runs exactly two of its tasks at once") {
    Cluster cluster(one_worker(2));
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = connect(cluster.port);
    const std::string times = cluster.dir / "times";
    fs::create_directories(times);
    constexpr int tasks = 8;
    const std::string script = "date +%s%N > " + times + "/$TROUPE_TASK.start; sleep 0.3; date +%s%N > " +
                               times + "/$TROUPE_TASK.end";
    REQUIRE(client->start("credit", parallel_workflow("credit", tasks, script)) == "credit");
    REQUIRE(client->result("credit", 60s) == "SUCCESS");

    std::vector<Interval> intervals;
    for (int i = 0; i < tasks; ++i) {
      const std::string task = times + "/t" + std::to_string(i);
      auto start = read_nanos(task + ".start");
      auto end = read_nanos(task + ".end");
      REQUIRE_MESSAGE((start && end), "t" << i << " left no start or end time");
      intervals.push_back({*start, *end});
    }
    // Never a third at once (a slot is given back only once an outcome is durable), and with
    // eight waiting, both slots are in use.
    CHECK(max_overlap(intervals) == 2);
  }

  TEST_CASE("a task list's rate limit paces task starts at the configured rate") {
    constexpr double rate = 10.0;
    constexpr int tasks = 40;
    // Slots to spare, so only the task list's token bucket (burst 1) holds tasks back.
    ClusterSpec spec = one_worker(64);
    spec.task_list_limits["default"] = {rate, 1};
    Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = connect(cluster.port);
    const std::string times = cluster.dir / "times";
    fs::create_directories(times);
    const std::string script = "date +%s%N > " + times + "/$TROUPE_TASK.start";
    REQUIRE(client->start("paced", parallel_workflow("paced", tasks, script)) == "paced");
    REQUIRE(client->result("paced", 60s) == "SUCCESS");

    const auto starts = read_times(times, tasks, "start");
    REQUIRE(starts.size() == tasks);
    // With a burst of 1 the whole run is paced: a start every 1/rate seconds.
    const double observed = observed_rate(starts, 0);
    MESSAGE("task list rate: observed " << observed << " starts/s over " << tasks << " tasks, configured " << rate);
    CHECK(std::abs(observed - rate) <= 0.10 * rate);
  }

  TEST_CASE("a worker's own rate limit paces the tasks it starts") {
    constexpr double rate = 10.0;
    constexpr int tasks = 40;
    Cluster cluster(one_worker(64, rate));
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = connect(cluster.port);
    const std::string times = cluster.dir / "times";
    fs::create_directories(times);
    const std::string script = "date +%s%N > " + times + "/$TROUPE_TASK.start";
    REQUIRE(client->start("paced", parallel_workflow("paced", tasks, script)) == "paced");
    REQUIRE(client->result("paced", 60s) == "SUCCESS");

    const auto starts = read_times(times, tasks, "start");
    REQUIRE(starts.size() == tasks);
    // The worker's bucket may let a first burst (up to a second's worth) start at once; the
    // pace after it is the rate.
    constexpr size_t burst_allowance = 10;
    const double observed = observed_rate(starts, burst_allowance);
    MESSAGE("worker rate: observed " << observed << " starts/s after the first " << burst_allowance
                                     << " starts, configured " << rate);
    CHECK(std::abs(observed - rate) <= 0.10 * rate);
  }

  TEST_CASE("a malformed config stops troupe-node with exit code 2 naming the key and line; the cluster runs on") {
    InFlight flight;
    struct BadLine {
      std::string line;
      std::string key;
    };
    const std::vector<BadLine> bad_lines = {
        {"slots = 2", "node[2].slots"},                                  // unknown key
        {"rate = \"fast\"", "node[2].rate"},                             // wrong type
        {"max_concurrent_sessions = -1", "node[2].max_concurrent_sessions"},  // out of range
    };
    for (const auto& bad : bad_lines) {
      CAPTURE(bad.line);
      // The cluster's own config plus a third worker whose section has one bad line.
      std::string text = troupe::test::cluster_config_text(flight.cluster.spec, flight.cluster.port) +
                         "[[node]]\nname = \"worker-c\"\nroles = [\"worker\"]\nscheduler = \"127.0.0.1:" +
                         std::to_string(flight.cluster.port) + "\"\ntask_lists = { default = 1 }\n";
      const auto line = std::count(text.begin(), text.end(), '\n') + 1;
      text += bad.line + "\n";
      const std::string path = flight.cluster.dir / "broken.toml";
      std::ofstream(path) << text;

      auto node = troupe::test::start_node_with_output(path, "worker-c");
      const std::string said = troupe::test::read_output(*node, 20s);
      const int status = node->wait();
      CAPTURE(said);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 2);
      CHECK(contains(said, "broken.toml:" + std::to_string(line) + ": " + bad.key + ":"));
    }
    flight.check_cluster_carries_on();
  }

  TEST_CASE("a second worker with a live worker's name is refused naming the shard; the live one keeps working") {
    InFlight flight;
    // A whole second process: its agent is refused, says so, and retries.
    auto twin = troupe::test::start_node_with_output(flight.cluster.config, "worker-a");
    const auto refusal = read_line_containing(*twin, "registration refused", 20s);
    REQUIRE_MESSAGE(refusal, "the twin worker never reported a refused registration");
    CHECK(contains(*refusal, "'worker-a'"));
    twin->kill(SIGKILL);
    twin->wait();

    // What the scheduler answers, first hand: the same shard id from another instance.
    RawWorker raw(flight.cluster.port);
    const auto answer = raw.register_as("worker-a", "another-instance", "default");
    CHECK(answer.code == ErrorCode::ALREADY_EXISTS);
    CHECK(contains(answer.message, "'worker-a'"));
    flight.check_cluster_carries_on();
  }

  TEST_CASE("a worker reporting on invocations it was not given is refused; the real outcome stands") {
    InFlight flight;
    const std::string someone_elses = flight.waiting_invocation();
    RawWorker intruder(flight.cluster.port);
    // It serves a task list nothing uses, so no real task is ever sent to it.
    REQUIRE(intruder.register_as("intruder", "intruder-1", "unused").code == ErrorCode::NONE);
    for (const std::string& id : {someone_elses, std::string("no-such-workflow/t/1.1")}) {
      CAPTURE(id);
      // A heartbeat first keeps the intruder from being declared dead (600 ms) before it reports.
      CHECK(intruder.heartbeat() != troupe::schema::Health::MUST_DIE);
      const auto answer = intruder.update_status(id);
      CHECK(answer.code == ErrorCode::NOT_FOUND);
      CHECK(contains(answer.message, id));
    }
    // The forged failure of worker-a's task changed nothing: it succeeds once the gate opens.
    flight.check_cluster_carries_on();
  }

  TEST_CASE("garbage and truncated messages on the scheduler's port cost only their own connection") {
    InFlight flight;
    for (const auto& [what, bytes] : bad_messages()) {
      CAPTURE(what);
      CHECK_MESSAGE(send_then_hang_up(flight.cluster.port, bytes, 10s), "the scheduler kept the connection open");
      REQUIRE(still_running(*flight.cluster.nodes.at("scheduler")));
    }
    flight.check_cluster_carries_on();
  }
}
