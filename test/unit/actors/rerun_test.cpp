// Reruns through the directory: a finished workflow reopened from a task, what a rerun refuses,
// and a rerun carried on by a restarted scheduler.
#include <doctest/doctest.h>

#include <atomic>
#include <set>

#include "actors/system/directory.hpp"
#include "actors/system/replay.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/history.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

// a -> b -> c, and a -> side. b fails until the gate opens; c sleeps 5 s, retried after a loss.
const char* gated = R"({"name": "gated", "tasks": [
  {"name": "a", "handler": "noop"},
  {"name": "b", "handler": "gate", "dependsOn": ["a"]},
  {"name": "c", "handler": "sleep", "input": {"duration": "5s"}, "dependsOn": ["b"],
   "retry": {"initialInterval": "1s", "maximumAttempts": 3}},
  {"name": "side", "handler": "noop", "dependsOn": ["a"]}]})";

void add_gate(test::ActorFixture& fx, std::shared_ptr<std::atomic<bool>> open) {
  fx.handlers->add("gate", [open](std::shared_ptr<TaskContext> ctx) {
    if (open->load()) {
      ctx->succeed("through");
    } else {
      ctx->fail("Closed", "the gate is closed", true);
    }
  });
}

/// Every invocation id the workflow's history dispatched, in order.
std::vector<std::string> invocation_ids(storage::HistoryStore& store, const std::string& id) {
  std::vector<std::string> out;
  for (const auto& e : test::decoded_history(store, id)) {
    auto body = e.get().getBody();
    if (body.isTaskDispatched()) out.emplace_back(body.getTaskDispatched().getInvocationId().cStr());
  }
  return out;
}

std::string final_state(storage::HistoryStore& store, const std::string& id) {
  auto record = store.find_workflow(id);
  REQUIRE(record);
  REQUIRE(*record);
  return (*record)->status == storage::WorkflowStatus::OPEN ? "OPEN" : (*record)->final_state;
}

}  // namespace

