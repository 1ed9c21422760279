// The directory: admission, results of closed workflows, and recovery after a restart.
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

const char* chain = R"({"name": "chain", "tasks": [
  {"name": "a", "handler": "noop"},
  {"name": "b", "handler": "sleep", "input": {"duration": "10s"}, "dependsOn": ["a"],
   "retry": {"initialInterval": "1s", "maximumAttempts": 3}},
  {"name": "c", "handler": "noop", "dependsOn": ["b"]}]})";

std::vector<std::string> body_kinds(storage::HistoryStore& store, const std::string& id) {
  std::vector<std::string> out;
  for (const auto& e : test::decoded_history(store, id)) {
    auto body = e.get().getBody();
    if (body.isWorkflowFailover()) out.push_back("workflowFailover");
    if (body.isTaskFailover()) out.push_back("taskFailover:" + std::string(e.get().getActorId().cStr()));
    if (body.isTaskRetryScheduled()) out.push_back("taskRetryScheduled");
  }
  return out;
}

}  // namespace

TEST_SUITE("actors.directory") {
  TEST_CASE("submissions are validated; an open workflow's id returns that run, a finished one's is refused") {
    test::ActorFixture fx;
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    auto bad = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"),
                                   std::string(R"({"name": "x", "tasks": [{"name": "a"}]})"),
                                   std::string("{}"), std::string());
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == Errc::INVALID_ARGUMENT);
    CHECK(bad.error().message.find("$.tasks[0]: needs a body") != std::string::npos);

    auto ok = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(chain),
                                  std::string("{}"), std::string());
    REQUIRE(ok);
    CHECK(*ok == "RUNNING");
    const auto events_before = fx.store->read("wf", 1, 1000)->size();
    auto again = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(chain),
                                     std::string("{}"), std::string());
    REQUIRE(again);
    CHECK(*again == "OPEN");                                     // the same run...
    CHECK(fx.store->read("wf", 1, 1000)->size() == events_before);  // ...and nothing new recorded
    fx.advance(10s);
    REQUIRE((*fx.store->find_workflow("wf"))->status == storage::WorkflowStatus::CLOSED);
    auto finished = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(chain),
                                        std::string("{}"), std::string());
    REQUIRE_FALSE(finished);
    CHECK(finished.error().code == Errc::ALREADY_EXISTS);
    CHECK(finished.error().message.find("has finished") != std::string::npos);

    auto unknown = fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("nope"));
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().code == Errc::NOT_FOUND);
  }

  TEST_CASE("submissions are held to the limits, and lowering a limit leaves workflows taken before running") {
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    {
      test::ActorFixture fx(LocalExecutorOptions{}, store);
      fx.wiring.limits.tasks = 3;
      auto dir = fx.own(spawn_directory(fx.sys, store, fx.wiring));
      auto ok = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(chain),
                                    std::string("{}"), std::string());
      REQUIRE(ok);
      fx.advance(3s);  // b sleeps; the scheduler is about to restart with a lower limit
    }
    test::ActorFixture fx(LocalExecutorOptions{}, store);
    fx.wiring.limits.tasks = 2;
    fx.wiring.limits.name_bytes = 16;
    auto dir = fx.own(spawn_directory(fx.sys, store, fx.wiring));
    auto many = fx.ask<std::string>(dir, submit_atom::value, std::string("wf-2"), std::string(chain),
                                    std::string("{}"), std::string());
    REQUIRE_FALSE(many);
    CHECK(many.error().code == Errc::INVALID_ARGUMENT);
    CHECK(many.error().message ==
          "the workflow definition has 1 problem:\n  $.tasks: the workflow is 3 tasks; the limit is 2 tasks "
          "(limits.tasks_per_workflow in the cluster config): split it into several workflows, or raise the limit");
    auto named = fx.ask<std::string>(dir, submit_atom::value, std::string("wf-3"),
                                     std::string(R"({"name": "a-name-of-18-bytes", "tasks": [{"name": "t", "handler": "noop"}]})"),
                                     std::string("{}"), std::string());
    REQUIRE_FALSE(named);
    CHECK(named.error().message.find("$.name: the workflow name is 18 bytes") != std::string::npos);
    CHECK_FALSE(*store->find_workflow("wf-2"));
    // The three-task workflow taken before the restart is revived and finishes (b failed over
    // with the executor it ran on, and runs again).
    auto revived = fx.ask<uint64_t>(dir, revive_atom::value);
    REQUIRE(revived);
    CHECK(*revived == 1);
    fx.advance(1s);
    fx.advance(10s);
    auto outcome = fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE_MESSAGE(outcome, (outcome ? "" : outcome.error().message));
    CHECK(outcome->state == "SUCCESS");
  }

  TEST_CASE("the result of a closed workflow comes from its history") {
    test::ActorFixture fx;
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(chain),
                                std::string("{}"), std::string()));
    fx.advance(10s);
    auto record = fx.store->find_workflow("wf");
    REQUIRE((*record)->status == storage::WorkflowStatus::CLOSED);
    auto outcome = fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    auto lookup = fx.ask<workflow_actor>(dir, lookup_atom::value, std::string("wf"));
    REQUIRE_FALSE(lookup);
    CHECK(lookup.error().code == Errc::NOT_ALLOWED_IN_STATE);
  }

  TEST_CASE("completing a handed-off task answers the caller, though the workflow closes at once") {
    // The task tells its workflow it ended before its event is durable, so the workflow can
    // close (and its actor end) while the task's answer to the completion is still on its way.
    test::ActorFixture fx;
    fx.handlers->add("approval", [](std::shared_ptr<TaskContext> ctx) { ctx->handed_off(); });
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    const std::string approval = R"({"name": "approval", "tasks": [
      {"name": "ask", "handler": "approval", "asyncCompletion": true}]})";
    for (const auto kind : {TaskReport::SUCCEEDED, TaskReport::FAILED}) {
      const std::string id = kind == TaskReport::SUCCEEDED ? "approved" : "rejected";
      REQUIRE(fx.ask<std::string>(dir, submit_atom::value, id, approval, std::string("{}"), std::string()));
      fx.run();
      const auto task = replay(*fx.store, id)->tasks.at("ask");
      REQUIRE(task.awaiting_completion);
      TaskReport report{task.invocation_id, kind, "r", {}, {}, false};
      if (kind == TaskReport::FAILED) report.reason = "Rejected";
      // As a group commit does: the task's outcome and the workflow's close become durable
      // together, and their actors hear it in that order.
      fx.store->hold();
      fx.self->send(dir, complete_atom::value, id, std::string("ask"), report);
      fx.run();
      fx.store->release();
      fx.run();
      std::optional<bool> done;
      fx.self->receive([&](bool answer) { done = answer; }, [&](const caf::error& e) { FAIL(to_string(e)); },
                       caf::after(std::chrono::seconds(0)) >> [] {});
      REQUIRE_MESSAGE(done.has_value(), "the completion was never answered");
      CHECK(*done);
      auto outcome = fx.ask<WorkflowOutcome>(dir, result_atom::value, id);
      REQUIRE(outcome);
      CHECK(outcome->state == (kind == TaskReport::SUCCEEDED ? "SUCCESS" : "FAILED"));
    }
  }

  TEST_CASE("after a restart, open workflows are revived and carry on; lost invocations fail over") {
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    std::shared_ptr<storage::MemoryHistoryStore> at_crash;
    {
      test::ActorFixture before(LocalExecutorOptions{}, store);
      auto dir = before.own(spawn_directory(before.sys, store, before.wiring));
      REQUIRE(before.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(chain),
                                      std::string("{}"), std::string()));
      before.advance(3s);  // b sleeps on an executor that is about to vanish
      auto b = replay(*store, "wf")->tasks.at("b");
      REQUIRE(b.state == TaskState::RUNNING);
      at_crash = store->snapshot();  // the scheduler dies here: nothing after this is durable
    }
    store = at_crash;

    test::ActorFixture after(LocalExecutorOptions{}, store);
    auto dir = after.own(spawn_directory(after.sys, store, after.wiring));
    auto revived = after.ask<uint64_t>(dir, revive_atom::value);
    REQUIRE(revived);
    CHECK(*revived == 1);
    auto b = replay(*store, "wf")->tasks.at("b");
    CHECK(b.state == TaskState::DELAY_EXECUTION);
    CHECK(b.attempt == 2);
    CHECK(b.failure_reason == "Failover");
    after.self->send(dir, result_atom::value, std::string("wf"));
    after.advance(1s);   // the backoff
    after.advance(10s);  // the 10 s sleep of attempt 2
    std::optional<WorkflowOutcome> outcome;
    after.self->receive([&](WorkflowOutcome& o) { outcome = o; }, caf::after(0s) >> [] {});
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(body_kinds(*store, "wf") ==
          std::vector<std::string>{"workflowFailover", "taskFailover:b", "taskRetryScheduled"});
    auto final_state = replay(*store, "wf");
    REQUIRE(final_state);
    CHECK(final_state->workflow.canonical() == after.ended_workflows.at("wf"));
  }

  TEST_CASE("after a restart, a completion that arrives while its workflow is being revived is taken") {
    // The revived task actor exists only once the workflow's failover is durable; a completion
    // that reaches the workflow before then waits for it instead of hearing "not running".
    const std::string approval = R"({"name": "approval", "tasks": [
      {"name": "ask", "handler": "approval", "asyncCompletion": true}]})";
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    std::shared_ptr<storage::MemoryHistoryStore> at_crash;
    {
      test::ActorFixture before(LocalExecutorOptions{}, store);
      before.handlers->add("approval", [](std::shared_ptr<TaskContext> ctx) { ctx->handed_off(); });
      auto dir = before.own(spawn_directory(before.sys, store, before.wiring));
      REQUIRE(before.ask<std::string>(dir, submit_atom::value, std::string("wf"), approval, std::string("{}"),
                                      std::string()));
      before.run();
      REQUIRE(replay(*store, "wf")->tasks.at("ask").awaiting_completion);
      at_crash = store->snapshot();
    }
    store = at_crash;

    test::ActorFixture after(LocalExecutorOptions{}, store);
    auto dir = after.own(spawn_directory(after.sys, store, after.wiring));
    const auto task = replay(*store, "wf")->tasks.at("ask");
    store->hold();  // the failover the revival writes is not durable yet
    after.self->send(dir, complete_atom::value, std::string("wf"), std::string("ask"),
                     TaskReport{task.invocation_id, TaskReport::SUCCEEDED, "approved", {}, {}, false});
    after.run();
    store->release();
    after.run();
    std::optional<bool> done;
    std::string refused;
    after.self->receive([&](bool answer) { done = answer; }, [&](const caf::error& e) { refused = to_string(e); },
                        caf::after(0s) >> [] {});
    REQUIRE_MESSAGE(done.has_value(), "the completion was refused: " << refused);
    CHECK(*done);
    auto outcome = after.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(replay(*store, "wf")->tasks.at("ask").result == "approved");
  }

  TEST_CASE("a paused workflow is revived paused and resumes") {
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    std::shared_ptr<storage::MemoryHistoryStore> at_crash;
    {
      test::ActorFixture before(LocalExecutorOptions{"local", 0, {}}, store);
      auto dir = before.own(spawn_directory(before.sys, store, before.wiring));
      REQUIRE(before.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(chain),
                                      std::string("{}"), std::string()));
      auto wf = before.ask<workflow_actor>(dir, lookup_atom::value, std::string("wf"));
      REQUIRE(wf);
      auto paused = before.ask<std::string>(*wf, pause_atom::value);
      REQUIRE(paused);
      before.run();
      REQUIRE(replay(*store, "wf")->workflow.state == WorkflowState::PAUSED);
      at_crash = store->snapshot();
    }
    store = at_crash;
    test::ActorFixture after(LocalExecutorOptions{}, store);
    auto dir = after.own(spawn_directory(after.sys, store, after.wiring));
    auto wf = after.ask<workflow_actor>(dir, lookup_atom::value, std::string("wf"));
    REQUIRE(wf);
    CHECK(replay(*store, "wf")->workflow.state == WorkflowState::PAUSED);
    after.self->send(dir, result_atom::value, std::string("wf"));
    REQUIRE(after.ask<std::string>(*wf, resume_atom::value));
    after.advance(10s);
    std::optional<WorkflowOutcome> outcome;
    after.self->receive([&](std::string&) {}, caf::after(0s) >> [] {});
    after.self->receive([&](WorkflowOutcome& o) { outcome = o; }, caf::after(0s) >> [] {});
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
  }
}

