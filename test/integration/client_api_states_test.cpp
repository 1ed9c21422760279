// What the client API answers, end to end against real troupe-node processes ($TROUPE_NODE)
// through the C++ GatewayClient and the bare Cap'n Proto interface a client in another language
// uses: state enums, the final tasks' outputs, a task's whole failure message and times, tasks
// that will not run, result's timeout, and the listing newest first with open workflows'
// states, also over a store written before those were kept.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <rocksdb/db.h>

#include "runtime/client/gateway_client.hpp"
#include "storage/codec.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/gateway.hpp"

using namespace std::chrono_literals;
namespace client = troupe::client;
using troupe::TaskStateCode;
using troupe::WorkflowStateCode;
using troupe::test::Cluster;
using troupe::test::gateway;
using troupe::test::ClusterSpec;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::troupe_cli;

namespace {

std::string address_of(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

/// A scheduler and one worker with four slots, started.
std::unique_ptr<Cluster> start_cluster() {
  ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 4}}, std::nullopt}};
  auto cluster = std::make_unique<Cluster>(std::move(spec));
  cluster->start("scheduler");
  cluster->start("worker-a");
  return cluster;
}

std::string start(client::GatewayClient& api, const std::string& id, const std::string& definition) {
  auto started = api.start({definition, "", id, ""});
  REQUIRE_MESSAGE(started, started.error().message);
  return *started;
}

const troupe::TaskStatus& task_of(const troupe::WorkflowStatus& status, const std::string& name) {
  for (const auto& t : status.tasks) {
    if (t.name == name) return t;
  }
  FAIL("no task " << name);
  throw;
}

/// The listing of `api` (every page), in its order.
std::vector<client::WorkflowSummary> list_all(client::GatewayClient& api, client::ListQuery query) {
  std::vector<client::WorkflowSummary> out;
  for (int pages = 0; pages < 100; ++pages) {
    auto page = api.list(query);
    REQUIRE_MESSAGE(page, page.error().message);
    for (auto& w : page->workflows) out.push_back(std::move(w));
    if (page->next_cursor.empty()) return out;
    query.after = page->next_cursor;
  }
  FAIL("the listing did not end");
  return out;
}

std::vector<std::string> ids(const std::vector<client::WorkflowSummary>& listed) {
  std::vector<std::string> out;
  for (const auto& w : listed) out.push_back(w.workflow_id);
  return out;
}

/// Runs `body` on a thread of its own: a bare Cap'n Proto client brings its own event loop, and a
/// thread has one at most (the GatewayClient's is this one's).
template <class Body>
void on_own_thread(Body body) {
  std::thread thread(std::move(body));
  thread.join();
}

const char* sleeper = R"({"name": "sleeper", "tasks": [{"name": "s", "handler": "sleep", "input": {"duration": "10m"}}]})";

}  // namespace

