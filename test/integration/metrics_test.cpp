// Metrics on real nodes: a scheduler and a worker serving /metrics on free ports of 127.0.0.1,
// scraped over HTTP while and after CHAIN workflows run, their counts checked against what ran
// and their text by Prometheus' own promtool.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test/support/cluster.hpp"
#include "test/support/scrape.hpp"
#include "test/support/workflows.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::eventually;
using troupe::test::http_get;
using troupe::test::sample;

namespace {

namespace fs = std::filesystem;

constexpr int chain_workflows = 6;  // W
constexpr int chain_tasks = 4;      // K

/// CHAIN's workflow (WORKLOADS.md): t1 -> t2 -> ... -> tK, every task the noop handler.
std::string chain_definition() {
  std::string tasks;
  for (int k = 1; k <= chain_tasks; ++k) {
    tasks += (k > 1 ? ", " : "") + std::string(R"({"name": "t)") + std::to_string(k) + R"(", "handler": "noop")" +
             (k > 1 ? R"(, "dependsOn": ["t)" + std::to_string(k - 1) + R"("])" : "") + "}";
  }
  return troupe::test::workflow_of("chain", tasks);
}

/// Starts node `name` of the cluster with its output captured, and returns the port it serves
/// its metrics on, from its "serving metrics address=127.0.0.1:PORT" line; 0 if it does not say
/// so in 20 s.
uint16_t start_metered(Cluster& cluster, const std::string& name) {
  cluster.nodes[name] = troupe::test::start_node_with_output(cluster.config, name);
  auto said = troupe::test::await_log_line(*cluster.nodes[name], "serving metrics", 20s);
  if (!said || said->node != name) return 0;
  const std::string prefix = "127.0.0.1:";
  const std::string address = said->field("address").value_or("");
  if (!address.starts_with(prefix)) return 0;
  return static_cast<uint16_t>(std::stoi(address.substr(prefix.size())));
}

/// A scrape of `port`'s /metrics; empty if it did not answer 200.
std::string scrape(uint16_t port) {
  const auto response = http_get(port, "/metrics");
  return response.status == 200 ? response.body : std::string();
}

/// Scrapes `port` until `series` reads `expected` (10 s at most: counters move once their
/// events are durable, gauges when the actors get to it); returns the last scrape.
std::string scrape_when(uint16_t port, const std::string& series, double expected) {
  std::string text;
  eventually([&] {
    text = scrape(port);
    return sample(text, series) == expected;
  }, 10s);
  return text;
}

/// A socket listening on 127.0.0.1 at a free port, for as long as it lives.
struct Listening {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  uint16_t port = 0;
  Listening() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~Listening() { ::close(fd); }
};

ClusterSpec metered_spec() {
  ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
  spec.metrics = true;
  return spec;
}

}  // namespace

TEST_SUITE("integration.metrics") {
  TEST_CASE("CHAIN runs are counted on the scheduler and the worker, in a text promtool accepts") {
    Cluster cluster(metered_spec());
    const uint16_t scheduler = start_metered(cluster, "scheduler");
    REQUIRE_MESSAGE(scheduler != 0, "the scheduler never said where it serves its metrics");
    const uint16_t worker = start_metered(cluster, "worker-a");
    REQUIRE_MESSAGE(worker != 0, "the worker never said where it serves its metrics");
    auto client = troupe::test::connect(cluster.port);

    const std::string chain = chain_definition();
    for (int w = 0; w < chain_workflows; ++w) {
      const std::string id = "chain-" + std::to_string(w);
      REQUIRE(client->start(id, chain) == id);
    }
    for (int w = 0; w < chain_workflows; ++w) REQUIRE(client->result("chain-" + std::to_string(w), 60s) == "SUCCESS");

    constexpr double ran = chain_workflows * chain_tasks;
    std::string text = scrape_when(scheduler, R"(troupe_tasks_ended_total{outcome="SUCCESS"})", ran);
    INFO(text);
    CHECK(sample(text, "troupe_workflows_started_total") == chain_workflows);
    CHECK(scrape_when(scheduler, R"(troupe_workflows_closed_total{state="SUCCESS"})", chain_workflows) != "");
    text = scrape(scheduler);
    CHECK(sample(text, R"(troupe_workflows_closed_total{state="SUCCESS"})") == chain_workflows);
    CHECK(sample(text, R"(troupe_workflows_closed_total{state="FAILED"})") == 0);
    CHECK(sample(text, R"(troupe_workflows_closed_total{state="STOPPED"})") == 0);
    CHECK(sample(text, R"(troupe_tasks_ended_total{outcome="SUCCESS"})") == ran);
    CHECK(sample(text, R"(troupe_tasks_ended_total{outcome="FAILURE"})") == 0);
    // Every task was dispatched once and ended once.
    CHECK(sample(text, "troupe_task_schedule_to_start_seconds_count") == ran);
    CHECK(sample(text, R"(troupe_task_schedule_to_start_seconds_bucket{le="+Inf"})") == ran);
    CHECK(sample(text, "troupe_task_start_to_close_seconds_count") == ran);
    CHECK(sample(text, R"(troupe_dispatch_queue_depth{task_list="default"})") == 0);
    // Each workflow's own appends at least: its submission, its tasks' events, its close.
    CHECK(sample(text, "troupe_history_events_total") >= ran * 3);
    CHECK(sample(text, "troupe_history_commit_batch_size_count") > 0);
    CHECK(sample(text, "troupe_history_commit_sync_seconds_count") == sample(text, "troupe_history_commit_batch_size_count"));
    CHECK(sample(text, "troupe_history_written_bytes_total") > 0);
    CHECK(sample(text, "troupe_history_memtable_bytes") > 0);
    CHECK(sample(text, R"(troupe_workers_by_health{health="HEALTHY"})") == 1);
    CHECK(sample(text, R"(troupe_workers_by_status{status="STARTED"})") == 1);
    CHECK(sample(text, "troupe_rpc_connections") >= 2);  // the worker and this test's client
    CHECK(sample(text, "troupe_workflows_live").has_value());
    CHECK(sample(text, "troupe_workflows_passivated") == 0);
    CHECK(sample(text, R"(troupe_node_info{node="scheduler",roles="scheduler"})") == 1);
    // The scheduler's own actors: the worker's, its task list's, and the system's, each of a
    // kind with a series, and a largest mailbox probed for each kind.
    CHECK(sample(text, R"(troupe_actors{kind="worker"})") >= 1);
    CHECK(sample(text, R"(troupe_actors{kind="matching"})") >= 1);
    CHECK(sample(text, R"(troupe_actors{kind="dispatcher"})") == 1);
    CHECK(sample(text, R"(troupe_actors{kind="directory"})") == 1);
    CHECK(sample(text, R"(troupe_actors{kind="session"})") == 0);
    for (const char* kind : {"workflow", "task", "session", "worker", "matching", "directory", "dispatcher"}) {
      const std::string series = std::string(R"(troupe_actor_mailbox_largest{kind=")") + kind + "\"}";
      CHECK_MESSAGE(sample(text, series) >= 0, series);
    }
    CHECK(sample(text, "troupe_metrics_collector_failures") == 0);
    const auto scheduler_verdict = troupe::test::promtool_check(text);
    CHECK_MESSAGE(scheduler_verdict.exit_code == 0, "promtool check metrics: ", scheduler_verdict.output);

    const std::string worker_text = scrape_when(worker, "troupe_worker_running_invocations", 0);
    INFO(worker_text);
    CHECK(sample(worker_text, "troupe_worker_running_invocations") == 0);
    CHECK(sample(worker_text, R"(troupe_worker_slots{task_list="default"})") == 2);
    CHECK(sample(worker_text, "troupe_worker_open_sessions") == 0);
    CHECK(sample(worker_text, "troupe_worker_max_sessions") == 1);
    CHECK(sample(worker_text, R"(troupe_node_info{node="worker-a",roles="worker"})") == 1);
    CHECK_FALSE(sample(worker_text, "troupe_workflows_started_total"));  // the scheduler's, not a worker's
    CHECK_FALSE(sample(worker_text, R"(troupe_actors{kind="worker"})"));
    const auto worker_verdict = troupe::test::promtool_check(worker_text);
    CHECK_MESSAGE(worker_verdict.exit_code == 0, "promtool check metrics: ", worker_verdict.output);
  }

  TEST_CASE("a worker's gauges follow a session task while it runs, and fall back once it ended") {
    Cluster cluster(metered_spec());
    const uint16_t scheduler = start_metered(cluster, "scheduler");
    const uint16_t worker = start_metered(cluster, "worker-a");
    REQUIRE(scheduler != 0);
    REQUIRE(worker != 0);
    auto client = troupe::test::connect(cluster.port);

    const std::string gate = cluster.dir.path() + "/gate";
    const std::string held = troupe::test::workflow_with_sessions(
        "held", troupe::test::shell_task("hold", "while [ ! -e " + gate + " ]; do sleep 0.05; done"),
        troupe::test::session_of("box", {"hold"}));
    REQUIRE(client->start("held-1", held) == "held-1");
    std::string text;
    CHECK_MESSAGE(eventually([&] {
                    text = scrape(worker);
                    return sample(text, "troupe_worker_running_invocations") == 1 &&
                           sample(text, "troupe_worker_open_sessions") == 1;
                  }, 20s),
                  text);
    // Meanwhile on the scheduler: the workflow's actor, its task's and its session's.
    CHECK_MESSAGE(eventually([&] {
                    text = scrape(scheduler);
                    return sample(text, R"(troupe_actors{kind="workflow"})") == 1 &&
                           sample(text, R"(troupe_actors{kind="task"})") == 1 &&
                           sample(text, R"(troupe_actors{kind="session"})") == 1;
                  }, 20s),
                  text);
    CHECK(sample(text, R"(troupe_actor_mailbox_largest{kind="session"})") >= 0);
    std::ofstream(gate).put('\n');
    REQUIRE(client->result("held-1", 30s) == "SUCCESS");
    CHECK_MESSAGE(eventually([&] {
                    text = scrape(worker);
                    return sample(text, "troupe_worker_running_invocations") == 0 &&
                           sample(text, "troupe_worker_open_sessions") == 0;
                  }, 20s),
                  text);
    text = scrape_when(scheduler, R"(troupe_workflows_closed_total{state="SUCCESS"})", 1);
    CHECK(sample(text, "troupe_workflows_started_total") == 1);
    CHECK(sample(text, "troupe_task_start_to_close_seconds_count") == 1);
  }

  TEST_CASE("a node whose metrics address is taken does not start, and says where and what to do") {
    Listening taken;
    Cluster cluster(metered_spec());
    std::string config;
    {
      std::ifstream in(cluster.config);
      std::stringstream all;
      all << in.rdbuf();
      config = all.str();
    }
    const std::string any = "metrics = \"127.0.0.1:0\"";
    config.replace(config.find(any), any.size(), "metrics = \"127.0.0.1:" + std::to_string(taken.port) + "\"");
    std::ofstream(cluster.config) << config;

    auto node = troupe::test::start_node_with_output(cluster.config, "scheduler");
    const std::string output = troupe::test::read_output(*node, 20s);
    const int status = node->wait();
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 3);
    std::optional<troupe::ParsedLogLine> refusal;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line) && !refusal;) {
      auto said = troupe::parse_log_line(line);
      if (said && said->message == "cannot start") refusal = said;
    }
    REQUIRE_MESSAGE(refusal, output);
    CHECK(refusal->level == "ERROR");
    CHECK(refusal->node == "scheduler");
    CHECK_MESSAGE(refusal->field("error").value_or("").starts_with("cannot serve metrics on 127.0.0.1:" +
                                                                   std::to_string(taken.port) + ": the address is in use"),
                  output);
    CHECK_MESSAGE(output.find("`metrics` key") != std::string::npos, output);
  }

  TEST_CASE("a node without a metrics key serves none") {
    Cluster cluster;  // no metrics
    cluster.nodes["scheduler"] = troupe::test::start_node_with_output(cluster.config, "scheduler");
    std::string said;
    REQUIRE_MESSAGE(troupe::test::await_log_line(*cluster.nodes["scheduler"], "ready", 20s, &said), said);
    CHECK_MESSAGE(said.find("metrics") == std::string::npos, said);
  }
}
