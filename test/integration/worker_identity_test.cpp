// A worker's persisted identity with real processes: a worker killed and started again on the
// same directory presents the same worker id, and the scheduler's durable record counts both
// registrations; a damaged id file stops the node with a message saying what to do.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "storage/codec.hpp"
#include "storage/rocks_history_store.hpp"
#include "test/support/cluster.hpp"
#include "test/support/stop.hpp"
#include "test/support/why.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::eventually;

namespace {

troupe::test::ClusterSpec one_worker() {
  troupe::test::ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
  return spec;
}

std::string content_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// One task, retried: an attempt dispatched to a killed worker before it is declared dead fails
/// over, and the retry waits for the worker that takes its place.
constexpr const char* one_task = R"({"name": "one", "tasks": [{"name": "t", "shell": {"command": ["true"]},
  "retry": {"initialInterval": "100ms", "maximumAttempts": 5}}]})";

/// Runs a one-task workflow to its end: proof that a worker is registered and serving.
void run_one(troupe::test::Client& client, const std::string& id) {
  REQUIRE(client.start(id, one_task) == id);
  CHECK(client.result(id, 60s) == "SUCCESS");
}

/// Kills `child` with SIGKILL and reaps it.
void kill_hard(troupe::test::ChildProcess& child) {
  child.kill(SIGKILL);
  child.wait();
}

}  // namespace

TEST_SUITE("integration.worker_identity") {
  TEST_CASE("a worker killed and started again presents the same worker id, and its record counts both starts") {
    Cluster cluster(one_worker());
    cluster.start("scheduler");
    cluster.start("worker-a");
    auto client = troupe::test::connect(cluster.port);
    run_one(*client, "wf-first");

    const std::string id_file = cluster.logs("worker-a") + "/worker-id";
    const std::string first_id = content_of(id_file);
    REQUIRE_MESSAGE(first_id.rfind("wkr-", 0) == 0, "worker-id holds '" << first_id << "'");
    kill_hard(*cluster.nodes["worker-a"]);

    // The new process is refused while its dead predecessor still holds the shard, and takes it
    // over once that one is declared dead; a task it runs shows it has.
    cluster.start("worker-a");
    run_one(*client, "wf-second");
    CHECK(content_of(id_file) == first_id);

    client.reset();
    auto stopped = troupe::test::stop_with(*cluster.nodes["scheduler"], SIGTERM, 10s);
    REQUIRE_MESSAGE(stopped.exited_with(0), stopped.describe());
    kill_hard(*cluster.nodes["worker-a"]);

    auto store = troupe::storage::RocksHistoryStore::open(cluster.dir / "data/history");
    REQUIRE_MESSAGE(store, troupe::test::why(store));
    auto record = (*store)->find_worker("worker-a");
    REQUIRE_MESSAGE(record, troupe::test::why(record));
    REQUIRE_MESSAGE(*record, "the scheduler kept no record of worker-a");
    const auto& r = **record;
    const std::string id = first_id.substr(0, first_id.size() - 1);  // the file ends with a newline
    CHECK(r.worker_id == id);
    CHECK(r.registrations == 2);
    CHECK(r.status == "STARTED");
    CHECK(r.task_lists == std::map<std::string, uint32_t>{{"default", 2}});
    CHECK(r.first_registered_us > 0);
    CHECK(r.first_registered_us < r.last_registered_us);

    // The journal: two registrations of the same worker id by two different processes.
    auto journal = (*store)->read_worker_journal("worker-a", 1, 1000);
    REQUIRE_MESSAGE(journal, troupe::test::why(journal));
    std::vector<std::string> instances;
    bool died = false;
    for (const auto& entry : *journal) {
      auto event = troupe::storage::DecodedEvent::decode(entry.packed);
      REQUIRE(event);
      auto body = event->get().getBody();
      if (body.isWorkerRegistered()) {
        CHECK(std::string(body.getWorkerRegistered().getWorkerId().cStr()) == id);
        instances.emplace_back(body.getWorkerRegistered().getInstanceId().cStr());
      } else if (body.isWorkerHealthChanged()) {
        died = died || body.getWorkerHealthChanged().getTo() == troupe::schema::WorkerHealth::MUST_DIE;
      }
    }
    REQUIRE(instances.size() == 2);
    CHECK(instances[0] != instances[1]);
    CHECK_MESSAGE(died, "the killed instance's MUST_DIE was not journaled");
  }

  TEST_CASE("a worker whose id file is damaged exits 3, naming the file and what to do") {
    Cluster cluster(one_worker());
    const std::string dir = cluster.logs("worker-a");
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/worker-id") << "not an id\n";
    auto node = troupe::test::start_node_with_output(cluster.config, "worker-a");
    REQUIRE_MESSAGE(eventually([&] { return !troupe::test::still_running(*node); }, 20s),
                    "the node kept running with a damaged worker-id");
    const int status = node->wait();
    const std::string output = troupe::test::read_output(*node, 3s);
    CHECK_MESSAGE(WIFEXITED(status), output);
    CHECK_MESSAGE(WEXITSTATUS(status) == 3, output);
    CHECK_MESSAGE(output.find(dir + "/worker-id") != std::string::npos, output);
    CHECK_MESSAGE(output.find("delete the file") != std::string::npos, output);
    CHECK(content_of(dir + "/worker-id") == "not an id\n");
  }
}