TEST_SUITE("integration.client_api_states") {
  TEST_CASE("describe and result fill the state enums, the task times and the final tasks' outputs") {
    auto cluster = start_cluster();
    auto api = gateway(cluster->port);
    // a -> b, a -> c: b and c are final.
    start(*api, "fan", R"({"name": "fan", "tasks": [
        {"name": "a", "handler": "noop"},
        {"name": "b", "handler": "noop", "dependsOn": ["a"]},
        {"name": "c", "shell": {"command": ["true"]}, "dependsOn": ["a"]}]})");
    auto result = api->result("fan", 30s);
    REQUIRE_MESSAGE(result, result.error().message);
    CHECK(result->state == "SUCCESS");
    CHECK(result->state_code == WorkflowStateCode::SUCCESS);
    REQUIRE(result->outputs.size() == 2);
    CHECK(result->outputs[0] == troupe::TaskOutput{"b", R"({"ok":true})"});
    CHECK(result->outputs[1].task == "c");
    CHECK(contains(result->outputs[1].result_json, R"({"exitCode":0,"log":")"));

    auto status = api->describe("fan");
    REQUIRE_MESSAGE(status, status.error().message);
    CHECK(status->state_code == WorkflowStateCode::SUCCESS);
    for (const auto& t : status->tasks) {
      CAPTURE(t.name);
      CHECK(t.state == "SUCCESS");
      CHECK(t.state_code == TaskStateCode::SUCCESS);
      CHECK(t.attempt == 1);
      CHECK(t.worker == "worker-a");
      CHECK(t.started_us > 0);
      CHECK(t.ended_us >= t.started_us);
      CHECK(!t.result_json.empty());
    }
    CHECK(task_of(*status, "a").result_json == R"({"ok":true})");
    CHECK(task_of(*status, "b").started_us >= task_of(*status, "a").ended_us);

    // The same from the bare interface, as a client in another language reads it.
    on_own_thread([port = cluster->port] {
      auto raw = troupe::test::connect(port);
      auto request = raw->service.describeRequest();
      request.setWorkflowId("fan");
      auto described = request.send().wait(raw->rpc.getWaitScope());
      CHECK(described.getDescription().getWorkflowState() == troupe::schema::WorkflowState::SUCCESS);
      for (auto t : described.getDescription().getTasks()) {
        CHECK(t.getTaskState() == troupe::schema::TaskState::SUCCESS);
        CHECK(t.getDurationUs() == t.getEndedUs() - t.getStartedUs());
        CHECK(t.getResultJson().size() > 0);
        CHECK(t.getProgressText() == "");
      }
    });
  }

  TEST_CASE("a spawn failure's whole message, in result, describe and troupe status; what it blocked is UPSTREAM_FAILED") {
    auto cluster = start_cluster();
    auto api = gateway(cluster->port);
    start(*api, "spawn", R"({"name": "spawn", "tasks": [
        {"name": "run", "shell": {"command": ["/no/such/binary"]}},
        {"name": "after", "handler": "noop", "dependsOn": ["run"]}]})");
    // The reason, the details the worker gave, and why the task was not retried.
    const std::string message =
        "SpawnFailed: cannot run '/no/such/binary': No such file or directory (not retried: the task has no retry "
        "policy)";
    auto result = api->result("spawn", 30s);
    REQUIRE_MESSAGE(result, result.error().message);
    CHECK(result->state_code == WorkflowStateCode::FAILED);
    CHECK(result->detail == "task 'run' failed: " + message);
    CHECK(result->outputs.empty());

    auto status = api->describe("spawn");
    REQUIRE_MESSAGE(status, status.error().message);
    CHECK(status->detail == "task 'run' failed: " + message);
    const auto& run = task_of(*status, "run");
    CHECK(run.state_code == TaskStateCode::FAILURE);
    CHECK(run.failure == "SpawnFailed");
    CHECK(run.failure_details ==
          "cannot run '/no/such/binary': No such file or directory (not retried: the task has no retry policy)");
    CHECK(run.attempt == 1);
    CHECK(run.worker == "worker-a");
    CHECK(run.started_us > 0);
    CHECK(run.ended_us >= run.started_us);
    const auto& after = task_of(*status, "after");
    CHECK(after.state == "UPSTREAM_FAILED");
    CHECK(after.state_code == TaskStateCode::UPSTREAM_FAILED);

    auto shown = troupe_cli({"status", "spawn", "--address", address_of(cluster->port)});
    CHECK_MESSAGE(shown.code == 0, shown.output);
    CHECK(contains(shown.output, "spawn FAILED: task 'run' failed: " + message + "\n"));
    CHECK(contains(shown.output, "worker-a"));
    CHECK(contains(shown.output, message + "\n"));  // on the task's line, whole
    CHECK(contains(shown.output, "UPSTREAM_FAILED"));
    CHECK(contains(shown.output, "DURATION"));
  }

  TEST_CASE("result with a timeout: the scheduler answers timedOut when it runs out") {
    auto cluster = start_cluster();
    auto api = gateway(cluster->port);
    start(*api, "sleeps", sleeper);

    auto asked = std::chrono::steady_clock::now();
    auto waited = api->result("sleeps", 300ms);
    auto took = std::chrono::steady_clock::now() - asked;
    REQUIRE_FALSE(waited);
    CHECK(waited.error().code == troupe::Errc::TIMED_OUT);
    CHECK(waited.error().message == "workflow 'sleeps' did not end within 300ms");
    CHECK(took >= 300ms);
    CHECK(took < 1500ms);  // the scheduler's answer, not the client's later deadline

    // A bare call with timeoutMs: the error comes back as a value, the call needs no cancelling.
    on_own_thread([port = cluster->port] {
      auto raw = troupe::test::connect(port);
      auto request = raw->service.resultRequest();
      request.setWorkflowId("sleeps");
      request.setTimeoutMs(200);
      const auto sent = std::chrono::steady_clock::now();
      auto answer = request.send().wait(raw->rpc.getWaitScope());
      CHECK(std::chrono::steady_clock::now() - sent < 1500ms);
      CHECK(answer.getError().getCode() == troupe::schema::ErrorCode::TIMED_OUT);
      auto unknown = raw->service.resultRequest();
      unknown.setWorkflowId("nobody");
      unknown.setTimeoutMs(60'000);
      CHECK(unknown.send().wait(raw->rpc.getWaitScope()).getError().getCode() ==
            troupe::schema::ErrorCode::NOT_FOUND);
    });

    auto killed = api->control("sleeps", client::GatewayClient::Control::KILL);
    REQUIRE_MESSAGE(killed, killed.error().message);
    auto ended = api->result("sleeps", 30s);
    REQUIRE_MESSAGE(ended, ended.error().message);
    CHECK(ended->state_code == WorkflowStateCode::STOPPED);
  }

  TEST_CASE("list: newest first by default, open workflows with their states, filtered by them") {
    auto cluster = start_cluster();
    auto api = gateway(cluster->port);
    const std::string address = address_of(cluster->port);
    start(*api, "w1-running", sleeper);
    // Pausable: its first task ends soon, and the pause holds the second.
    start(*api, "w2-paused", R"({"name": "pausable", "tasks": [
        {"name": "first", "handler": "sleep", "input": {"duration": "300ms"}},
        {"name": "second", "handler": "noop", "dependsOn": ["first"]}]})");
    auto paused = api->control("w2-paused", client::GatewayClient::Control::PAUSE);
    REQUIRE_MESSAGE(paused, paused.error().message);
    start(*api, "w3-done", R"({"name": "done", "tasks": [{"name": "a", "handler": "noop"}]})");
    REQUIRE(api->result("w3-done", 30s));
    // w2 is PAUSED once its first task ended.
    std::string w2_state;
    CHECK(eventually([&] {
      auto listed = list_all(*api, {});
      for (const auto& w : listed) {
        if (w.workflow_id == "w2-paused") w2_state = w.state;
      }
      return w2_state == "PAUSED";
    }, 20s));
    CHECK(w2_state == "PAUSED");

    auto listed = list_all(*api, {});
    REQUIRE(ids(listed) == std::vector<std::string>{"w3-done", "w2-paused", "w1-running"});
    CHECK(listed[0].state == "SUCCESS");
    CHECK(listed[0].state_code == WorkflowStateCode::SUCCESS);
    CHECK(listed[1].state_code == WorkflowStateCode::PAUSED);
    CHECK(listed[2].state == "RUNNING");
    CHECK(listed[2].state_code == WorkflowStateCode::RUNNING);
    CHECK(listed[0].created_us > listed[1].created_us);
    CHECK(listed[1].created_us > listed[2].created_us);

    client::ListQuery one_page;
    one_page.limit = 1;
    CHECK(ids(list_all(*api, one_page)) == std::vector<std::string>{"w3-done", "w2-paused", "w1-running"});
    client::ListQuery by_id;
    by_id.sort = client::ListSort::ID;
    CHECK(ids(list_all(*api, by_id)) == std::vector<std::string>{"w1-running", "w2-paused", "w3-done"});
    client::ListQuery running;
    running.state = "RUNNING";
    CHECK(ids(list_all(*api, running)) == std::vector<std::string>{"w1-running"});
    client::ListQuery open;
    open.state = "OPEN";
    CHECK(ids(list_all(*api, open)) == std::vector<std::string>{"w2-paused", "w1-running"});
    client::ListQuery bogus;
    bogus.state = "WAITING";
    auto refused = api->list(bogus);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == troupe::Errc::INVALID_ARGUMENT);
    CHECK(contains(refused.error().message, "unknown state 'WAITING' (OPEN, CLOSED, SUBMITTED, RUNNING"));

    // The CLI as it is: its --state passes the live states on.
    auto cli = troupe_cli({"list", "--state", "PAUSED", "--json", "--address", address});
    CHECK_MESSAGE(cli.code == 0, cli.output);
    CHECK(contains(cli.output, R"("workflowId":"w2-paused")"));
    CHECK_FALSE(contains(cli.output, "w1-running"));
    auto table = troupe_cli({"list", "--address", address});
    CHECK(contains(table.output, "RUNNING"));
    CHECK(contains(table.output, "PAUSED"));
    CHECK(table.output.find("w3-done") < table.output.find("w1-running"));
  }

  TEST_CASE("completeTask takes its result as resultJson (Text) or, from older clients, as result (Data)") {
    auto cluster = start_cluster();
    auto api = gateway(cluster->port);
    const std::string dir = cluster->dir.path();
    // The task hands its token to a file and waits for it to be presented.
    auto token_of = [&](const std::string& id) {
      const std::string file = dir + "/" + id + ".token";
      start(*api, id, R"({"name": "handoff", "tasks": [{"name": "hand", "asyncCompletion": true,
          "shell": {"command": ["sh", "-c", "printf %s \"$TROUPE_TASK_TOKEN\" > )" + file + R"("]}}]})");
      std::string token;
      REQUIRE(eventually([&] {
        auto status = api->describe(id);
        if (!status || !status->tasks[0].awaiting_completion) return false;
        std::ifstream in(file);
        std::ostringstream all;
        all << in.rdbuf();
        token = all.str();
        return !token.empty();
      }, 20s));
      return token;
    };
    const std::string as_text = token_of("as-text");
    const std::string as_data = token_of("as-data");
    on_own_thread([port = cluster->port, as_text, as_data] {
      auto raw = troupe::test::connect(port);
      auto text = raw->service.completeTaskRequest();
      text.setToken(as_text);
      text.setResultJson(R"({"via":"text"})");
      CHECK(text.send().wait(raw->rpc.getWaitScope()).getError().getCode() == troupe::schema::ErrorCode::NONE);
      auto data = raw->service.completeTaskRequest();
      data.setToken(as_data);
      const std::string bytes = R"({"via":"data"})";
      data.setResult(kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size()));
      CHECK(data.send().wait(raw->rpc.getWaitScope()).getError().getCode() == troupe::schema::ErrorCode::NONE);
    });
    for (const auto& [id, json] : {std::pair<std::string, std::string>{"as-text", R"({"via":"text"})"},
                                   std::pair<std::string, std::string>{"as-data", R"({"via":"data"})"}}) {
      CAPTURE(id);
      auto result = api->result(id, 30s);
      REQUIRE_MESSAGE(result, result.error().message);
      CHECK(result->state_code == WorkflowStateCode::SUCCESS);
      CHECK(result->outputs == std::vector<troupe::TaskOutput>{{"hand", json}});
    }
  }

  TEST_CASE("a store written before open workflows' states and the creation-time index lists correctly") {
    auto cluster = start_cluster();
    auto api = gateway(cluster->port);
    start(*api, "old-1-done", R"({"name": "done", "tasks": [{"name": "a", "handler": "noop"}]})");
    REQUIRE(api->result("old-1-done", 30s));
    start(*api, "old-2-running", sleeper);
    api.reset();
    cluster->nodes.at("scheduler")->kill(SIGTERM);
    cluster->nodes.at("scheduler")->wait();

    {  // Back to format 1: no `created` family, records without a live state.
      const std::string path = cluster->dir.path() + "/data/history";
      std::vector<std::string> names;
      REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
      std::vector<rocksdb::ColumnFamilyDescriptor> families;
      for (const auto& name : names) families.emplace_back(name, rocksdb::ColumnFamilyOptions());
      std::vector<rocksdb::ColumnFamilyHandle*> handles;
      rocksdb::DB* raw = nullptr;
      REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), path, families, &handles, &raw).ok());
      std::unique_ptr<rocksdb::DB> db(raw);
      auto family = [&](const std::string& name) {
        return handles[static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin())];
      };
      REQUIRE(db->Put(rocksdb::WriteOptions(), family("meta"), "format_version", "1").ok());
      std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), family("workflows")));
      int records = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        auto record = troupe::storage::decode_workflow_record(it->value().ToString());
        REQUIRE(record);
        record->live_state.clear();
        REQUIRE(db->Put(rocksdb::WriteOptions(), family("workflows"), it->key(),
                        troupe::storage::encode_workflow_record(*record))
                    .ok());
        ++records;
      }
      CHECK(records == 2);
      it.reset();
      REQUIRE(db->DropColumnFamily(family("created")).ok());
      for (auto* handle : handles) REQUIRE(db->DestroyColumnFamilyHandle(handle).ok());
    }

    cluster->start("scheduler");
    api = gateway(cluster->port);
    auto listed = list_all(*api, {});
    REQUIRE(ids(listed) == std::vector<std::string>{"old-2-running", "old-1-done"});
    CHECK(listed[0].state == "RUNNING");
    CHECK(listed[0].state_code == WorkflowStateCode::RUNNING);
    CHECK(listed[1].state == "SUCCESS");
    client::ListQuery running;
    running.state = "RUNNING";
    CHECK(ids(list_all(*api, running)) == std::vector<std::string>{"old-2-running"});
    // New workflows join the index.
    start(*api, "new-3", R"({"name": "done", "tasks": [{"name": "a", "handler": "noop"}]})");
    REQUIRE(api->result("new-3", 30s));
    CHECK(ids(list_all(*api, {})) == std::vector<std::string>{"new-3", "old-2-running", "old-1-done"});
  }
}
