// asyncCompletion tasks on the deterministic coordinator: once a task hands off, its token ends
// it, or its startToClose does, as for any attempt (retried per its policy), through
// passivation and restarts too. And a result over the result limit fails its attempt.
#include <doctest/doctest.h>

#include <optional>

#include "actors/system/directory.hpp"
#include "actors/system/replay.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/history.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

/// One task that hands off at once and waits for its token, within a startToClose of 10 s, with
/// a heartbeat timeout it cannot meet once it handed off; a second attempt after 1 s.
const char* approval = R"({"name": "approval", "tasks": [
  {"name": "ask", "handler": "approval", "asyncCompletion": true,
   "timeouts": {"scheduleToStart": "1m", "startToClose": "10s", "heartbeat": "2s"},
   "retry": {"initialInterval": "1s", "backoffCoefficient": 1.0, "maximumAttempts": 2}}]})";

void add_approval(test::ActorFixture& fx) {
  fx.handlers->add("approval", [](std::shared_ptr<TaskContext> ctx) { ctx->handed_off(); });
}

Result<std::string> submit(test::ActorFixture& fx, const directory_actor& dir, const std::string& id,
                           const std::string& json) {
  return fx.ask<std::string>(dir, submit_atom::value, id, json, std::string("{}"), std::string());
}

TaskModel ask_task(test::ActorFixture& fx, const std::string& id = "wf") {
  auto replayed = replay(*fx.store, id);
  REQUIRE_MESSAGE(replayed, (replayed ? "" : replayed.error().message));
  return replayed->tasks.at("ask");
}

/// When the history of `id` recorded events of `kind` ("taskTimedOut"), in µs since the test epoch.
std::vector<int64_t> times_of(storage::HistoryStore& store, const std::string& id, const std::string& kind) {
  std::vector<int64_t> out;
  for (const auto& e : test::decoded_history(store, id)) {
    if (test::body_kind(e) == kind) out.push_back(e.get().getTimestampUs() - test::ActorFixture::epoch_us);
  }
  return out;
}

}  // namespace