TEST_SUITE("actors.directory") {
  TEST_CASE("when the history cannot be written, nothing takes effect and callers get the error") {
    test::ActorFixture fx;
    fx.handlers->add("count", [](std::shared_ptr<TaskContext> ctx) { ctx->succeed("ran"); });
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    fx.store->fail_writes(fail(Errc::UNAVAILABLE, "disk on fire (injected)"));
    auto refused = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"),
                                       std::string(R"({"name": "w", "tasks": [{"name": "a", "handler": "count"}]})"),
                                       std::string("{}"), std::string());
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message == "disk on fire (injected)");
    CHECK(fx.store->read("wf", 1, 10)->empty());
    CHECK(fx.ended_tasks.empty());  // no task instance was ever started
  }

  TEST_CASE("a write that fails mid-run ends the workflow's actors without reporting success") {
    test::ActorFixture fx;
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(chain),
                                std::string("{}"), std::string()));
    fx.self->send(dir, result_atom::value, std::string("wf"));
    fx.run();
    fx.store->fail_writes(fail(Errc::UNAVAILABLE, "disk on fire (injected)"));
    fx.advance(10s);  // b's sleep ends, but its success cannot be persisted
    std::optional<WorkflowOutcome> outcome;
    std::optional<caf::error> error;
    fx.self->receive([&](WorkflowOutcome& o) { outcome = o; }, [&](caf::error& e) { error = e; },
                     caf::after(0s) >> [] {});
    CHECK_FALSE(outcome);
    CHECK(error);
    auto b = replay(*fx.store, "wf")->tasks.at("b");
    CHECK(b.state == TaskState::RUNNING);  // what is durable is all that counts
    CHECK(fx.ended_workflows.empty());
  }
}
