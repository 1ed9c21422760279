// The workflow cache: beyond its size, idle workflows give up their actors and wake from their
// histories for whatever happens to them next (an executor's report, a timer coming due, a
// client), recording nothing for it and carrying on exactly as if they had stayed.
#include <doctest/doctest.h>

#include <random>
#include <set>

#include "actors/system/directory.hpp"
#include "actors/system/replay.hpp"
#include "test/support/actor_fixture.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

const char* sleeper = R"({"name": "sleeper", "tasks": [
  {"name": "wait", "handler": "sleep", "input": {"duration": "10s"}},
  {"name": "after", "handler": "noop", "dependsOn": ["wait"]}]})";

struct CacheCounts {
  uint64_t live = 0;
  uint64_t passivated = 0;
};

CacheCounts counts(test::ActorFixture& fx, const directory_actor& dir) {
  fx.self->send(dir, describe_atom::value);
  fx.run();
  CacheCounts out;
  fx.self->receive([&](uint64_t live, uint64_t passivated) { out = {live, passivated}; });
  return out;
}

Result<std::string> submit(test::ActorFixture& fx, const directory_actor& dir, const std::string& id,
                           const std::string& json) {
  return fx.ask<std::string>(dir, submit_atom::value, id, json, std::string("{}"), std::string());
}

/// The kinds of the events of `id`'s history, as "actor:body".
std::vector<std::string> history_of(storage::HistoryStore& store, const std::string& id) {
  std::vector<std::string> out;
  auto history = store.read(id, 1, 1000000);
  REQUIRE(history);
  for (const auto& e : *history) {
    auto d = storage::DecodedEvent::decode(e.packed);
    REQUIRE(d);
    auto event = d->get();
    std::string kind;
    switch (event.getBody().which()) {
      case schema::EventBody::WORKFLOW_FAILOVER: kind = "workflowFailover"; break;
      case schema::EventBody::TASK_FAILOVER: kind = "taskFailover"; break;
      case schema::EventBody::TASK_DISPATCHED: kind = "taskDispatched"; break;
      case schema::EventBody::TASK_TIMED_OUT: kind = "taskTimedOut"; break;
      case schema::EventBody::TASK_KILLED: kind = "taskKilled"; break;
      case schema::EventBody::TASK_SUCCEEDED: kind = "taskSucceeded"; break;
      default: kind = "other"; break;
    }
    out.push_back(std::string(event.getActorId().cStr()) + ":" + kind);
  }
  return out;
}

size_t count_of(const std::vector<std::string>& kinds, const std::string& kind) {
  return static_cast<size_t>(std::count(kinds.begin(), kinds.end(), kind));
}

std::optional<WorkflowOutcome> outcome_of(test::ActorFixture& fx, const directory_actor& dir,
                                          const std::string& id) {
  auto outcome = fx.ask<WorkflowOutcome>(dir, result_atom::value, id);
  if (!outcome) return std::nullopt;
  return *outcome;
}

}  // namespace