TEST_SUITE("actors.async_completion") {
  TEST_CASE("a handed-off task whose token never comes times out at its startToClose and is retried per its policy") {
    test::ActorFixture fx;
    add_approval(fx);
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(submit(fx, dir, "wf", approval));
    fx.run();
    const TaskModel first = ask_task(fx);
    REQUIRE(first.awaiting_completion);
    CHECK(first.attempt == 1);

    fx.advance(9s);  // well past the heartbeat timeout: a handed-off task has nothing to heartbeat
    CHECK(ask_task(fx).state == TaskState::RUNNING);
    CHECK(ask_task(fx).attempt == 1);
    fx.advance(1s);  // startToClose: the attempt times out, and the policy allows a second
    CHECK(times_of(*fx.store, "wf", "taskRetryScheduled") == std::vector<int64_t>{10'000'000});
    fx.advance(1s);  // the backoff: attempt 2 runs and hands off in turn
    const TaskModel second = ask_task(fx);
    CHECK(second.attempt == 2);
    CHECK(second.awaiting_completion);

    // The first attempt's token is no longer current.
    auto late = fx.ask<bool>(dir, complete_atom::value, std::string("wf"), std::string("ask"),
                             TaskReport{first.invocation_id, TaskReport::SUCCEEDED, "{}", {}, {}, false});
    REQUIRE_FALSE(late);
    CHECK(late.error().code == Errc::NOT_FOUND);

    fx.advance(10s);  // attempt 2's startToClose, and no attempt is left
    auto outcome = fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE(outcome);
    CHECK(outcome->state == "FAILED");
    CHECK(ask_task(fx).failure_reason == "Timeout:startToClose");
    CHECK(times_of(*fx.store, "wf", "taskTimedOut") == std::vector<int64_t>{21'000'000});
  }

  TEST_CASE("a token used within startToClose ends the task, and the timeout is over with it") {
    test::ActorFixture fx;
    add_approval(fx);
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(submit(fx, dir, "wf", approval));
    fx.advance(9s);
    auto done = fx.ask<bool>(dir, complete_atom::value, std::string("wf"), std::string("ask"),
                             TaskReport{ask_task(fx).invocation_id, TaskReport::SUCCEEDED, "{\"ok\":1}", {}, {}, false});
    REQUIRE_MESSAGE(bool(done), (done ? "" : done.error().message));
    fx.advance(30s);
    auto outcome = fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(times_of(*fx.store, "wf", "taskTimedOut").empty());
    CHECK(times_of(*fx.store, "wf", "taskRetryScheduled").empty());
  }

  TEST_CASE("passivated while it waits for its token, a task still times out at its startToClose") {
    test::ActorFixture fx;
    fx.wiring.workflow_cache = 1;
    add_approval(fx);
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(submit(fx, dir, "wf", approval));
    REQUIRE(submit(fx, dir, "filler", approval));
    fx.run();
    fx.self->send(dir, describe_atom::value);
    fx.run();
    uint64_t passivated = 0;
    fx.self->receive([&](uint64_t, uint64_t p) { passivated = p; });
    REQUIRE(passivated >= 1);
    fx.advance(10s);
    CHECK(times_of(*fx.store, "wf", "taskRetryScheduled") == std::vector<int64_t>{10'000'000});
    CHECK(times_of(*fx.store, "filler", "taskRetryScheduled") == std::vector<int64_t>{10'000'000});
  }

  TEST_CASE("after a restart, a handed-off task's startToClose counts from its dispatch") {
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    std::shared_ptr<storage::MemoryHistoryStore> at_crash;
    {
      test::ActorFixture before(LocalExecutorOptions{}, store);
      add_approval(before);
      auto dir = before.own(spawn_directory(before.sys, store, before.wiring));
      REQUIRE(submit(before, dir, "wf", approval));
      before.run();
      REQUIRE(ask_task(before).awaiting_completion);
      at_crash = store->snapshot();
    }

    SUBCASE("a deadline still ahead fires when it was due") {
      test::ActorFixture after(LocalExecutorOptions{}, at_crash);
      add_approval(after);
      after.advance(4s);  // the scheduler was down 4 s; the clock runs on from the dispatch
      auto dir = after.own(spawn_directory(after.sys, at_crash, after.wiring));
      REQUIRE(after.ask<uint64_t>(dir, revive_atom::value));
      after.advance(5s);
      CHECK(times_of(*at_crash, "wf", "taskRetryScheduled").empty());
      after.advance(1s);
      CHECK(times_of(*at_crash, "wf", "taskRetryScheduled") == std::vector<int64_t>{10'000'000});
    }
    SUBCASE("a deadline that passed while the scheduler was down is held for the recovery window") {
      test::ActorFixture after(LocalExecutorOptions{}, at_crash);
      after.wiring.recovery_window = 5s;
      add_approval(after);
      after.advance(20s);  // down for 20 s: no completion could reach it meanwhile
      auto dir = after.own(spawn_directory(after.sys, at_crash, after.wiring));
      REQUIRE(after.ask<uint64_t>(dir, revive_atom::value));
      after.advance(4s);
      CHECK(times_of(*at_crash, "wf", "taskRetryScheduled").empty());
      after.advance(1s);
      CHECK(times_of(*at_crash, "wf", "taskRetryScheduled") == std::vector<int64_t>{25'000'000});
    }
  }
}

TEST_SUITE("actors.task_limits") {
  TEST_CASE("a result over the result limit fails its attempt as ResultTooLarge, without a retry") {
    test::ActorFixture fx;
    fx.wiring.limits.result_bytes = 1024;
    fx.handlers->add("sized", [](std::shared_ptr<TaskContext> ctx) {
      // Returns a JSON string of as many bytes as its input says.
      const size_t bytes = static_cast<size_t>(std::stoul(ctx->input_json()));
      ctx->succeed("\"" + std::string(bytes - 2, 'r') + "\"");
    });
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    const std::string json = R"({"name": "results", "tasks": [
      {"name": "fits", "handler": "sized", "input": 1024},
      {"name": "big", "handler": "sized", "input": 1025, "retry": {"maximumAttempts": 3}}]})";
    REQUIRE(submit(fx, dir, "wf", json));
    fx.run();
    auto outcome = fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE(outcome);
    CHECK(outcome->state == "FAILED");
    auto replayed = replay(*fx.store, "wf");
    REQUIRE(replayed);
    CHECK(replayed->tasks.at("fits").state == TaskState::SUCCESS);
    CHECK(replayed->tasks.at("fits").result.size() == 1024);
    const TaskModel& big = replayed->tasks.at("big");
    CHECK(big.state == TaskState::FAILURE);
    CHECK(big.attempt == 1);
    CHECK(big.failure_reason == "ResultTooLarge");
    CHECK_MESSAGE(big.failure_details.starts_with("the task's result is 1025 bytes (1.0 KiB); the limit is 1024 "
                                                  "bytes (1 KiB) (limits.result_size in the cluster config)"),
                  big.failure_details);
    CHECK(big.result.empty());
  }
}
