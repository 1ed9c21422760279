// An operator's retry, skip and update of one task of a running workflow, through the directory
// as a client's call reaches it: what each does, what each refuses and why, how a FAILED
// workflow reopens, and that each carries on after a restart and on a passivated workflow.
#include <doctest/doctest.h>

#include <algorithm>
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

// fetch -> {left, right} -> join. left runs the gate (fails while it is closed, with no retry);
// right sleeps 5 s.
const char* diamond = R"({"name": "diamond", "tasks": [
  {"name": "fetch", "handler": "noop"},
  {"name": "left", "handler": "gate", "dependsOn": ["fetch"]},
  {"name": "right", "handler": "sleep", "input": {"duration": "5s"}, "dependsOn": ["fetch"],
   "retry": {"initialInterval": "1s", "maximumAttempts": 3}},
  {"name": "join", "handler": "noop", "dependsOn": ["left", "right"]}]})";

// a -> b -> c, b behind the gate.
const char* chain = R"({"name": "chain", "tasks": [
  {"name": "a", "handler": "noop"},
  {"name": "b", "handler": "gate", "dependsOn": ["a"]},
  {"name": "c", "handler": "noop", "dependsOn": ["b"]}]})";

struct Ops {
  test::ActorFixture& fx;
  directory_actor dir;
  std::shared_ptr<std::atomic<bool>> open = std::make_shared<std::atomic<bool>>(false);

  explicit Ops(test::ActorFixture& fixture) : fx(fixture) {
    fx.handlers->add("gate", [open = open](std::shared_ptr<TaskContext> ctx) {
      if (open->load()) {
        ctx->succeed("through");
      } else {
        ctx->fail("Closed", "the gate is closed", true);
      }
    });
    dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
  }

  void submit(const std::string& id, const char* json) {
    auto started = fx.ask<std::string>(dir, submit_atom::value, id, std::string(json), std::string("{}"), std::string());
    REQUIRE_MESSAGE(started, (started ? "" : started.error().message));
  }

  Result<TaskCommandOutcome> command(const std::string& id, TaskCommand c) {
    return fx.ask<TaskCommandOutcome>(dir, operate_atom::value, id, std::move(c));
  }
  Result<TaskCommandOutcome> retry(const std::string& id, const std::string& task) {
    return command(id, TaskCommand{TaskCommandKind::RETRY, task, {}, {}});
  }
  Result<TaskCommandOutcome> skip(const std::string& id, const std::string& task, const std::string& reason = "by hand") {
    return command(id, TaskCommand{TaskCommandKind::SKIP, task, reason, {}});
  }
  Result<TaskCommandOutcome> update(const std::string& id, const std::string& task, TaskOptionsPatch patch) {
    return command(id, TaskCommand{TaskCommandKind::UPDATE, task, {}, std::move(patch)});
  }

  /// The workflow's outcome, if it has finished by the time every actor is idle.
  std::optional<WorkflowOutcome> outcome(const std::string& id) {
    fx.self->send(dir, result_atom::value, id);
    fx.run();
    std::optional<WorkflowOutcome> out;
    fx.self->receive([&](WorkflowOutcome& o) { out = o; }, caf::after(0s) >> [] {});
    return out;
  }

  ReplayedWorkflow replayed(const std::string& id) {
    auto r = replay(*fx.store, id);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
    return std::move(*r);
  }

  /// "actor:body" for each event of the history.
  std::vector<std::string> kinds(const std::string& id) {
    std::vector<std::string> out;
    for (const auto& e : test::decoded_history(*fx.store, id)) {
      out.push_back(std::string(e.get().getActorId().cStr()) + ":" + test::body_kind(e));
    }
    return out;
  }

  std::vector<std::string> invocations(const std::string& id, const std::string& task) {
    std::vector<std::string> out;
    for (const auto& e : test::decoded_history(*fx.store, id)) {
      auto body = e.get().getBody();
      if (body.isTaskDispatched() && std::string(e.get().getActorId().cStr()) == task) {
        out.emplace_back(body.getTaskDispatched().getInvocationId().cStr());
      }
    }
    return out;
  }

