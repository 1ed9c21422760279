// Workflows run by real workflow and task actors on the deterministic test coordinator, with
// programmable handlers and the in-memory history store.
#include <doctest/doctest.h>

#include <algorithm>

#include "actors/system/replay.hpp"
#include "actors/workflow/workflow_actor.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/history.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

struct Run {
  test::ActorFixture& fx;
  std::string id;
  workflow_actor wf;

  Run(test::ActorFixture& fixture, std::string workflow_id, const std::string& json,
      std::string run_from = {})
      : fx(fixture), id(std::move(workflow_id)) {
    REQUIRE_MESSAGE(parse_definition(json), "the test's definition must be valid");
    wf = fx.own(spawn_workflow(fx.sys, WorkflowSetup{id, json, "{}", std::move(run_from), fx.shared_wiring(), nullptr}));
  }

  Result<std::string> start() { return fx.ask<std::string>(wf, start_atom::value); }
  Result<std::string> pause() { return fx.ask<std::string>(wf, pause_atom::value); }
  Result<std::string> resume() { return fx.ask<std::string>(wf, resume_atom::value); }
  Result<std::string> stop() { return fx.ask<std::string>(wf, stop_atom::value); }
  Result<std::string> kill() { return fx.ask<std::string>(wf, kill_atom::value); }
  Result<WorkflowOutcome> result() { return fx.ask<WorkflowOutcome>(wf, result_atom::value); }

  /// Asks for the result first (the actor ends when the workflow does), then starts, runs
  /// until idle, and returns the outcome if the workflow finished.
  Result<WorkflowOutcome> start_and_run() {
    fx.self->send(wf, result_atom::value);
    auto started = start();
    if (!started) return started.error();
    return collect_result();
  }

  /// The outcome if it arrived (after start_and_run), else TIMED_OUT.
  Result<WorkflowOutcome> collect_result() {
    fx.run();
    Result<WorkflowOutcome> out = fail(Errc::TIMED_OUT, "the workflow has not finished");
    fx.self->receive([&](WorkflowOutcome& o) { out = std::move(o); },
                     [&](caf::error& e) { out = from_caf(e); },
                     caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }

  ReplayedWorkflow replayed() {
    auto r = actors::replay(*fx.store, id);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
    return std::move(*r);
  }
  TaskModel task(const std::string& name) {
    auto r = replayed();
    REQUIRE(r.tasks.count(name) == 1);
    return r.tasks.at(name);
  }
  /// The event kinds of the history, in order, e.g. "workflowSubmitted".
  std::vector<std::string> event_kinds() {
    std::vector<std::string> out;
    for (const auto& e : test::decoded_history(*fx.store, id)) {
      out.push_back(test::body_kind(e) + ":" + e.get().getActorId().cStr());
    }
    return out;
  }
};

const char* diamond = R"({"name": "diamond", "tasks": [
  {"name": "a", "handler": "noop"},
  {"name": "b", "handler": "noop", "dependsOn": ["a"]},
  {"name": "c", "handler": "noop", "dependsOn": ["a"]},
  {"name": "d", "handler": "noop", "dependsOn": ["b", "c"]}]})";

}  // namespace

