// A real worker node (troupe-node) against a scheduler written by hand in the test: what the
// worker says on the wire about the invocations it is given, and what it keeps until the
// scheduler acknowledges it. The worker process is stopped by pid.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include "schema/gateway.capnp.h"
#include "schema/worker.capnp.h"
#include "test/support/cluster.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
namespace schema = troupe::schema;

namespace {

/// What the worker told the hand-written scheduler, kept across its restarts.
struct Seen {
  int registrations = 0;
  uint64_t epoch = 0;  ///< the incarnation the hand-written scheduler plays (0: predates fences)
  std::vector<std::pair<uint64_t, uint64_t>> presented;  ///< the latest registration's registrations
  std::optional<schema::WorkerControl::Client> control;  ///< of the latest registration
  std::vector<std::string> completes;  ///< "ID: RESULT" through a reporter
  std::vector<std::string> updates;    ///< "ID: RESULT" through the session's updateStatus
};

std::string describe(const std::string& id, schema::Outcome::Reader outcome) {
  if (!outcome.isSucceeded()) return id + ": not a success";
  auto data = outcome.getSucceeded();
  return id + ": " + std::string(reinterpret_cast<const char*>(data.begin()), data.size());
}

class Reporter final : public schema::TaskReporter::Server {
 public:
  Reporter(std::shared_ptr<Seen> seen, std::string id) : seen_(std::move(seen)), id_(std::move(id)) {}
  kj::Promise<void> complete(CompleteContext context) override {
    seen_->completes.push_back(describe(id_, context.getParams().getOutcome()));
    return kj::READY_NOW;
  }

 private:
  std::shared_ptr<Seen> seen_;
  std::string id_;
};

class Session final : public schema::WorkerSession::Server {
 public:
  explicit Session(std::shared_ptr<Seen> seen) : seen_(std::move(seen)) {}
  kj::Promise<void> heartbeat(HeartbeatContext context) override {
    context.getResults().setHealth(schema::Health::HEALTHY);
    return kj::READY_NOW;
  }
  kj::Promise<void> updateStatus(UpdateStatusContext context) override {
    auto params = context.getParams();
    seen_->updates.push_back(describe(params.getInvocationId(), params.getOutcome()));
    return kj::READY_NOW;
  }

 private:
  std::shared_ptr<Seen> seen_;
};

class Gateway final : public schema::Gateway::Server {
 public:
  explicit Gateway(std::shared_ptr<Seen> seen) : seen_(std::move(seen)) {}
  kj::Promise<void> registerWorker(RegisterWorkerContext context) override {
    ++seen_->registrations;
    seen_->control = context.getParams().getControl();
    seen_->presented.clear();
    for (auto f : context.getParams().getInfo().getRegistrations()) {
      seen_->presented.emplace_back(f.getEpoch(), f.getSequence());
    }
    auto registration = context.getResults().initRegistration();
    auto fence = registration.initFence();
    fence.setEpoch(seen_->epoch);
    fence.setSequence(1);
    registration.setSession(kj::heap<Session>(seen_));
    auto timeouts = registration.initTimeouts();
    timeouts.setHeartbeatIntervalMs(100);
    timeouts.setUnhealthyAfterMs(3000);
    timeouts.setMustDieAfterMs(6000);
    return kj::READY_NOW;
  }

 private:
  std::shared_ptr<Seen> seen_;
};

/// The scheduler's port, served by hand on the test's event loop. Destroying it closes every
/// connection, as a scheduler that stopped would.
struct Listener {
  Listener(kj::AsyncIoContext& io, uint16_t port, std::shared_ptr<Seen> seen)
      : server(kj::heap<Gateway>(std::move(seen))),
        receiver(io.provider->getNetwork().parseAddress("127.0.0.1", port).wait(io.waitScope)->listen()),
        serving(server.listen(*receiver)) {}
  capnp::TwoPartyServer server;
  kj::Own<kj::ConnectionReceiver> receiver;
  kj::Promise<void> serving;
};

/// Runs the event loop until `condition` holds (true) or `timeout` passes (false).
template <class F>
bool pump_until(kj::AsyncIoContext& io, F condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    io.provider->getTimer().afterDelay(10 * kj::MILLISECONDS).wait(io.waitScope);
  }
  return true;
}