TEST_SUITE("actors.passivation") {
  TEST_CASE("idle workflows beyond the cache passivate, and wake for their executors' reports") {
    test::ActorFixture fx;
    fx.wiring.workflow_cache = 2;
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    for (int i = 0; i < 6; ++i) REQUIRE(submit(fx, dir, "wf" + std::to_string(i), sleeper));
    fx.run();
    const auto idle = counts(fx, dir);
    CHECK(idle.live == 2);
    CHECK(idle.passivated == 4);

    fx.advance(10s);  // every sleep ends; the reports of passivated tasks come through the directory
    for (int i = 0; i < 6; ++i) {
      const std::string id = "wf" + std::to_string(i);
      CAPTURE(id);
      auto outcome = outcome_of(fx, dir, id);
      REQUIRE(outcome);
      CHECK(outcome->state == "SUCCESS");
      const auto kinds = history_of(*fx.store, id);
      // Nothing was lost and nothing recorded for it: one invocation of each task, no failover.
      CHECK(count_of(kinds, "wait:taskDispatched") == 1);
      CHECK(count_of(kinds, "after:taskSucceeded") == 1);
      CHECK(count_of(kinds, id + ":workflowFailover") == 0);
      auto replayed = replay(*fx.store, id);
      REQUIRE(replayed);
      CHECK(replayed->workflow.canonical() == fx.ended_workflows.at(id));
    }
    const auto after = counts(fx, dir);
    CHECK(after.live == 0);
    CHECK(after.passivated == 0);
  }

  TEST_CASE("a passivated task's timeout fires when it would have") {
    test::ActorFixture fx;
    fx.wiring.workflow_cache = 1;
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    const char* bounded = R"({"name": "bounded", "tasks": [
      {"name": "wait", "handler": "sleep", "input": {"duration": "1m"}, "timeouts": {"scheduleToStart": "1m", "startToClose": "3s"}}]})";
    REQUIRE(submit(fx, dir, "first", bounded));
    fx.advance(1s);
    REQUIRE(submit(fx, dir, "second", bounded));  // the cache holds one: "first" passivates
    fx.run();
    CHECK(counts(fx, dir).passivated == 1);
    const int64_t first_dispatched = [&] {
      auto replayed = replay(*fx.store, "first");
      REQUIRE(replayed);
      return replayed->tasks.at("wait").dispatched_us;
    }();

    fx.advance(2s);  // 3 s after first's dispatch: its startToClose is due while it is passivated
    auto first = replay(*fx.store, "first");
    REQUIRE(first);
    CHECK(first->workflow.state == WorkflowState::FAILED);
    CHECK(first->tasks.at("wait").failure_reason == "Timeout:startToClose");
    auto history = fx.store->read("first", 1, 1000);
    REQUIRE(history);
    int64_t timed_out_at = 0;
    for (const auto& e : *history) {
      auto d = storage::DecodedEvent::decode(e.packed);
      if (d->get().getBody().isTaskTimedOut()) timed_out_at = d->get().getTimestampUs();
    }
    CHECK(timed_out_at - first_dispatched == 3'000'000);
    CHECK(count_of(history_of(*fx.store, "first"), "first:workflowFailover") == 0);
  }

  TEST_CASE("clients reach passivated workflows: stop, completion of a handed-off task, result") {
    test::ActorFixture fx;
    fx.wiring.workflow_cache = 1;
    fx.wiring.kill_grace = 2s;
    fx.handlers->add("approval", [](std::shared_ptr<TaskContext> ctx) { ctx->handed_off(); });
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    const char* approval = R"({"name": "approval", "tasks": [
      {"name": "ask", "handler": "approval", "asyncCompletion": true}]})";
    REQUIRE(submit(fx, dir, "approve", approval));
    REQUIRE(submit(fx, dir, "stopped", sleeper));
    REQUIRE(submit(fx, dir, "filler", sleeper));
    fx.run();
    REQUIRE(counts(fx, dir).passivated == 2);
    REQUIRE(replay(*fx.store, "approve")->tasks.at("ask").awaiting_completion);

    auto stop = fx.ask<std::string>(dir, control_atom::value, std::string("stopped"),
                                    static_cast<uint8_t>(WorkflowControl::STOP));
    REQUIRE_MESSAGE(bool(stop), (stop ? "" : stop.error().message));
    CHECK(*stop == "READY_STOP");
    fx.run();  // the sleep handler ends as soon as it is cancelled; its report comes back
    auto stopped = outcome_of(fx, dir, "stopped");
    REQUIRE(stopped);
    CHECK(stopped->state == "STOPPED");
    CHECK(count_of(history_of(*fx.store, "stopped"), "wait:taskKilled") == 1);

    const std::string invocation = replay(*fx.store, "approve")->tasks.at("ask").invocation_id;
    auto done = fx.ask<bool>(dir, complete_atom::value, std::string("approve"), std::string("ask"),
                             TaskReport{invocation, TaskReport::SUCCEEDED, "approved", {}, {}, false});
    REQUIRE_MESSAGE(bool(done), (done ? "" : done.error().message));
    auto approved = outcome_of(fx, dir, "approve");
    REQUIRE(approved);
    CHECK(approved->state == "SUCCESS");
    CHECK(replay(*fx.store, "approve")->tasks.at("ask").result == "approved");

    // A finished workflow refuses control from its history, whether it ended passivated or not.
    auto late = fx.ask<std::string>(dir, control_atom::value, std::string("stopped"),
                                    static_cast<uint8_t>(WorkflowControl::PAUSE));
    REQUIRE_FALSE(late);
    CHECK(late.error().message.find("has finished") != std::string::npos);
  }

  TEST_CASE("a busy workflow is not passivated; it is asked again once the cache has room to spare") {
    test::ActorFixture fx;
    fx.wiring.workflow_cache = 1;
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(submit(fx, dir, "waiting", sleeper));
    fx.self->send(dir, result_atom::value, std::string("waiting"));  // a client waits: it stays
    REQUIRE(submit(fx, dir, "other", sleeper));
    fx.run();  // "waiting", least recently used, is asked first and refuses
    fx.advance(1s);  // the next round asks "other"
    const auto busy = counts(fx, dir);
    CHECK(busy.live == 1);  // "other" passivated, "waiting" has a client waiting
    CHECK(busy.passivated == 1);
    fx.advance(10s);
    std::optional<WorkflowOutcome> outcome;
    fx.self->receive([&](WorkflowOutcome& o) { outcome = o; }, caf::after(0s) >> [] {});
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(outcome_of(fx, dir, "other")->state == "SUCCESS");
  }
}
