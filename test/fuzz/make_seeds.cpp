// Writes the binary seeds of the fuzz corpora: `make-fuzz-seeds DIR` fills DIR/history and
// DIR/gateway (test/fuzz/corpus/ holds what it wrote). Text seeds (definitions, configs) are
// plain files there and are edited by hand.
//  - history: real histories, made by running workflows on the scheduler's actors (CAF's test
//    coordinator, a memory store), framed as history_fuzz.cpp reads them; and a record of each
//    kind the store keeps.
//  - gateway: the bytes real Cap'n Proto clients send: each script drives capnp's RPC client
//    over a stream that records what it writes (pipelined calls need no answers), covering
//    clients, workers and operators, with the fuzzed cluster's token (gateway_fuzz.hpp).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <capnp/rpc-twoparty.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize.h>
#include <kj/async-io.h>

#include "actors/system/directory.hpp"
#include "runtime/auth/task_token.hpp"
#include "schema/gateway.capnp.h"
#include "schema/worker.capnp.h"
#include "storage/codec.hpp"
#include "storage/keys.hpp"
#include "test/fuzz/gateway_fuzz.hpp"
#include "test/support/actor_fixture.hpp"

namespace {

using namespace troupe;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "make-fuzz-seeds: cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

// --- history ---------------------------------------------------------------------------------

std::string frame(const std::string& event) {
  std::string out;
  for (uint64_t n = event.size();; n >>= 7) {
    out.push_back(static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0)));
    if (n < 0x80) break;
  }
  return out + event;
}

std::string framed_history(storage::HistoryStore& store, const std::string& id) {
  std::string out;
  auto events = store.read(id, 1, 100000);
  if (!events) {
    std::fprintf(stderr, "make-fuzz-seeds: cannot read %s: %s\n", id.c_str(), events.error().message.c_str());
    std::exit(1);
  }
  for (const auto& event : *events) out += frame(event.packed);
  return out;
}

/// Runs `definition` on the actors, `drive` moving it along, and writes its history.
void history_seed(const fs::path& path, const std::string& definition,
                  const std::function<void(test::ActorFixture&, actors::directory_actor&)>& drive) {
  test::ActorFixture fx;
  fx.handlers->add("flaky", [](std::shared_ptr<actors::TaskContext> ctx) {
    if (ctx->attempt() < 2) {
      ctx->fail("Flaky", "fails its first attempt");
    } else {
      ctx->succeed(R"({"attempt": 2})");
    }
  });
  fx.handlers->add("broken", [](std::shared_ptr<actors::TaskContext> ctx) {
    ctx->fail("Broken", "always fails", true);
  });
  fx.handlers->add("beat", [](std::shared_ptr<actors::TaskContext> ctx) {
    ctx->heartbeat("1/2");
    ctx->succeed(R"({"log": "/var/log/troupe/beat.log"})");
  });
  auto dir = fx.own(actors::spawn_directory(fx.sys, fx.store, fx.wiring));
  auto started = fx.ask<std::string>(dir, actors::submit_atom::value, std::string("wf-seed"), definition,
                                     std::string(R"({"n": 1})"), std::string());
  if (!started) {
    std::fprintf(stderr, "make-fuzz-seeds: %s: %s\n", path.c_str(), started.error().message.c_str());
    std::exit(1);
  }
  drive(fx, dir);
  write_file(path, framed_history(*fx.store, "wf-seed"));
}