/// Waits for `promise` on the event loop; nullopt if 10 s pass first.
template <class T>
std::optional<T> wait_for(kj::AsyncIoContext& io, kj::Promise<T> promise) {
  auto timeout = io.provider->getTimer().afterDelay(10 * kj::SECONDS).then([] { return std::optional<T>(); });
  return promise.then([](T value) { return std::optional<T>(kj::mv(value)); })
      .exclusiveJoin(kj::mv(timeout))
      .wait(io.waitScope);
}

/// runTask's answer as the test reads it.
struct RunAnswer {
  std::string error;  ///< empty: accepted
  bool ended = false;
  std::optional<std::string> outcome;  ///< "ID: RESULT" when the answer carried it
};

/// A scheduler's fence: (epoch, sequence). A runTask without one is what a scheduler that
/// predates fences sends.
using Fence = std::pair<uint64_t, uint64_t>;

RunAnswer run_noop(kj::AsyncIoContext& io, schema::WorkerControl::Client control, const std::shared_ptr<Seen>& seen,
                   const std::string& id, bool outcome_in_answer, std::optional<Fence> fence = std::nullopt) {
  auto request = control.runTaskRequest();
  if (fence) {
    request.setNotifySequence(fence->second);
    request.initFence().setEpoch(fence->first);
    request.getFence().setSequence(fence->second);
  }
  auto spec = request.initInvocation();
  spec.setInvocationId(id);
  spec.setWorkflowId("wf");
  spec.setTaskName(id);
  spec.setTaskList("default");
  spec.setAttempt(1);
  spec.setHandler("noop");
  spec.setInput("{}");
  request.setReporter(kj::heap<Reporter>(seen, id));
  request.setOutcomeInAnswer(outcome_in_answer);
  auto answer = wait_for(io, request.send().then([id](auto response) {
    RunAnswer out;
    if (response.hasError() && response.getError().getCode() != schema::ErrorCode::NONE) {
      out.error = response.getError().getMessage().cStr();
    }
    out.ended = response.getEnded();
    if (response.hasOutcome()) out.outcome = describe(id, response.getOutcome());
    return out;
  }));
  REQUIRE_MESSAGE(answer, "runTask did not answer within 10 s");
  return *answer;
}

/// notifyIfTasksNotRunning for `ids` at `fence`; the ids the worker says are not running.
std::vector<std::string> notify(kj::AsyncIoContext& io, schema::WorkerControl::Client control,
                                const std::vector<std::string>& ids, Fence fence) {
  auto request = control.notifyIfTasksNotRunningRequest();
  auto list = request.initInvocationIds(static_cast<unsigned>(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i) list.set(static_cast<unsigned>(i), ids[i]);
  request.setNotifySequence(fence.second);
  request.initFence().setEpoch(fence.first);
  request.getFence().setSequence(fence.second);
  auto answered = wait_for(io, request.send().then([](auto response) {
    std::vector<std::string> out;
    for (auto id : response.getNotRunning()) out.push_back(id.cStr());
    return out;
  }));
  REQUIRE_MESSAGE(answered, "notifyIfTasksNotRunning did not answer within 10 s");
  return *answered;
}

std::vector<std::string> running(kj::AsyncIoContext& io, schema::WorkerControl::Client control) {
  auto ids = wait_for(io, control.getRunningTasksRequest().send().then([](auto response) {
    std::vector<std::string> out;
    for (auto id : response.getInvocationIds()) out.push_back(id.cStr());
    return out;
  }));
  REQUIRE_MESSAGE(ids, "getRunningTasks did not answer within 10 s");
  return *ids;
}

}  // namespace

