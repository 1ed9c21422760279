// What describe and result tell of a workflow, from real actors on the deterministic test
// coordinator: state codes, tasks that will not run (UPSTREAM_FAILED, from the execution graph),
// failure messages, task times, the final tasks' outputs, and the open workflow's state the
// store's index keeps.
#include <doctest/doctest.h>

#include <atomic>

#include "actors/system/directory.hpp"
#include "actors/system/replay.hpp"
#include "test/support/actor_fixture.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

/// The test's handlers:
///   fail   fails with reason "Oops" and details "it broke"
///   hang   never reports
///   echo   succeeds with its input
///   later  succeeds with {} after 10 s
///   flaky  fails "Oops" on attempts 1 and 2, succeeds on 3
void add_handlers(test::ActorFixture& fx) {
  fx.handlers->add("fail", [](std::shared_ptr<TaskContext> ctx) { ctx->fail("Oops", "it broke"); });
  fx.handlers->add("hang", [](std::shared_ptr<TaskContext>) {});
  fx.handlers->add("echo", [](std::shared_ptr<TaskContext> ctx) { ctx->succeed(ctx->input_json()); });
  fx.handlers->add("later", [](std::shared_ptr<TaskContext> ctx) { ctx->after(10s, [ctx] { ctx->succeed("{}"); }); });
  fx.handlers->add("flaky", [](std::shared_ptr<TaskContext> ctx) {
    if (ctx->attempt() < 3) {
      ctx->fail("Oops", "attempt " + std::to_string(ctx->attempt()));
    } else {
      ctx->succeed(R"({"attempt":3})");
    }
  });
}

/// A directory over the fixture's store, and the workflows submitted through it.
struct Scheduler {
  test::ActorFixture& fx;
  directory_actor directory;

  explicit Scheduler(test::ActorFixture& fixture)
      : fx(fixture), directory(fx.own(spawn_directory(fx.sys, fx.store, fx.wiring))) {}

  void submit(const std::string& id, const std::string& json) {
    auto started = fx.ask<std::string>(directory, submit_atom::value, id, json, std::string("{}"), std::string());
    REQUIRE_MESSAGE(started, (started ? "" : started.error().message));
  }

  Result<WorkflowOutcome> result(const std::string& id) {
    return fx.ask<WorkflowOutcome>(directory, result_atom::value, id);
  }

  WorkflowStatus status(const std::string& id) {
    auto replayed = replay(*fx.store, id);
    REQUIRE_MESSAGE(replayed, (replayed ? "" : replayed.error().message));
    return snapshot(*replayed);
  }

  std::string live_state(const std::string& id) {
    auto record = fx.store->find_workflow(id);
    REQUIRE(record);
    REQUIRE(*record);
    return (*record)->live_state;
  }
};

const TaskStatus& task_of(const WorkflowStatus& status, const std::string& name) {
  for (const auto& t : status.tasks) {
    if (t.name == name) return t;
  }
  FAIL("no task " << name);
  throw;
}

}  // namespace