TEST_SUITE("actors.workflow") {
  TEST_CASE("a diamond of handlers runs to SUCCESS and its history replays to the same state") {
    test::ActorFixture fx;
    Run run(fx, "wf-diamond", diamond);
    auto outcome = run.start_and_run();
    REQUIRE_MESSAGE(outcome, (outcome ? "" : outcome.error().message));
    CHECK(outcome->state == "SUCCESS");

    auto replayed = run.replayed();
    CHECK(replayed.workflow.state == WorkflowState::SUCCESS);
    CHECK(replayed.workflow.finalized);
    REQUIRE(replayed.tasks.size() == 4);
    for (const auto& [name, task] : replayed.tasks) {
      CAPTURE(name);
      CHECK(task.state == TaskState::SUCCESS);
      CHECK(task.result == "{\"ok\":true}");
    }
    // Every ended task actor's last state is what replay rebuilt.
    REQUIRE(fx.ended_tasks.size() == 4);
    for (const auto& canonical : fx.ended_tasks) {
      bool matched = false;
      for (const auto& [name, task] : replayed.tasks) matched = matched || task.canonical() == canonical;
      CHECK_MESSAGE(matched, canonical);
    }
    auto record = fx.store->find_workflow("wf-diamond");
    REQUIRE(record);
    REQUIRE(*record);
    CHECK((*record)->status == storage::WorkflowStatus::CLOSED);

    // d was scheduled only after both b and c finished.
    auto kinds = run.event_kinds();
    auto at = [&](const std::string& k) {
      return std::find(kinds.begin(), kinds.end(), k) - kinds.begin();
    };
    CHECK(at("workflowTaskFinished:wf-diamond") < at("taskScheduled:b"));
    CHECK(at("taskScheduled:d") > at("taskSucceeded:b"));
    CHECK(at("taskScheduled:d") > at("taskSucceeded:c"));
    CHECK(kinds.back() == "workflowFinalized:wf-diamond");
  }
}

namespace {

/// Registers the test's handlers:
///   fail       fails with reason "Oops"
///   bad-input  fails with "BadInput"
///   flaky      fails "Oops" on attempts 1 and 2, succeeds on 3 with "attempt 3"
///   hang       never reports and ignores cancellation
///   beat-hang  heartbeats "progress-of-N" for attempt N, then hangs on attempt 1 and
///              succeeds with the progress it was given on later attempts
void add_test_handlers(test::ActorFixture& fx) {
  fx.handlers->add("fail", [](std::shared_ptr<TaskContext> ctx) { ctx->fail("Oops", "it broke"); });
  fx.handlers->add("bad-input", [](std::shared_ptr<TaskContext> ctx) { ctx->fail("BadInput"); });
  fx.handlers->add("flaky", [](std::shared_ptr<TaskContext> ctx) {
    if (ctx->attempt() < 3) {
      ctx->fail("Oops");
    } else {
      ctx->succeed("attempt " + std::to_string(ctx->attempt()));
    }
  });
  fx.handlers->add("hang", [](std::shared_ptr<TaskContext>) {});
  fx.handlers->add("beat-hang", [](std::shared_ptr<TaskContext> ctx) {
    const std::string given = ctx->progress();
    ctx->heartbeat("progress-of-" + std::to_string(ctx->attempt()));
    if (ctx->attempt() > 1) ctx->succeed(given);
  });
}

std::string one_task(const std::string& task_fields) {
  return R"({"name": "single", "tasks": [{"name": "t", )" + task_fields + "}]}";
}

}  // namespace

