// What a handler is given as its input through its TaskContext: the task's own input, else the
// workflow's; the workflow's always. Through the directory, the workflow and task actors and the
// local executor, live, after a scheduler restart and in a rerun.
#include <doctest/doctest.h>

#include <map>
#include <mutex>
#include <utility>

#include "actors/system/directory.hpp"
#include "test/support/actor_fixture.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

/// (input, workflow input) as each invocation's handler saw them, by invocation id.
struct Seen {
  std::mutex mutex;
  std::map<std::string, std::pair<std::string, std::string>> by_invocation;

  std::pair<std::string, std::string> at(const std::string& invocation) {
    std::lock_guard lock(mutex);
    auto it = by_invocation.find(invocation);
    return it == by_invocation.end() ? std::pair<std::string, std::string>{"(not run)", ""} : it->second;
  }
};

/// Registers "record", a handler that notes what it was given and succeeds.
std::shared_ptr<Seen> add_recorder(test::ActorFixture& fx) {
  auto seen = std::make_shared<Seen>();
  fx.handlers->add("record", [seen](std::shared_ptr<TaskContext> ctx) {
    {
      std::lock_guard lock(seen->mutex);
      seen->by_invocation[ctx->invocation_id()] = {ctx->input_json(), ctx->workflow_input_json()};
    }
    ctx->succeed("{}");
  });
  return seen;
}

Result<std::string> submit(test::ActorFixture& fx, const directory_actor& dir, const std::string& id,
                           const std::string& json, const std::string& input) {
  return fx.ask<std::string>(dir, submit_atom::value, id, json, input, std::string());
}

using Inputs = std::pair<std::string, std::string>;

}  // namespace

TEST_SUITE("actors.task_input") {
  TEST_CASE("a task without an input of its own is given the workflow's; one with its own gets both") {
    test::ActorFixture fx;
    auto seen = add_recorder(fx);
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(submit(fx, dir, "wf", R"({"name": "w", "tasks": [
      {"name": "plain", "handler": "record"},
      {"name": "own", "handler": "record", "input": {"part": 1}, "dependsOn": ["plain"]},
      {"name": "null", "handler": "record", "input": null}]})",
                   R"({"n": 3})"));
    auto outcome = fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(seen->at("wf/plain/1.1") == Inputs{R"({"n": 3})", R"({"n": 3})"});
    CHECK(seen->at("wf/own/1.1") == Inputs{R"({"part":1})", R"({"n": 3})"});
    // An explicit null is the task's own input.
    CHECK(seen->at("wf/null/1.1") == Inputs{"null", R"({"n": 3})"});
  }

  TEST_CASE("a workflow submitted without an input hands its tasks {}") {
    test::ActorFixture fx;
    auto seen = add_recorder(fx);
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(submit(fx, dir, "wf", R"({"name": "w", "tasks": [{"name": "t", "handler": "record"}]})", ""));
    REQUIRE(fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf")));
    CHECK(seen->at("wf/t/1.1") == Inputs{"{}", "{}"});
  }

  TEST_CASE("tasks scheduled after a scheduler restart, and in a rerun, still get the workflow's input") {
    // first sleeps through the restart and is retried after it; then runs once the workflow
    // was revived from its history alone.
    const std::string json = R"({"name": "w", "tasks": [
      {"name": "first", "handler": "sleep", "input": {"duration": "5s"},
       "retry": {"initialInterval": "1s", "maximumAttempts": 2}},
      {"name": "then", "handler": "record", "dependsOn": ["first"]}]})";
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    std::shared_ptr<storage::MemoryHistoryStore> at_crash;
    {
      test::ActorFixture before(LocalExecutorOptions{}, store);
      auto dir = before.own(spawn_directory(before.sys, store, before.wiring));
      REQUIRE(submit(before, dir, "wf", json, R"({"from": "the client"})"));
      before.advance(1s);
      at_crash = store->snapshot();
    }
    test::ActorFixture after(LocalExecutorOptions{}, at_crash);
    auto seen = add_recorder(after);
    auto dir = after.own(spawn_directory(after.sys, at_crash, after.wiring));
    auto revived = after.ask<uint64_t>(dir, revive_atom::value);
    REQUIRE(revived);
    REQUIRE(*revived == 1);
    after.advance(1s);  // first failed over: its retry backoff...
    after.advance(6s);  // ...and its second sleep
    auto outcome = after.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE(outcome);
    REQUIRE(outcome->state == "SUCCESS");
    std::string then_run;
    {
      std::lock_guard lock(seen->mutex);
      REQUIRE(seen->by_invocation.size() == 1);
      then_run = seen->by_invocation.begin()->first;
    }
    CHECK(seen->at(then_run) == Inputs{R"({"from": "the client"})", R"({"from": "the client"})"});

    REQUIRE(after.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string("then")));
    after.run();
    std::lock_guard lock(seen->mutex);
    REQUIRE(seen->by_invocation.size() == 2);
    for (const auto& [invocation, inputs] : seen->by_invocation) {
      CAPTURE(invocation);
      CHECK(inputs == Inputs{R"({"from": "the client"})", R"({"from": "the client"})"});
    }
  }
}