void history_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  const auto run_out = [](test::ActorFixture& fx, actors::directory_actor&) { fx.advance(60s); };
  history_seed(dir / "chain.bin", R"({"name": "chain", "tasks": [
      {"name": "a", "handler": "noop"},
      {"name": "b", "handler": "sleep", "input": {"duration": "10s"}, "dependsOn": ["a"],
       "timeouts": {"scheduleToClose": "1m", "heartbeat": "20s"}},
      {"name": "c", "handler": "beat", "dependsOn": ["b"]}]})", run_out);
  history_seed(dir / "retried.bin", R"({"name": "retried", "tasks": [
      {"name": "flaky", "handler": "flaky",
       "retry": {"initialInterval": "1s", "backoffCoefficient": 2.0, "maximumAttempts": 3}},
      {"name": "after", "handler": "noop", "dependsOn": ["flaky"]}]})", run_out);
  history_seed(dir / "failed.bin", R"({"name": "failed", "tasks": [
      {"name": "fetch", "handler": "noop"},
      {"name": "broken", "handler": "broken", "dependsOn": ["fetch"],
       "retry": {"maximumAttempts": 5, "nonRetryableErrors": ["Broken"]}},
      {"name": "never", "handler": "noop", "dependsOn": ["broken"]}]})", run_out);
  history_seed(dir / "killed.bin", R"({"name": "killed", "tasks": [
      {"name": "long", "handler": "sleep", "input": {"duration": "1h"}},
      {"name": "next", "handler": "noop", "dependsOn": ["long"]}]})",
               [](test::ActorFixture& fx, actors::directory_actor& dir) {
                 fx.advance(1s);
                 (void)fx.ask<std::string>(dir, actors::control_atom::value, std::string("wf-seed"),
                                           static_cast<uint8_t>(actors::WorkflowControl::PAUSE));
                 fx.advance(1s);
                 (void)fx.ask<std::string>(dir, actors::control_atom::value, std::string("wf-seed"),
                                           static_cast<uint8_t>(actors::WorkflowControl::RESUME));
                 fx.advance(1s);
                 (void)fx.ask<std::string>(dir, actors::control_atom::value, std::string("wf-seed"),
                                           static_cast<uint8_t>(actors::WorkflowControl::KILL));
                 fx.advance(60s);
               });
  history_seed(dir / "rerun.bin", R"({"name": "rerun", "tasks": [
      {"name": "a", "handler": "noop"},
      {"name": "b", "handler": "broken", "dependsOn": ["a"]}]})",
               [](test::ActorFixture& fx, actors::directory_actor& dir) {
                 fx.advance(10s);
                 (void)fx.ask<std::string>(dir, actors::rerun_atom::value, std::string("wf-seed"), std::string("b"));
                 fx.advance(10s);
               });
  history_seed(dir / "sessions.bin", R"({"name": "sessions", "tasks": [
      {"name": "a", "handler": "noop"}, {"name": "b", "handler": "noop", "dependsOn": ["a"]}],
      "sessions": [{"name": "box", "tasks": ["a", "b"], "creationTimeout": "5s",
                    "onFailure": "recreate", "maxRecreates": 1}]})", run_out);

  storage::WorkflowRecord workflow;
  workflow.status = storage::WorkflowStatus::CLOSED;
  workflow.definition_name = "chain";
  workflow.definition_digest = std::string(32, '\x5a');
  workflow.created_us = 1'700'000'000'000'000;
  workflow.closed_us = 1'700'000'060'000'000;
  workflow.final_state = "SUCCESS";
  write_file(dir / "workflow_record.bin", storage::encode_workflow_record(workflow));
  storage::WorkerRecord worker;
  worker.worker_id = "w-0123456789abcdef";
  worker.hostname = "host-1";
  worker.instance_id = "instance-1";
  worker.task_lists = {{"default", 4}, {"gpu", 1}};
  worker.status = "STARTED";
  worker.standing = "ACTIVE";
  worker.failures = {{"wf-1/a", "ExitCode:1", 1'700'000'000'000'000}};
  write_file(dir / "worker_record.bin", storage::encode_worker_record(worker));
  write_file(dir / "event_key.bin", storage::event_key("wf-seed", 7));
  write_file(dir / "created_key.bin", storage::created_key(1'700'000'000'000'000, "wf-seed"));
}

// --- gateway ---------------------------------------------------------------------------------

/// A connection that keeps what is written to it and never has anything to read.
class Recorder final : public kj::AsyncIoStream {
 public:
  std::string bytes;

  kj::Promise<size_t> tryRead(void*, size_t, size_t) override { return kj::NEVER_DONE; }
  kj::Promise<void> write(const void* buffer, size_t size) override {
    bytes.append(static_cast<const char*>(buffer), size);
    return kj::READY_NOW;
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    for (auto piece : pieces) bytes.append(reinterpret_cast<const char*>(piece.begin()), piece.size());
    return kj::READY_NOW;
  }
  kj::Promise<void> whenWriteDisconnected() override { return kj::NEVER_DONE; }
  void shutdownWrite() override {}
};

/// Capabilities a client passes the gateway; never called here (nothing is read).
class IdleControl final : public schema::WorkerControl::Server {};
class IdleSink final : public schema::HistorySink::Server {};
class IdleLogSink final : public schema::LogSink::Server {};

/// What a script keeps alive until it ends (the answers it did not wait for), and where it
/// answers the scheduler's calls to it.
struct Calls {
  kj::WaitScope& wait_scope;
  Recorder& stream;
  std::vector<kj::Promise<void>> pending;

  template <class Response>
  void add(capnp::RemotePromise<Response>&& promise) {
    pending.push_back(kj::mv(promise).ignoreResult().catch_([](kj::Exception&&) {}));
  }

  /// Answers the scheduler's question `id` (its calls to the worker's capability, numbered from
  /// 0 and reused once finished) with results of type Results, as a worker would once the call
  /// arrived: a recording client never sees the call, so the answer is written by hand, after
  /// what was sent before it.
  template <class Results>
  void answer(uint32_t id, const std::function<void(typename Results::Builder)>& fill = nullptr) {
    wait_scope.poll();
    capnp::MallocMessageBuilder message;
    auto answer = message.initRoot<capnp::rpc::Message>().initReturn();
    answer.setAnswerId(id);
    answer.setReleaseParamCaps(false);
    auto results = answer.initResults().initContent().template initAs<Results>();
    if (fill) fill(results);
    auto words = capnp::messageToFlatArray(message);
    stream.bytes.append(reinterpret_cast<const char*>(words.asBytes().begin()), words.asBytes().size());
  }
};

constexpr const char* diamond = R"({"name": "diamond", "tasks": [
  {"name": "fetch", "handler": "noop"},
  {"name": "left", "dependsOn": ["fetch"], "shell": {"command": ["sh", "-c", "echo left"], "env": {"A": "1"}}},
  {"name": "right", "dependsOn": ["fetch"], "taskList": "io", "handler": "noop",
   "timeouts": {"scheduleToClose": "1m", "heartbeat": "10s"},
   "retry": {"initialInterval": "1s", "maximumAttempts": 3}},
  {"name": "join", "dependsOn": ["left", "right"], "handler": "noop", "asyncCompletion": true,
   "timeouts": {"startToClose": "1m", "scheduleToStart": "1m"}}]})";