TEST_SUITE("actors.workflow") {
  TEST_CASE("a failed task stops its successors; an independent branch still finishes") {
    test::ActorFixture fx;
    add_test_handlers(fx);
    Run run(fx, "wf-fail", R"({"name": "w", "tasks": [
      {"name": "a", "handler": "noop"},
      {"name": "b", "handler": "fail", "dependsOn": ["a"]},
      {"name": "c", "handler": "noop", "dependsOn": ["b"]},
      {"name": "d", "handler": "noop", "dependsOn": ["a"]}]})");
    auto outcome = run.start_and_run();
    REQUIRE(outcome);
    CHECK(outcome->state == "FAILED");
    // The whole message: the task, the failure's reason and its details.
    CHECK(outcome->failure_reason == "task 'b' failed: Oops: it broke (not retried: the task has no retry policy)");
    auto replayed = run.replayed();
    CHECK(replayed.tasks.count("c") == 0);  // never scheduled
    CHECK(replayed.tasks.at("d").state == TaskState::SUCCESS);
    CHECK(replayed.tasks.at("b").state == TaskState::FAILURE);
    CHECK(replayed.tasks.at("b").failure_details == "it broke (not retried: the task has no retry policy)");
    CHECK(replayed.workflow.graph->state(2) == NodeState::BLOCKED);
  }

  TEST_CASE("retries wait out their backoff on the actor clock, then succeed") {
    test::ActorFixture fx;
    add_test_handlers(fx);
    Run run(fx, "wf-retry", one_task(R"("handler": "flaky",
        "retry": {"initialInterval": "1s", "backoffCoefficient": 2.0, "maximumAttempts": 5})"));
    fx.self->send(run.wf, result_atom::value);
    REQUIRE(run.start());
    auto t = run.task("t");
    CHECK(t.state == TaskState::DELAY_EXECUTION);
    CHECK(t.attempt == 2);
    CHECK(t.delay_until_us - test::ActorFixture::epoch_us == 1'000'000);

    fx.advance(999ms);  // not yet
    CHECK(run.task("t").attempt == 2);
    CHECK(run.task("t").state == TaskState::DELAY_EXECUTION);
    fx.advance(1ms);  // attempt 2 runs and fails: the next wait is 2 s
    t = run.task("t");
    CHECK(t.attempt == 3);
    CHECK(t.delay_until_us - test::ActorFixture::epoch_us == 3'000'000);
    fx.advance(2s);
    auto outcome = run.collect_result();
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(run.task("t").result == "attempt 3");
    CHECK(fx.elapsed_us() == 3'000'000);
  }

  TEST_CASE("a non-retryable error ends the task after one attempt") {
    test::ActorFixture fx;
    add_test_handlers(fx);
    Run run(fx, "wf-nonretry", one_task(R"("handler": "bad-input",
        "retry": {"maximumAttempts": 5, "nonRetryableErrors": ["BadInput"]})"));
    auto outcome = run.start_and_run();
    REQUIRE(outcome);
    CHECK(outcome->state == "FAILED");
    auto t = run.task("t");
    CHECK(t.attempt == 1);
    CHECK(t.failure_details == "not retried: 'BadInput' is listed in nonRetryableErrors");
  }

  TEST_CASE("a heartbeat timeout retries the task, and the next attempt gets the last progress") {
    test::ActorFixture fx;
    add_test_handlers(fx);
    Run run(fx, "wf-heartbeat", one_task(R"("handler": "beat-hang",
        "timeouts": {"startToClose": "1m", "scheduleToStart": "1m", "heartbeat": "5s"},
        "retry": {"initialInterval": "1s", "maximumAttempts": 3})"));
    fx.self->send(run.wf, result_atom::value);
    REQUIRE(run.start());
    CHECK(run.task("t").state == TaskState::RUNNING);
    CHECK(run.task("t").progress == "progress-of-1");
    fx.advance(4s);
    CHECK(run.task("t").state == TaskState::RUNNING);
    fx.advance(1s);  // heartbeat timeout
    CHECK(run.task("t").state == TaskState::DELAY_EXECUTION);
    CHECK(run.task("t").failure_reason == "Timeout:heartbeat");
    // The hung attempt was cancelled and ignores it: the next one waits until its grace has
    // passed and it counts as stopped, so the two never run at once.
    fx.advance(1s);
    CHECK(run.task("t").state == TaskState::DELAY_EXECUTION);
    fx.advance(fx.wiring.kill_grace - 1s);
    auto outcome = run.collect_result();
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(run.task("t").result == "progress-of-1");
  }

  TEST_CASE("each timeout kind fires at its time and is recorded") {
    SUBCASE("startToClose") {
      test::ActorFixture fx;
      add_test_handlers(fx);
      Run run(fx, "wf-stc", one_task(R"("handler": "hang", "timeouts": {"scheduleToStart": "1m", "startToClose": "10s"})"));
      fx.self->send(run.wf, result_atom::value);
      REQUIRE(run.start());
      fx.advance(9s);
      CHECK(run.task("t").state == TaskState::RUNNING);
      fx.advance(1s);
      auto outcome = run.collect_result();
      REQUIRE(outcome);
      CHECK(outcome->state == "FAILED");
      CHECK(run.task("t").failure_reason == "Timeout:startToClose");
    }
    SUBCASE("scheduleToStart, while no executor slot is free") {
      test::ActorFixture fx(LocalExecutorOptions{"local", 0, {}});
      Run run(fx, "wf-sts", one_task(R"("handler": "noop", "timeouts": {"scheduleToStart": "3s", "startToClose": "10s"})"));
      fx.self->send(run.wf, result_atom::value);
      REQUIRE(run.start());
      CHECK(run.task("t").state == TaskState::DISPATCHING);
      fx.advance(3s);
      auto outcome = run.collect_result();
      REQUIRE(outcome);
      CHECK(outcome->state == "FAILED");
      CHECK(run.task("t").failure_reason == "Timeout:scheduleToStart");
    }
    SUBCASE("scheduleToClose ends retries that would outlast it") {
      test::ActorFixture fx;
      add_test_handlers(fx);
      Run run(fx, "wf-s2c", one_task(R"("handler": "fail", "timeouts": {"scheduleToClose": "10s"},
          "retry": {"initialInterval": "4s", "backoffCoefficient": 1.0})"));
      fx.self->send(run.wf, result_atom::value);
      REQUIRE(run.start());
      fx.advance(4s);  // attempt 2 fails at 4 s; 4 s + 4 s < 10 s: one more
      CHECK(run.task("t").attempt == 3);
      fx.advance(4s);  // attempt 3 fails at 8 s; 8 s + 4 s >= 10 s: no more
      auto outcome = run.collect_result();
      REQUIRE(outcome);
      CHECK(outcome->state == "FAILED");
      CHECK(run.task("t").failure_details.find("scheduleToClose timeout (10s)") != std::string::npos);
    }
    SUBCASE("scheduleToClose fires while an attempt hangs") {
      test::ActorFixture fx;
      add_test_handlers(fx);
      Run run(fx, "wf-s2c-hang", one_task(R"("handler": "hang", "timeouts": {"scheduleToClose": "30s"},
          "retry": {"maximumAttempts": 10})"));
      fx.self->send(run.wf, result_atom::value);
      REQUIRE(run.start());
      fx.advance(30s);  // startToClose defaults to 30 s too: whichever fires, no retry is left
      auto outcome = run.collect_result();
      REQUIRE(outcome);
      CHECK(outcome->state == "FAILED");
      CHECK(run.task("t").failure_reason.starts_with("Timeout:"));
    }
  }

  TEST_CASE("pause lets the running task finish, dispatches nothing new, and resume continues") {
    test::ActorFixture fx;
    Run run(fx, "wf-pause", R"({"name": "w", "tasks": [
      {"name": "a", "handler": "sleep", "input": {"duration": "10s"}},
      {"name": "b", "handler": "noop", "dependsOn": ["a"]}]})");
    fx.self->send(run.wf, result_atom::value);
    REQUIRE(run.start());
    fx.advance(1s);
    auto paused = run.pause();
    REQUIRE(paused);
    CHECK(*paused == "READY_PAUSE");
    CHECK(*run.pause() == "READY_PAUSE");  // a repeated request is answered, not refused
    fx.advance(9s);  // a finishes; b is not started
    auto replayed = run.replayed();
    CHECK(replayed.workflow.state == WorkflowState::PAUSED);
    CHECK(replayed.tasks.at("a").state == TaskState::SUCCESS);
    CHECK(replayed.tasks.count("b") == 0);
    auto resumed = run.resume();
    REQUIRE(resumed);
    auto outcome = run.collect_result();
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
  }

  TEST_CASE("pausing holds tasks still waiting for a slot, and resume starts them again") {
    test::ActorFixture fx(LocalExecutorOptions{"local", 0, {}});
    Run run(fx, "wf-pause-waiting", one_task(R"("handler": "noop")"));
    fx.self->send(run.wf, result_atom::value);
    REQUIRE(run.start());
    auto paused = run.pause();
    REQUIRE(paused);
    fx.run();
    CHECK(run.replayed().workflow.state == WorkflowState::PAUSED);
    CHECK(run.task("t").state == TaskState::PAUSED);
    REQUIRE(run.resume());
    CHECK(run.task("t").state == TaskState::DISPATCHING);
    auto refused = fx.ask<std::string>(run.wf, resume_atom::value);
    REQUIRE(refused);  // RESUME while running is answered with the state
    CHECK(*refused == "RUNNING");
  }

  TEST_CASE("stop kills a cooperative task at once and a hanging one after the grace period") {
    test::ActorFixture fx;
    add_test_handlers(fx);
    fx.wiring.kill_grace = 5s;
    Run run(fx, "wf-stop", R"({"name": "w", "tasks": [
      {"name": "sleepy", "handler": "sleep", "input": {"duration": "1h"}},
      {"name": "stuck", "handler": "hang"},
      {"name": "after", "handler": "noop", "dependsOn": ["sleepy", "stuck"]}]})");
    fx.self->send(run.wf, result_atom::value);
    REQUIRE(run.start());
    auto stopping = run.stop();
    REQUIRE(stopping);
    CHECK(*stopping == "READY_STOP");
    CHECK(run.task("sleepy").state == TaskState::KILLED);  // confirmed by the handler
    CHECK(run.task("stuck").state == TaskState::RUNNING);  // still waiting for its executor
    fx.advance(5s);
    auto outcome = run.collect_result();
    REQUIRE(outcome);
    CHECK(outcome->state == "STOPPED");
    CHECK(run.task("stuck").state == TaskState::KILLED);
    CHECK(run.replayed().tasks.count("after") == 0);
    auto too_late = fx.ask<std::string>(run.wf, pause_atom::value);
    CHECK_FALSE(too_late);  // the actor is gone with its finished workflow
  }

  TEST_CASE("kill ends a workflow with a hanging task at once, without waiting out the grace") {
    test::ActorFixture fx;
    add_test_handlers(fx);
    fx.wiring.kill_grace = 1h;
    Run run(fx, "wf-kill", R"({"name": "w", "tasks": [
      {"name": "stuck", "handler": "hang"},
      {"name": "after", "handler": "noop", "dependsOn": ["stuck"]}]})");
    fx.self->send(run.wf, result_atom::value);
    REQUIRE(run.start());
    CHECK(run.task("stuck").state == TaskState::RUNNING);
    auto killing = run.kill();
    REQUIRE(killing);
    CHECK(*killing == "STOPPED");  // answered once the workflow is, not with the stop under way
    auto outcome = run.collect_result();  // no time passes on the test clock
    REQUIRE(outcome);
    CHECK(outcome->state == "STOPPED");
    auto stuck = run.task("stuck");
    CHECK(stuck.state == TaskState::KILLED);
    CHECK(stuck.kill_immediate);
    CHECK(run.replayed().workflow.stop_immediate);
    CHECK(run.replayed().tasks.count("after") == 0);
  }

  TEST_CASE("kill escalates a stop that is waiting out a hanging task's grace") {
    test::ActorFixture fx;
    add_test_handlers(fx);
    fx.wiring.kill_grace = 1h;
    Run run(fx, "wf-stop-kill", R"({"name": "w", "tasks": [{"name": "stuck", "handler": "hang"}]})");
    fx.self->send(run.wf, result_atom::value);
    REQUIRE(run.start());
    auto stopping = run.stop();
    REQUIRE(stopping);
    CHECK(*stopping == "READY_STOP");
    fx.advance(1min);
    CHECK(run.task("stuck").state == TaskState::RUNNING);  // the grace is an hour
    CHECK_FALSE(run.task("stuck").kill_immediate);
    auto killing = run.kill();
    REQUIRE(killing);
    CHECK(*killing == "STOPPED");
    auto outcome = run.collect_result();
    REQUIRE(outcome);
    CHECK(outcome->state == "STOPPED");
    CHECK(run.task("stuck").state == TaskState::KILLED);
    CHECK(run.task("stuck").kill_immediate);
  }

  TEST_CASE("run-from runs only the named task and its descendants") {
    test::ActorFixture fx;
    Run run(fx, "wf-run-from", diamond, "c");
    auto outcome = run.start_and_run();
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    auto replayed = run.replayed();
    CHECK(replayed.tasks.size() == 2);
    CHECK(replayed.tasks.count("c") == 1);
    CHECK(replayed.tasks.count("d") == 1);
  }

  TEST_CASE("a request the workflow's state does not allow is refused with the reason") {
    test::ActorFixture fx;
    Run run(fx, "wf-refuse", one_task(R"("handler": "noop")"));
    auto refused = run.resume();  // not started yet
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Errc::NOT_ALLOWED_IN_STATE);
    CHECK(refused.error().message == "RESUME is not allowed in state SUBMITTED");
  }
}