TEST_SUITE("integration.worker_protocol") {
  TEST_CASE("an outcome in runTask's answer is kept until acknowledged, and reported again after a restart") {
    Cluster cluster;
    auto io = kj::setupAsyncIo();
    auto seen = std::make_shared<Seen>();
    auto listener = kj::heap<Listener>(io, cluster.port, seen);
    cluster.start("worker-a");
    REQUIRE_MESSAGE(pump_until(io, [&] { return seen->registrations == 1; }, 20s), "the worker never registered");
    auto control = *seen->control;
    CHECK(running(io, control).empty());  // associates: runTask is accepted from now on
    // noop ends (with {"ok":true}) before the worker answers: the answer carries its outcome
    // when asked to.
    auto answered = run_noop(io, control, seen, "wf-t1", true);
    REQUIRE(answered.error.empty());
    CHECK(answered.ended);
    CHECK(answered.outcome == std::optional<std::string>("wf-t1: {\"ok\":true}"));
    CHECK(seen->completes.empty());
    CHECK(running(io, control) == std::vector<std::string>{"wf-t1"});  // kept: not acknowledged

    SUBCASE("acknowledged, it is forgotten") {
      auto ack = control.acknowledgeRequest();
      ack.initInvocationIds(1).set(0, "wf-t1");
      REQUIRE(wait_for(io, ack.send().then([](auto) { return true; })));
      CHECK(running(io, control).empty());
      CHECK(seen->updates.empty());
    }

    SUBCASE("a scheduler that stops before acknowledging gets it again from the restarted worker session") {
      listener = nullptr;  // every connection closes
      listener = kj::heap<Listener>(io, cluster.port, seen);
      REQUIRE_MESSAGE(pump_until(io, [&] { return seen->registrations == 2; }, 20s), "the worker never came back");
      REQUIRE_MESSAGE(pump_until(io, [&] { return !seen->updates.empty(); }, 20s), "the outcome was not reported again");
      CHECK(seen->updates == std::vector<std::string>{"wf-t1: {\"ok\":true}"});
      // updateStatus answered: that was its acknowledgement.
      CHECK(running(io, *seen->control).empty());
    }

    SUBCASE("a scheduler that does not ask for outcomes in answers gets it through the reporter") {
      auto plain = run_noop(io, control, seen, "wf-t2", false);
      REQUIRE(plain.error.empty());
      CHECK(plain.ended);
      CHECK_FALSE(plain.outcome);
      REQUIRE_MESSAGE(pump_until(io, [&] { return !seen->completes.empty(); }, 10s), "no complete through the reporter");
      CHECK(seen->completes == std::vector<std::string>{"wf-t2: {\"ok\":true}"});
      CHECK(pump_until(io, [&] { return running(io, control) == std::vector<std::string>{"wf-t1"}; }, 10s));
    }
  }

  TEST_CASE("a restarted scheduler's runTasks are not refused for an earlier incarnation's notify") {
    Cluster cluster;
    auto io = kj::setupAsyncIo();
    auto seen = std::make_shared<Seen>();
    seen->epoch = 7;
    auto listener = kj::heap<Listener>(io, cluster.port, seen);
    cluster.start("worker-a");
    REQUIRE_MESSAGE(pump_until(io, [&] { return seen->registrations == 1; }, 20s), "the worker never registered");
    auto control = *seen->control;
    CHECK(seen->presented.empty());  // a new instance has registered nowhere before
    CHECK(running(io, control).empty());

    // Bistro's rule within one incarnation: after a notify, an older runTask is refused.
    CHECK(notify(io, control, {"ghost"}, {7, 5}) == std::vector<std::string>{"ghost"});
    auto stale = run_noop(io, control, seen, "wf-stale", true, Fence{7, 4});
    CHECK(stale.error.find("older than the last notify") != std::string::npos);
    CHECK(run_noop(io, control, seen, "wf-current", true, Fence{7, 5}).error.empty());

    // The scheduler restarts as incarnation 8, whose sequence starts again from 0.
    listener = nullptr;
    seen->epoch = 8;
    listener = kj::heap<Listener>(io, cluster.port, seen);
    REQUIRE_MESSAGE(pump_until(io, [&] { return seen->registrations == 2; }, 20s), "the worker never came back");
    control = *seen->control;
    // It says since when it held its shard in the earlier incarnation.
    CHECK(seen->presented == std::vector<std::pair<uint64_t, uint64_t>>{{7, 1}});
    running(io, control);
    auto fresh = run_noop(io, control, seen, "wf-after-restart", true, Fence{8, 0});
    CHECK_MESSAGE(fresh.error.empty(), fresh.error);
    // A notify the earlier incarnation sent late does not fence the new one out.
    notify(io, control, {"ghost"}, {7, 99});
    auto later = run_noop(io, control, seen, "wf-later", true, Fence{8, 1});
    CHECK_MESSAGE(later.error.empty(), later.error);
  }
}