TEST_SUITE("actors.status") {
  TEST_CASE("every state code is named as the machine state it stands for") {
    for (uint8_t s = 0; s < WorkflowMachineTraits::states; ++s) {
      const auto state = static_cast<WorkflowState>(s);
      CAPTURE(WorkflowMachineTraits::name(state));
      CHECK(name_of(state_code(state)) == WorkflowMachineTraits::name(state));
      CHECK(workflow_state_code(WorkflowMachineTraits::name(state)) == state_code(state));
    }
    for (uint8_t s = 0; s < TaskMachineTraits::states; ++s) {
      const auto state = static_cast<TaskState>(s);
      CAPTURE(TaskMachineTraits::name(state));
      CHECK(name_of(state_code(state)) == TaskMachineTraits::name(state));
      CHECK(task_state_code(TaskMachineTraits::name(state)) == state_code(state));
    }
    CHECK(workflow_state_code("OPEN") == WorkflowStateCode::UNKNOWN);
    CHECK(task_state_code("UPSTREAM_FAILED") == TaskStateCode::UPSTREAM_FAILED);
  }

  TEST_CASE("tasks behind a failure are UPSTREAM_FAILED while the workflow runs on, and its whole message shows") {
    test::ActorFixture fx;
    add_handlers(fx);
    Scheduler scheduler(fx);
    // b fails: c and e behind it will not run; d runs on (and hangs), f waits for d.
    scheduler.submit("wf", R"({"name": "w", "tasks": [
      {"name": "a", "handler": "noop"},
      {"name": "b", "handler": "fail", "dependsOn": ["a"]},
      {"name": "c", "handler": "noop", "dependsOn": ["b"]},
      {"name": "e", "handler": "noop", "dependsOn": ["c"]},
      {"name": "d", "handler": "hang", "dependsOn": ["a"]},
      {"name": "f", "handler": "noop", "dependsOn": ["d"]}]})");
    fx.run();
    auto status = scheduler.status("wf");
    CHECK(status.state == "RUNNING");
    CHECK(status.state_code == WorkflowStateCode::RUNNING);
    const auto& b = task_of(status, "b");
    CHECK(b.state_code == TaskStateCode::FAILURE);
    CHECK(b.failure == "Oops");
    CHECK(b.failure_details == "it broke (not retried: the task has no retry policy)");
    CHECK(b.failure_message() == "Oops: it broke (not retried: the task has no retry policy)");
    for (const char* name : {"c", "e"}) {
      CAPTURE(name);
      CHECK(task_of(status, name).state == "UPSTREAM_FAILED");
      CHECK(task_of(status, name).state_code == TaskStateCode::UPSTREAM_FAILED);
    }
    CHECK(task_of(status, "d").state_code == TaskStateCode::RUNNING);
    CHECK(task_of(status, "f").state == "WAITING");
    CHECK(task_of(status, "f").state_code == TaskStateCode::WAITING);
    CHECK(task_of(status, "a").result_json == R"({"ok":true})");
    CHECK(task_of(status, "b").result_json.empty());
  }

  TEST_CASE("a failed workflow: what never ran is UPSTREAM_FAILED; its detail names the task, reason and details") {
    test::ActorFixture fx;
    add_handlers(fx);
    Scheduler scheduler(fx);
    scheduler.submit("wf", R"({"name": "w", "tasks": [
      {"name": "a", "handler": "fail"},
      {"name": "b", "handler": "noop", "dependsOn": ["a"]},
      {"name": "c", "handler": "noop"}]})");
    auto outcome = scheduler.result("wf");
    REQUIRE(outcome);
    const std::string detail = "task 'a' failed: Oops: it broke (not retried: the task has no retry policy)";
    CHECK(outcome->state == "FAILED");
    CHECK(outcome->failure_reason == detail);
    auto status = scheduler.status("wf");
    CHECK(status.state_code == WorkflowStateCode::FAILED);
    CHECK(status.detail == detail);
    CHECK(task_of(status, "b").state_code == TaskStateCode::UPSTREAM_FAILED);
    CHECK(task_of(status, "c").state_code == TaskStateCode::SUCCESS);
    // c is final and succeeded: the one output of the failed workflow.
    CHECK(outcome->outputs == std::vector<TaskOutput>{{"c", R"({"ok":true})"}});
  }

  TEST_CASE("a killed task's dependents are UPSTREAM_FAILED") {
    test::ActorFixture fx;
    add_handlers(fx);
    Scheduler scheduler(fx);
    scheduler.submit("wf", R"({"name": "w", "tasks": [
      {"name": "a", "handler": "hang"},
      {"name": "b", "handler": "noop", "dependsOn": ["a"]}]})");
    fx.run();
    CHECK(task_of(scheduler.status("wf"), "b").state_code == TaskStateCode::WAITING);
    auto killed = fx.ask<std::string>(scheduler.directory, control_atom::value, std::string("wf"),
                                      static_cast<uint8_t>(WorkflowControl::KILL));
    REQUIRE(killed);
    fx.advance(1min);
    auto status = scheduler.status("wf");
    CHECK(status.state_code == WorkflowStateCode::STOPPED);
    CHECK(task_of(status, "a").state_code == TaskStateCode::KILLED);
    CHECK(task_of(status, "b").state_code == TaskStateCode::UPSTREAM_FAILED);
  }

  TEST_CASE("the outputs are the final tasks' results, in definition order, live and from the history alike") {
    test::ActorFixture fx;
    add_handlers(fx);
    Scheduler scheduler(fx);
    // a -> (x, y); y -> z. Final: x and z.
    scheduler.submit("wf", R"({"name": "w", "tasks": [
      {"name": "a", "handler": "echo", "input": {"from": "a"}},
      {"name": "x", "handler": "echo", "input": {"from": "x"}, "dependsOn": ["a"]},
      {"name": "y", "handler": "echo", "input": {"from": "y"}, "dependsOn": ["a"]},
      {"name": "z", "handler": "echo", "input": {"from": "z"}, "dependsOn": ["y"]}]})");
    auto live = scheduler.result("wf");  // answered by the workflow actor as it closes
    REQUIRE(live);
    CHECK(live->state == "SUCCESS");
    const std::vector<TaskOutput> expected = {{"x", R"({"from":"x"})"}, {"z", R"({"from":"z"})"}};
    CHECK(live->outputs == expected);
    fx.run();
    auto from_history = scheduler.result("wf");  // the workflow has closed: read from its history
    REQUIRE(from_history);
    CHECK(from_history->outputs == expected);
    auto replayed = replay(*fx.store, "wf");
    REQUIRE(replayed);
    CHECK(final_outputs(*replayed) == expected);
    CHECK(task_of(snapshot(*replayed), "y").result_json == R"({"from":"y"})");
  }

  TEST_CASE("a task's start is its first dispatch and its end its last event: retries count in between") {
    test::ActorFixture fx;
    add_handlers(fx);
    Scheduler scheduler(fx);
    scheduler.submit("wf", R"({"name": "w", "tasks": [
      {"name": "a", "handler": "flaky", "retry": {"initialInterval": "1s", "maximumAttempts": 3}},
      {"name": "b", "handler": "noop", "dependsOn": ["a"]}]})");
    fx.run();
    auto running = scheduler.status("wf");
    const auto& a = task_of(running, "a");
    CHECK(a.started_us == test::ActorFixture::epoch_us);
    CHECK(a.ended_us == 0);
    CHECK(a.attempt == 2);
    CHECK(a.duration_us(a.started_us + 500) == 500);  // up to now while it has not ended
    CHECK(task_of(running, "b").started_us == 0);
    fx.advance(1s);  // the second backoff (2 s) is not over yet
    fx.advance(2s);
    auto done = scheduler.status("wf");
    const auto& a_done = task_of(done, "a");
    CHECK(a_done.state_code == TaskStateCode::SUCCESS);
    CHECK(a_done.attempt == 3);
    CHECK(a_done.started_us == test::ActorFixture::epoch_us);
    CHECK(a_done.ended_us == test::ActorFixture::epoch_us + 3'000'000);
    CHECK(a_done.duration_us(0) == 3'000'000);
    // The last attempt's failure stays on record, but a succeeded task shows its result.
    CHECK(a_done.result_json == R"({"attempt":3})");
    CHECK(task_of(done, "b").ended_us == test::ActorFixture::epoch_us + 3'000'000);
    CHECK(done.state_code == WorkflowStateCode::SUCCESS);
  }

  TEST_CASE("the index keeps an open workflow's state, written with the event that changed it") {
    test::ActorFixture fx;
    add_handlers(fx);
    Scheduler scheduler(fx);
    scheduler.submit("wf", R"({"name": "w", "tasks": [
      {"name": "a", "handler": "later"},
      {"name": "b", "handler": "noop", "dependsOn": ["a"]}]})");
    CHECK(scheduler.live_state("wf") == "RUNNING");
    auto control = [&](WorkflowControl action) {
      auto state = fx.ask<std::string>(scheduler.directory, control_atom::value, std::string("wf"),
                                       static_cast<uint8_t>(action));
      REQUIRE_MESSAGE(state, (state ? "" : state.error().message));
      return *state;
    };
    CHECK(control(WorkflowControl::PAUSE) == "READY_PAUSE");  // a runs on
    CHECK(scheduler.live_state("wf") == "READY_PAUSE");
    fx.advance(10s);  // a ends, b is not started: paused
    CHECK(scheduler.status("wf").state == "PAUSED");
    CHECK(scheduler.live_state("wf") == "PAUSED");
    CHECK(control(WorkflowControl::RESUME) == "RUNNING");
    auto outcome = scheduler.result("wf");
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    auto record = fx.store->find_workflow("wf");
    REQUIRE(record);
    REQUIRE(*record);
    CHECK((*record)->status == storage::WorkflowStatus::CLOSED);
    CHECK((*record)->final_state == "SUCCESS");
    CHECK((*record)->live_state.empty());
  }
}