TEST_SUITE("actors.rerun") {
  TEST_CASE("a failed workflow reruns from the failed task: it and its descendants run again, the rest stays") {
    test::ActorFixture fx;
    auto open = std::make_shared<std::atomic<bool>>(false);
    add_gate(fx, open);
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    REQUIRE(fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(gated),
                                std::string("{}"), std::string()));
    auto first = fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf"));
    REQUIRE(first);
    CHECK(first->state == "FAILED");
    CHECK(first->failure_reason ==
          "task 'b' failed: Closed: the gate is closed (not retried: the task has no retry policy)");
    const auto side_before = replay(*fx.store, "wf")->tasks.at("side").canonical();

    open->store(true);
    auto rerun = fx.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string("b"));
    REQUIRE_MESSAGE(rerun, (rerun ? "" : rerun.error().message));
    CHECK(*rerun == "RUNNING");
    CHECK(final_state(*fx.store, "wf") == "OPEN");  // reopened: c sleeps
    auto during = fx.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string("b"));
    REQUIRE_FALSE(during);
    CHECK(during.error().code == Errc::NOT_ALLOWED_IN_STATE);
    CHECK(during.error().message.find("only a finished workflow can be rerun") != std::string::npos);

    fx.self->send(dir, result_atom::value, std::string("wf"));
    fx.advance(5s);
    std::optional<WorkflowOutcome> outcome;
    fx.self->receive([&](WorkflowOutcome& o) { outcome = o; }, caf::after(0s) >> [] {});
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(outcome->failure_reason.empty());
    CHECK(final_state(*fx.store, "wf") == "SUCCESS");

    auto replayed = replay(*fx.store, "wf");
    REQUIRE(replayed);
    CHECK(replayed->workflow.canonical() == fx.ended_workflows.at("wf"));
    CHECK(replayed->workflow.reruns == 1);
    const auto& b = replayed->tasks.at("b");
    CHECK(b.state == TaskState::SUCCESS);
    CHECK(b.attempt == 1);              // a fresh instance, with its own attempts...
    CHECK(b.failure_reason.empty());
    CHECK(b.dispatches == 2);           // ...counting dispatches on
    CHECK(replayed->tasks.at("side").canonical() == side_before);  // not part of the rerun
    const auto ids = invocation_ids(*fx.store, "wf");
    CHECK(ids == std::vector<std::string>{"wf/a/1.1", "wf/b/1.1", "wf/side/1.1", "wf/b/1.2", "wf/c/1.1"});
  }

  TEST_CASE("a rerun names what it refuses: unknown ids and tasks, missing dependencies, nothing to do") {
    test::ActorFixture fx;
    auto open = std::make_shared<std::atomic<bool>>(false);
    add_gate(fx, open);
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    auto unknown = fx.ask<std::string>(dir, rerun_atom::value, std::string("nope"), std::string());
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().code == Errc::NOT_FOUND);

    REQUIRE(fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(gated),
                                std::string("{}"), std::string()));
    REQUIRE(fx.ask<WorkflowOutcome>(dir, result_atom::value, std::string("wf")));
    const auto events = fx.store->read("wf", 1, 100000)->size();

    auto no_task = fx.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string("zz"));
    REQUIRE_FALSE(no_task);
    CHECK(no_task.error().code == Errc::INVALID_ARGUMENT);
    CHECK(no_task.error().message == "workflow 'wf' has no task 'zz'");

    // c depends on b, which failed and would not run again.
    auto unmet = fx.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string("c"));
    REQUIRE_FALSE(unmet);
    CHECK(unmet.error().code == Errc::INVALID_ARGUMENT);
    CHECK(unmet.error().message ==
          "task 'c' depends on 'b', which failed and is not part of a rerun from 'c': rerun from 'b' or a task "
          "upstream of it");
    CHECK(fx.store->read("wf", 1, 100000)->size() == events);  // refusals record nothing
    CHECK(final_state(*fx.store, "wf") == "FAILED");

    // Without a task: everything that did not succeed (b, and c which it blocked).
    open->store(true);
    REQUIRE(fx.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string()));
    fx.advance(5s);
    CHECK(final_state(*fx.store, "wf") == "SUCCESS");
    auto nothing = fx.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string());
    REQUIRE_FALSE(nothing);
    CHECK(nothing.error().code == Errc::INVALID_ARGUMENT);
    CHECK(nothing.error().message.find("nothing to rerun") != std::string::npos);
    // A succeeded workflow reruns from any task.
    REQUIRE(fx.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string("a")));
    fx.advance(5s);
    CHECK(final_state(*fx.store, "wf") == "SUCCESS");
    CHECK(replay(*fx.store, "wf")->workflow.reruns == 2);
    // The id stays taken by the finished workflow.
    auto resubmit = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(gated),
                                        std::string("{}"), std::string());
    REQUIRE_FALSE(resubmit);
    CHECK(resubmit.error().code == Errc::ALREADY_EXISTS);
  }

  TEST_CASE("a stopped workflow reruns what did not finish; a rerun survives a scheduler restart") {
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    std::shared_ptr<storage::MemoryHistoryStore> at_crash;
    auto open = std::make_shared<std::atomic<bool>>(true);
    {
      test::ActorFixture before(LocalExecutorOptions{}, store);
      add_gate(before, open);
      auto dir = before.own(spawn_directory(before.sys, store, before.wiring));
      REQUIRE(before.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(gated),
                                      std::string("{}"), std::string()));
      before.advance(1s);  // c sleeps
      auto wf = before.ask<workflow_actor>(dir, lookup_atom::value, std::string("wf"));
      REQUIRE(wf);
      REQUIRE(before.ask<std::string>(*wf, kill_atom::value));
      before.run();
      REQUIRE(final_state(*store, "wf") == "STOPPED");
      REQUIRE(replay(*store, "wf")->tasks.at("c").state == TaskState::KILLED);

      REQUIRE(before.ask<std::string>(dir, rerun_atom::value, std::string("wf"), std::string()));
      before.advance(1s);  // c sleeps again...
      REQUIRE(replay(*store, "wf")->tasks.at("c").state == TaskState::RUNNING);
      at_crash = store->snapshot();  // ...when the scheduler dies
    }
    store = at_crash;
    test::ActorFixture after(LocalExecutorOptions{}, store);
    add_gate(after, open);
    auto dir = after.own(spawn_directory(after.sys, store, after.wiring));
    auto revived = after.ask<uint64_t>(dir, revive_atom::value);
    REQUIRE(revived);
    CHECK(*revived == 1);
    after.advance(1s);  // c failed over: its retry backoff...
    after.advance(5s);  // ...and the sleep of its second attempt
    CHECK(final_state(*store, "wf") == "SUCCESS");
    auto replayed = replay(*store, "wf");
    REQUIRE(replayed);
    CHECK(replayed->workflow.canonical() == after.ended_workflows.at("wf"));
    const auto ids = invocation_ids(*store, "wf");
    CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == ids.size());
    // c's first run, its rerun, and the rerun's retry after the failover, each its own invocation.
    CHECK(ids == std::vector<std::string>{"wf/a/1.1", "wf/b/1.1", "wf/side/1.1", "wf/c/1.1", "wf/c/1.2", "wf/c/2.3"});
  }
}