schema::ClientService::Client client_of(schema::Gateway::Client& gateway, Calls& calls) {
  auto request = gateway.clientRequest();
  request.setToken(std::string(fuzz::cluster_token));
  auto answer = request.send();
  auto client = answer.getClient();
  calls.add(kj::mv(answer));
  return client;
}

void start(schema::ClientService::Client& client, Calls& calls, const std::string& id, const std::string& json,
           const std::string& input = "{}") {
  auto request = client.startWorkflowRequest();
  request.setDefinitionJson(json);
  request.setInputJson(input);
  request.setWorkflowId(id);
  calls.add(request.send());
}

schema::WorkerSession::Client register_worker(schema::Gateway::Client& gateway, Calls& calls, const std::string& shard) {
  auto request = gateway.registerWorkerRequest();
  request.setToken(std::string(fuzz::cluster_token));
  auto info = request.initInfo();
  info.setShardId(shard);
  info.setHostname("host-1");
  info.setPid(4242);
  info.setInstanceId(shard + "-instance-1");
  info.setWorkerId("w-" + shard);
  auto lists = info.initTaskLists(2);
  lists[0].setName("default");
  lists[0].setSlots(4);
  lists[1].setName("io");
  lists[1].setSlots(2);
  info.setMaxConcurrentSessions(1);
  request.setControl(kj::heap<IdleControl>());
  auto answer = request.send();
  auto session = answer.getRegistration().getSession();
  calls.add(kj::mv(answer));
  return session;
}

void report(schema::WorkerSession::Client& session, Calls& calls, const std::string& invocation, bool ok,
            const std::string& result = "{\"ok\": true}") {
  auto request = session.updateStatusRequest();
  request.setInvocationId(invocation);
  auto outcome = request.initOutcome();
  if (ok) {
    outcome.setSucceeded(kj::arrayPtr(reinterpret_cast<const kj::byte*>(result.data()), result.size()));
  } else {
    auto failed = outcome.initFailed();
    failed.setReason("ExitCode:1");
    failed.setDetails("exit status 1; log: /var/log/troupe/x.log");
  }
  outcome.setEndedAgoUs(1000);
  calls.add(request.send());
}