  std::string record_state(const std::string& id) {
    auto record = fx.store->find_workflow(id);
    REQUIRE(record);
    REQUIRE(*record);
    return (*record)->status == storage::WorkflowStatus::OPEN ? "OPEN" : (*record)->final_state;
  }
};

size_t count(const std::vector<std::string>& kinds, const std::string& kind) {
  return static_cast<size_t>(std::count(kinds.begin(), kinds.end(), kind));
}

void check_refused(const Result<TaskCommandOutcome>& r, Errc code, const std::string& message) {
  REQUIRE_FALSE(r);
  CHECK(r.error().code == code);
  CHECK(r.error().message == message);
}

}  // namespace

TEST_SUITE("actors.task_operations") {
  TEST_CASE("a failed task retried while its sibling runs: a new attempt, and the join runs once it succeeds") {
    test::ActorFixture fx;
    Ops ops(fx);
    ops.submit("wf", diamond);
    fx.run();  // left failed; right sleeps
    REQUIRE(ops.replayed("wf").tasks.at("left").state == TaskState::FAILURE);
    REQUIRE(ops.record_state("wf") == "OPEN");

    check_refused(ops.retry("wf", "right"), Errc::NOT_ALLOWED_IN_STATE,
                  "task 'right' of workflow 'wf' has not ended (it is in progress): only a task that failed or was "
                  "killed can be retried");
    check_refused(ops.retry("wf", "join"), Errc::NOT_ALLOWED_IN_STATE,
                  "task 'join' of workflow 'wf' has not run because 'left' failed: retry or skip 'left' instead");
    check_refused(ops.retry("wf", "fetch"), Errc::NOT_ALLOWED_IN_STATE,
                  "task 'fetch' of workflow 'wf' succeeded: only a task that failed or was killed can be retried (to "
                  "run it again, rerun the workflow from it once the workflow has finished)");
    check_refused(ops.retry("wf", "nope"), Errc::INVALID_ARGUMENT, "workflow 'wf' has no task 'nope'");
    check_refused(ops.retry("ghost", "left"), Errc::NOT_FOUND, "no workflow has id 'ghost'");

    ops.open->store(true);
    auto retried = ops.retry("wf", "left");
    REQUIRE_MESSAGE(retried, (retried ? "" : retried.error().message));
    CHECK(retried->workflow_state == "RUNNING");
    CHECK(retried->task_state == "SUBMITTED");
    CHECK(ops.replayed("wf").tasks.at("left").state == TaskState::SUCCESS);
    CHECK(ops.replayed("wf").tasks.count("join") == 0);  // right still sleeps

    fx.advance(5s);
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(outcome->failure_reason.empty());
    auto replayed = ops.replayed("wf");
    CHECK(replayed.workflow.canonical() == fx.ended_workflows.at("wf"));
    const auto& left = replayed.tasks.at("left");
    CHECK(left.attempt == 2);  // numbers go on...
    CHECK(left.attempt_base == 1);  // ...in a fresh round of its (absent) retry policy
    CHECK(ops.invocations("wf", "left") == std::vector<std::string>{"wf/left/1.1", "wf/left/2.2"});
    CHECK(std::find(fx.ended_tasks.begin(), fx.ended_tasks.end(), left.canonical()) != fx.ended_tasks.end());
    const auto kinds = ops.kinds("wf");
    CHECK(count(kinds, "wf:workflowTaskRetried") == 1);
    CHECK(count(kinds, "join:taskSucceeded") == 1);
    CHECK(count(kinds, "wf:workflowFailed") == 0);
  }

  TEST_CASE("a retry reopens a FAILED workflow; a stopped one is refused, pointing at rerun") {
    test::ActorFixture fx;
    Ops ops(fx);
    ops.submit("wf", chain);
    auto failed = ops.outcome("wf");
    REQUIRE(failed);
    REQUIRE(failed->state == "FAILED");
    CHECK(failed->failure_reason.starts_with("task 'b' failed: Closed: the gate is closed"));
    check_refused(ops.retry("wf", "a"), Errc::NOT_ALLOWED_IN_STATE,
                  "task 'a' of workflow 'wf' succeeded: only a task that failed or was killed can be retried (to run "
                  "it again, rerun the workflow from it once the workflow has finished)");
    CHECK(ops.record_state("wf") == "FAILED");  // a refusal records nothing and reopens nothing

    ops.open->store(true);
    auto retried = ops.retry("wf", "b");
    REQUIRE_MESSAGE(retried, (retried ? "" : retried.error().message));
    CHECK(retried->workflow_state == "RUNNING");
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(ops.record_state("wf") == "SUCCESS");
    auto replayed = ops.replayed("wf");
    CHECK(replayed.workflow.reruns == 0);  // not a rerun: only b ran again, then c for the first time
    CHECK(replayed.tasks.at("b").attempt == 2);
    CHECK(replayed.tasks.at("c").state == TaskState::SUCCESS);
    CHECK(replayed.workflow.canonical() == fx.ended_workflows.at("wf"));

    // A workflow stopped by its client is rerun, not retried task by task.
    ops.open->store(false);
    ops.submit("stopped", diamond);
    fx.run();
    auto wf = fx.ask<workflow_actor>(ops.dir, lookup_atom::value, std::string("stopped"));
    REQUIRE(wf);
    REQUIRE(fx.ask<std::string>(*wf, kill_atom::value));
    fx.run();
    REQUIRE(ops.record_state("stopped") == "STOPPED");
    check_refused(ops.retry("stopped", "left"), Errc::NOT_ALLOWED_IN_STATE,
                  "workflow 'stopped' was stopped: rerun it to run again what did not finish");
  }

  TEST_CASE("a failed task skipped: FORCED_SUCCESS with its reason, and its downstream runs") {
    test::ActorFixture fx;
    Ops ops(fx);
    ops.submit("wf", diamond);
    fx.run();
    check_refused(ops.skip("wf", "right"), Errc::NOT_ALLOWED_IN_STATE,
                  "task 'right' is RUNNING on worker local (attempt 1): a task on a worker cannot be skipped; wait for "
                  "its attempt to end, or stop the workflow");
    check_refused(ops.skip("wf", "fetch"), Errc::NOT_ALLOWED_IN_STATE, "task 'fetch' of workflow 'wf' succeeded already");

    auto skipped = ops.skip("wf", "left", "the mirror is down; data is cached");
    REQUIRE_MESSAGE(skipped, (skipped ? "" : skipped.error().message));
    CHECK(skipped->workflow_state == "RUNNING");
    CHECK(skipped->task_state == "FORCED_SUCCESS");
    fx.advance(5s);
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    auto replayed = ops.replayed("wf");
    const auto& left = replayed.tasks.at("left");
    CHECK(left.state == TaskState::FORCED_SUCCESS);
    CHECK(left.failure_reason == "Closed");  // why it needed skipping stays on record
    CHECK(replayed.tasks.at("join").state == TaskState::SUCCESS);
    CHECK(replayed.workflow.canonical() == fx.ended_workflows.at("wf"));
    for (const auto& e : test::decoded_history(*fx.store, "wf")) {
      if (e.get().getBody().isTaskForcedSuccess()) {
        CHECK(std::string(e.get().getBody().getTaskForcedSuccess().getText().cStr()) ==
              "the mirror is down; data is cached");
      }
    }
    CHECK(count(ops.kinds("wf"), "left:taskForcedSuccess") == 1);

    // Skipping the failure a FAILED workflow ended with reopens it, and what it blocked runs.
    ops.submit("chain", chain);
    REQUIRE(ops.outcome("chain")->state == "FAILED");
    auto reopened = ops.skip("chain", "b");
    REQUIRE_MESSAGE(reopened, (reopened ? "" : reopened.error().message));
    CHECK(reopened->task_state == "FORCED_SUCCESS");
    CHECK(ops.outcome("chain")->state == "SUCCESS");
    CHECK(ops.replayed("chain").tasks.at("c").state == TaskState::SUCCESS);
  }

  TEST_CASE("a task skipped before it is scheduled is recorded FORCED_SUCCESS when it would be, never dispatched") {
    test::ActorFixture fx;
    Ops ops(fx);
    ops.submit("wf", R"({"name": "slow", "tasks": [
      {"name": "a", "handler": "sleep", "input": {"duration": "5s"}},
      {"name": "b", "handler": "gate", "dependsOn": ["a"]},
      {"name": "c", "handler": "noop", "dependsOn": ["b"]}]})");
    fx.run();
    auto pending = ops.skip("wf", "b", "known broken");
    REQUIRE_MESSAGE(pending, (pending ? "" : pending.error().message));
    CHECK(pending->task_state == "WAITING");
    const auto events = fx.store->read("wf", 1, 100000)->size();
    auto again = ops.skip("wf", "b", "asked twice");
    REQUIRE(again);
    CHECK(again->task_state == "WAITING");
    CHECK(fx.store->read("wf", 1, 100000)->size() == events);  // the first one stands
    CHECK(replay(*fx.store, "wf")->workflow.skips.at(1) == "known broken");

    fx.advance(5s);
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    const auto kinds = ops.kinds("wf");
    CHECK(count(kinds, "b:taskScheduled") == 1);
    CHECK(count(kinds, "b:taskForcedSuccess") == 1);
    CHECK(count(kinds, "b:taskDispatched") == 0);
    CHECK(count(kinds, "c:taskSucceeded") == 1);
    CHECK(ops.replayed("wf").workflow.canonical() == fx.ended_workflows.at("wf"));
  }

  TEST_CASE("a task waiting for a slot is skipped at once, and leaves its task list") {
    LocalExecutorOptions one_slot;
    one_slot.slots = 1;
    test::ActorFixture fx(one_slot);
    Ops ops(fx);
    ops.submit("wf", R"({"name": "busy", "tasks": [
      {"name": "hog", "handler": "sleep", "input": {"duration": "10s"}},
      {"name": "queued", "handler": "noop", "priority": -1},
      {"name": "after", "handler": "noop", "dependsOn": ["queued"]}]})");
    fx.run();
    REQUIRE(ops.replayed("wf").tasks.at("queued").state == TaskState::DISPATCHING);
    auto queued = ops.skip("wf", "queued");
    REQUIRE_MESSAGE(queued, (queued ? "" : queued.error().message));
    CHECK(queued->task_state == "FORCED_SUCCESS");
    CHECK(ops.replayed("wf").tasks.at("after").state == TaskState::DISPATCHING);  // behind hog now

    fx.advance(10s);  // hog's slot goes to after, not to the skipped task
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    auto replayed = ops.replayed("wf");
    CHECK(replayed.tasks.at("queued").state == TaskState::FORCED_SUCCESS);
    CHECK(replayed.tasks.at("queued").dispatches == 0);
    CHECK(replayed.workflow.canonical() == fx.ended_workflows.at("wf"));
  }

  TEST_CASE("a task in its retry backoff is skipped; an update of its retry policy lets a failing task try on") {
    test::ActorFixture fx;
    Ops ops(fx);
    auto failures = std::make_shared<int>(0);
    fx.handlers->add("thrice", [failures](std::shared_ptr<TaskContext> ctx) {
      if (++*failures <= 3) {
        ctx->fail("Flaky", "failure " + std::to_string(*failures));
      } else {
        ctx->succeed("ok");
      }
    });
    fx.handlers->add("always", [](std::shared_ptr<TaskContext> ctx) { ctx->fail("Down", "still down"); });
    ops.submit("wf", R"({"name": "retries", "tasks": [
      {"name": "flaky", "handler": "thrice", "retry": {"initialInterval": "1s", "maximumAttempts": 2}},
      {"name": "stuck", "handler": "always", "retry": {"initialInterval": "1m", "maximumAttempts": 3}},
      {"name": "after", "handler": "noop", "dependsOn": ["flaky", "stuck"]}]})");
    fx.run();
    REQUIRE(ops.replayed("wf").tasks.at("flaky").state == TaskState::DELAY_EXECUTION);
    REQUIRE(ops.replayed("wf").tasks.at("stuck").state == TaskState::DELAY_EXECUTION);

    // flaky would be out of attempts after its second: give it more.
    TaskOptionsPatch more;
    more.retry_json = R"({"initialInterval": "1s", "maximumAttempts": 5})";
    auto updated = ops.update("wf", "flaky", more);
    REQUIRE_MESSAGE(updated, (updated ? "" : updated.error().message));
    CHECK(updated->task_state == "DELAY_EXECUTION");
    CHECK(updated->workflow_state == "RUNNING");

    TaskOptionsPatch bad;
    bad.heartbeat = "1m";
    check_refused(ops.update("wf", "stuck", bad), Errc::INVALID_ARGUMENT,
                  "the task's new options have a problem:\n  timeouts: give scheduleToClose, or both scheduleToStart "
                  "and startToClose, so every attempt is bounded");
    auto skipped = ops.skip("wf", "stuck", "the service is retired");
    REQUIRE_MESSAGE(skipped, (skipped ? "" : skipped.error().message));
    CHECK(skipped->task_state == "FORCED_SUCCESS");
    fx.advance(1s);  // attempt 2 fails; 2 s of backoff
    fx.advance(2s);  // attempt 3 fails; 4 s
    fx.advance(4s);  // attempt 4 succeeds
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    auto replayed = ops.replayed("wf");
    CHECK(replayed.tasks.at("flaky").attempt == 4);
    REQUIRE(replayed.tasks.at("flaky").options);
    CHECK(replayed.tasks.at("flaky").options->retry);
    CHECK(replayed.tasks.at("stuck").attempt == 2);  // skipped while waiting for its second attempt
    CHECK(replayed.workflow.canonical() == fx.ended_workflows.at("wf"));
    check_refused(ops.update("wf", "flaky", more), Errc::NOT_ALLOWED_IN_STATE,
                  "task 'flaky' of workflow 'wf' succeeded: it has no next attempt");
  }

  TEST_CASE("an attempt on an executor keeps its timeouts; the next one has the new ones") {
    test::ActorFixture fx;
    Ops ops(fx);
    fx.handlers->add("slow", [](std::shared_ptr<TaskContext> ctx) {
      ctx->after(3s, [ctx] { ctx->fail("Slow", "attempt " + std::to_string(ctx->attempt())); });
    });
    ops.submit("wf", R"({"name": "slow", "tasks": [
      {"name": "t", "handler": "slow", "timeouts": {"scheduleToStart": "1m", "startToClose": "1m"},
       "retry": {"initialInterval": "1s", "maximumAttempts": 2}}]})");
    fx.advance(1s);
    TaskOptionsPatch tight;
    tight.start_to_close = "2s";
    auto updated = ops.update("wf", "t", tight);
    REQUIRE_MESSAGE(updated, (updated ? "" : updated.error().message));
    CHECK(updated->task_state == "RUNNING");
    auto task = ops.replayed("wf").tasks.at("t");
    CHECK_FALSE(task.options);
    REQUIRE(task.pending_options);
    REQUIRE(task.pending_options->timeouts);

    fx.advance(2s);  // 3 s into attempt 1: it ends with its own failure, not a 2 s timeout
    task = ops.replayed("wf").tasks.at("t");
    CHECK(task.failure_reason == "Slow");
    CHECK(task.state == TaskState::DELAY_EXECUTION);
    REQUIRE(task.options);
    REQUIRE(task.options->timeouts);
    CHECK(task.options->timeouts->start_to_close == Duration(2'000'000));
    fx.advance(1s);  // the backoff: attempt 2 starts, and times out after 2 s
    fx.advance(2s);
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "FAILED");
    CHECK(ops.replayed("wf").tasks.at("t").failure_reason == "Timeout:startToClose");

    // The workflow FAILED: a longer startToClose for the failed task, then a retry that uses it.
    TaskOptionsPatch roomy;
    roomy.start_to_close = "10s";
    auto recorded = ops.update("wf", "t", roomy);
    REQUIRE_MESSAGE(recorded, (recorded ? "" : recorded.error().message));
    CHECK(recorded->workflow_state == "FAILED");
    CHECK(recorded->task_state == "FAILURE");
    CHECK(ops.record_state("wf") == "FAILED");
    fx.handlers->add("slow", [](std::shared_ptr<TaskContext> ctx) {
      ctx->after(3s, [ctx] { ctx->succeed("done"); });
    });
    REQUIRE(ops.retry("wf", "t"));
    // Attempt 2 timed out, and its handler runs on for another second: the retry waits for it,
    // so that two attempts never run at once.
    CHECK(ops.invocations("wf", "t").size() == 2);
    fx.advance(1s);
    CHECK(ops.invocations("wf", "t").size() == 3);
    fx.advance(3s);
    outcome = ops.outcome("wf");
    REQUIRE_MESSAGE(outcome, [&] {
      std::string all;
      for (const auto& k : ops.kinds("wf")) all += k + " ";
      return all;
    }());
    CHECK(outcome->state == "SUCCESS");
    CHECK(ops.replayed("wf").tasks.at("t").attempt == 3);
  }

  TEST_CASE("commands made while paused wait for the resume, and survive a scheduler restart") {
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    std::shared_ptr<storage::MemoryHistoryStore> at_crash;
    {
      test::ActorFixture before(LocalExecutorOptions{}, store);
      Ops ops(before);
      ops.submit("wf", diamond);
      before.run();  // left failed, right sleeps
      auto wf = before.ask<workflow_actor>(ops.dir, lookup_atom::value, std::string("wf"));
      REQUIRE(wf);
      REQUIRE(before.ask<std::string>(*wf, pause_atom::value));
      auto retried = ops.retry("wf", "left");
      REQUIRE_MESSAGE(retried, (retried ? "" : retried.error().message));
      CHECK(retried->workflow_state == "READY_PAUSE");
      CHECK(retried->task_state == "WAITING");  // scheduled when the workflow resumes
      auto skipped = ops.skip("wf", "join", "tested elsewhere");
      REQUIRE(skipped);
      CHECK(skipped->task_state == "WAITING");
      before.advance(5s);  // right ends: PAUSED
      REQUIRE(ops.replayed("wf").workflow.state == WorkflowState::PAUSED);
      CHECK(ops.invocations("wf", "left").size() == 1);
      at_crash = store->snapshot();
    }
    test::ActorFixture after(LocalExecutorOptions{}, at_crash);
    Ops ops(after);
    ops.open->store(true);
    REQUIRE(after.ask<uint64_t>(ops.dir, revive_atom::value));
    after.run();
    auto replayed = ops.replayed("wf");
    CHECK(replayed.workflow.state == WorkflowState::PAUSED);
    CHECK(replayed.workflow.retried == std::set<uint32_t>{1});
    auto wf = after.ask<workflow_actor>(ops.dir, lookup_atom::value, std::string("wf"));
    REQUIRE(wf);
    REQUIRE(after.ask<std::string>(*wf, resume_atom::value));
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    replayed = ops.replayed("wf");
    CHECK(replayed.tasks.at("left").attempt == 2);
    CHECK(replayed.tasks.at("join").state == TaskState::FORCED_SUCCESS);
    CHECK(ops.invocations("wf", "left") == std::vector<std::string>{"wf/left/1.1", "wf/left/2.2"});
    CHECK(ops.invocations("wf", "join").empty());
    CHECK(replayed.workflow.canonical() == after.ended_workflows.at("wf"));
  }

  TEST_CASE("a passivated workflow wakes for a command, records nothing else for it, and carries on") {
    test::ActorFixture fx;
    fx.wiring.workflow_cache = 1;
    Ops ops(fx);
    ops.submit("first", diamond);
    fx.run();  // left failed, right sleeps: idle
    ops.submit("second", R"({"name": "idle", "tasks": [{"name": "z", "handler": "sleep", "input": {"duration": "1m"}}]})");
    fx.run();
    fx.self->send(ops.dir, describe_atom::value);
    fx.run();
    uint64_t passivated = 0;
    fx.self->receive([&](uint64_t, uint64_t p) { passivated = p; });
    REQUIRE(passivated == 1);

    ops.open->store(true);
    TaskOptionsPatch later;
    later.set_priority = true;
    later.priority = 5;
    REQUIRE(ops.update("first", "join", later));
    auto retried = ops.retry("first", "left");
    REQUIRE_MESSAGE(retried, (retried ? "" : retried.error().message));
    CHECK(retried->task_state == "SUBMITTED");
    fx.advance(5s);
    auto outcome = ops.outcome("first");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    const auto kinds = ops.kinds("first");
    CHECK(count(kinds, "first:workflowFailover") == 0);  // woken, not revived
    auto replayed = ops.replayed("first");
    REQUIRE(replayed.tasks.at("join").options);
    CHECK(replayed.tasks.at("join").options->priority == std::optional<int32_t>(5));
    CHECK(replayed.tasks.at("join").scheduled);
    CHECK(replayed.workflow.canonical() == fx.ended_workflows.at("first"));
  }

  TEST_CASE("a retry asked while the workflow's close is being written waits for it, then reopens it") {
    test::ActorFixture fx;
    Ops ops(fx);
    fx.handlers->add("late_gate", [open = ops.open](std::shared_ptr<TaskContext> ctx) {
      ctx->after(1s, [ctx, open] {
        if (open->load()) {
          ctx->succeed("through");
        } else {
          ctx->fail("Closed", "the gate is closed", true);
        }
      });
    });
    ops.submit("wf", R"({"name": "late", "tasks": [
      {"name": "a", "handler": "noop"}, {"name": "b", "handler": "late_gate", "dependsOn": ["a"]},
      {"name": "c", "handler": "noop", "dependsOn": ["b"]}]})");
    fx.run();
    fx.store->hold();
    fx.advance(1s);  // b fails: the workflow decides FAILED, and its close is not durable yet
    ops.open->store(true);
    fx.self->send(ops.dir, operate_atom::value, std::string("wf"), TaskCommand{TaskCommandKind::RETRY, "b", {}, {}});
    fx.run();
    bool early = false;
    fx.self->receive([&](TaskCommandOutcome&) { early = true; }, [&](caf::error&) { early = true; },
                     caf::after(0s) >> [] {});
    CHECK_FALSE(early);  // it waits for what is being written
    fx.store->release();
    fx.run();
    std::optional<TaskCommandOutcome> answer;
    std::optional<Error> error;
    fx.self->receive([&](TaskCommandOutcome& o) { answer = o; }, [&](caf::error& e) { error = from_caf(e); },
                     caf::after(0s) >> [] {});
    REQUIRE_MESSAGE(answer, (error ? error->message : std::string("no answer")));
    CHECK(answer->workflow_state == "RUNNING");
    fx.advance(1s);
    auto outcome = ops.outcome("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    const auto kinds = ops.kinds("wf");
    CHECK(count(kinds, "wf:workflowFinalized") == 2);  // closed, reopened by the retry, closed again
    CHECK(ops.replayed("wf").workflow.canonical() == fx.ended_workflows.at("wf"));
  }
}