TEST_SUITE("actors.workflow") {
  TEST_CASE("a kill under way is not undone by a timeout firing before the kill is confirmed") {
    test::ActorFixture fx;
    add_test_handlers(fx);  // beat-hang: heartbeats once, then ignores everything on attempt 1
    fx.wiring.kill_grace = 5s;
    Run run(fx, "wf-kill-race", one_task(R"("handler": "beat-hang",
        "timeouts": {"scheduleToStart": "1m", "startToClose": "1m", "heartbeat": "2s"},
        "retry": {"initialInterval": "1s", "maximumAttempts": 10})"));
    fx.self->send(run.wf, result_atom::value);
    REQUIRE(run.start());
    REQUIRE(run.stop());
    fx.advance(2s);  // the heartbeat timeout falls due while the kill waits for confirmation
    CHECK(run.task("t").state == TaskState::RUNNING);
    CHECK(run.task("t").attempt == 1);
    fx.advance(3s);  // the kill's grace period ends
    auto outcome = run.collect_result();
    REQUIRE(outcome);
    CHECK(outcome->state == "STOPPED");
    CHECK(run.task("t").state == TaskState::KILLED);
    CHECK(run.task("t").attempt == 1);
  }
}

TEST_SUITE("actors.workflow") {
  TEST_CASE("a pause that reaches a running task holds back its retry instead of being lost") {
    test::ActorFixture fx;
    fx.handlers->add("fail-later", [](std::shared_ptr<TaskContext> ctx) {
      ctx->after(std::chrono::seconds(2), [ctx] { ctx->fail("Oops"); });
    });
    Run run(fx, "wf-pause-running", one_task(R"("handler": "fail-later",
        "retry": {"initialInterval": "1s", "maximumAttempts": 3})"));
    REQUIRE(run.start());
    fx.advance(1s);
    REQUIRE(run.pause());
    CHECK(run.task("t").state == TaskState::RUNNING);
    CHECK(run.task("t").pause_requested);
    fx.advance(1s);  // the attempt fails: the retry is scheduled, then held by the pause
    CHECK(run.task("t").state == TaskState::PAUSED);
    CHECK(run.task("t").attempt == 2);
    CHECK(run.replayed().workflow.state == WorkflowState::PAUSED);
    fx.advance(10s);  // nothing runs while paused
    CHECK(run.task("t").state == TaskState::PAUSED);
    REQUIRE(run.resume());
    CHECK(run.task("t").state == TaskState::RUNNING);
    CHECK(run.task("t").attempt == 2);
  }

  TEST_CASE("a resume that overtakes a task's pause leaves no paused task under a running workflow") {
    test::ActorFixture fx(LocalExecutorOptions{"local", 0, {}});  // the task waits in its queue
    Run run(fx, "wf-pause-race", one_task(R"("handler": "noop")"));
    REQUIRE(run.start());
    // Both requests are decided before the pause reaches the task.
    fx.self->send(run.wf, pause_atom::value);
    fx.self->send(run.wf, resume_atom::value);
    fx.run();
    auto replayed = run.replayed();
    CHECK(replayed.workflow.state == WorkflowState::RUNNING);
    CHECK(replayed.workflow.graph->state(0) == NodeState::ACTIVE);
    CHECK(replayed.tasks.at("t").state == TaskState::DISPATCHING);
  }
}