/// Runs `script` against a recording connection and writes the bytes it sent.
void gateway_seed(const fs::path& path, const std::function<void(schema::Gateway::Client&, Calls&)>& script) {
  kj::EventLoop loop;
  kj::WaitScope wait_scope(loop);
  Recorder stream;
  {
    capnp::TwoPartyVatNetwork network(stream, capnp::rpc::twoparty::Side::CLIENT);
    auto rpc = capnp::makeRpcClient(network);
    capnp::MallocMessageBuilder vat;
    auto server = vat.initRoot<capnp::rpc::twoparty::VatId>();
    server.setSide(capnp::rpc::twoparty::Side::SERVER);
    auto gateway = rpc.bootstrap(server).castAs<schema::Gateway>();
    {
      Calls calls{wait_scope, stream, {}};
      script(gateway, calls);
      wait_scope.poll();
    }  // the client stops waiting: Finish and Release messages
    wait_scope.poll();
  }
  wait_scope.poll();
  write_file(path, stream.bytes);
}

void gateway_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  gateway_seed(dir / "start_describe.bin", [](schema::Gateway::Client& gateway, Calls& calls) {
    auto client = client_of(gateway, calls);
    start(client, calls, "wf-1", diamond, R"({"n": 1})");
    auto describe = client.describeRequest();
    describe.setWorkflowId("wf-1");
    calls.add(describe.send());
    auto result = client.resultRequest();
    result.setWorkflowId("wf-1");
    result.setTimeoutMs(1);
    calls.add(result.send());
    auto list = client.listRequest();
    list.initQuery().setState("OPEN");
    calls.add(list.send());
    auto watch = client.watchRequest();
    watch.setWorkflowId("wf-1");
    watch.setSink(kj::heap<IdleSink>());
    calls.add(watch.send());
  });
  gateway_seed(dir / "operate.bin", [](schema::Gateway::Client& gateway, Calls& calls) {
    auto client = client_of(gateway, calls);
    start(client, calls, "wf-2", diamond);
    for (auto action : {schema::ControlAction::PAUSE, schema::ControlAction::RESUME, schema::ControlAction::STOP}) {
      auto control = client.controlRequest();
      control.setWorkflowId("wf-2");
      control.setAction(action);
      calls.add(control.send());
    }
    auto update = client.updateTaskRequest();
    update.setWorkflowId("wf-2");
    update.setTask("right");
    auto options = update.initOptions();
    options.setTaskList("default");
    options.setSetPriority(true);
    options.setPriority(5);
    options.initTimeouts().setStartToClose("30s");
    options.setRetryJson(R"({"initialInterval": "2s", "maximumAttempts": 2})");
    calls.add(update.send());
    auto retry = client.retryTaskRequest();
    retry.setWorkflowId("wf-2");
    retry.setTask("fetch");
    calls.add(retry.send());
    auto skip = client.skipTaskRequest();
    skip.setWorkflowId("wf-2");
    skip.setTask("left");
    skip.setReason("not needed");
    calls.add(skip.send());
    auto rerun = client.rerunRequest();
    rerun.setWorkflowId("wf-2");
    rerun.setRunFrom("left");
    calls.add(rerun.send());
    auto purge = client.purgeRequest();
    purge.setClosedBeforeUs(1'800'000'000'000'000);
    calls.add(purge.send());
  });
  gateway_seed(dir / "worker.bin", [](schema::Gateway::Client& gateway, Calls& calls) {
    auto client = client_of(gateway, calls);
    auto session = register_worker(gateway, calls, "worker-1");
    calls.answer<schema::WorkerControl::GetRunningTasksResults>(0);
    calls.add(session.heartbeatRequest().send());
    start(client, calls, "wf-3", diamond);
    calls.answer<schema::WorkerControl::RunTaskResults>(0);
    report(session, calls, "wf-3/fetch/1.1", true);
    auto beat = session.taskHeartbeatRequest();
    beat.setInvocationId("wf-3/right/1.1");
    beat.setProgress(kj::StringPtr("1/3").asBytes());
    calls.add(beat.send());
    report(session, calls, "wf-3/left/1.1", true, R"({"log": "/var/log/troupe/left.log"})");
    report(session, calls, "wf-3/right/1.1", true);
    auto handed = session.updateStatusRequest();
    handed.setInvocationId("wf-3/join/1.1");
    handed.initOutcome().setHandedOff();
    calls.add(handed.send());
    auto complete = client.completeTaskRequest();
    // Signed with the fuzzed scheduler's key: the nonce the worker was given is not checked.
    complete.setToken(runtime::mint_task_token(fuzz::task_token_key, {"wf-3", "join", "wf-3/join/1.1", "seed"}));
    complete.setResultJson(R"({"approved": true})");
    calls.add(complete.send());
    auto stopping = session.stoppingRequest();
    stopping.setGraceMs(100);
    stopping.setReason("SIGTERM");
    calls.add(stopping.send());
    calls.add(session.stoppedRequest().send());
  });
  gateway_seed(dir / "workers.bin", [](schema::Gateway::Client& gateway, Calls& calls) {
    auto client = client_of(gateway, calls);
    auto session = register_worker(gateway, calls, "worker-2");
    calls.add(session.heartbeatRequest().send());
    auto workers = client.workersRequest();
    workers.setName("worker-2");
    workers.setHistory(true);
    calls.add(workers.send());
    auto drain = client.drainWorkerRequest();
    drain.setName("worker-2");
    drain.setDeadlineMs(1000);
    drain.setExitWhenDrained(true);
    calls.add(drain.send());
    auto undrain = client.undrainWorkerRequest();
    undrain.setName("worker-2");
    calls.add(undrain.send());
    auto forgive = client.forgiveWorkerRequest();
    forgive.setName("worker-2");
    calls.add(forgive.send());
    auto fail = client.failTaskRequest();
    fail.setToken("tt1.not-a-token");
    fail.setReason("Rejected");
    calls.add(fail.send());
    auto logs = client.taskLogsRequest();
    logs.setWorkflowId("wf-4");
    logs.setTask("a");
    logs.setSink(kj::heap<IdleLogSink>());
    calls.add(logs.send());
  });
  gateway_seed(dir / "admin.bin", [](schema::Gateway::Client& gateway, Calls& calls) {
    auto client = client_of(gateway, calls);
    start(client, calls, "wf-5", diamond);
    auto request = gateway.adminRequest();
    request.setToken(std::string(fuzz::cluster_token));
    auto answer = request.send();
    auto admin = answer.getAdmin();
    calls.add(kj::mv(answer));
    auto actors = admin.actorsRequest();
    actors.setKind("task");
    actors.setLimit(10);
    calls.add(actors.send());
    auto actor = admin.actorRequest();
    actor.setId("wf-5");
    calls.add(actor.send());
    auto diagnose = admin.diagnoseRequest();
    diagnose.setWorkflowId("wf-5");
    calls.add(diagnose.send());
    auto history = admin.historyRequest();
    history.setWorkflowId("wf-5");
    history.setLimit(100);
    calls.add(history.send());
    calls.add(admin.taskListsRequest().send());
    calls.add(admin.storeRequest().send());
    auto ids = admin.idsRequest();
    ids.setKind("workflow");
    ids.setPrefix("wf");
    calls.add(ids.send());
  });
  gateway_seed(dir / "refused.bin", [](schema::Gateway::Client& gateway, Calls& calls) {
    auto request = gateway.clientRequest();
    request.setToken("not the token");
    auto answer = request.send();
    auto client = answer.getClient();
    calls.add(kj::mv(answer));
    start(client, calls, "wf-6", diamond);
    auto worker = gateway.registerWorkerRequest();
    worker.initInfo().setShardId("worker-x");
    worker.setControl(kj::heap<IdleControl>());
    calls.add(worker.send());
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n  writes DIR/history and DIR/gateway (the fuzz corpus's binary seeds)\n",
                 argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  history_seeds(dir / "history");
  gateway_seeds(dir / "gateway");
  return 0;
}
