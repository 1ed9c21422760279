// An operator's task command racing the task's own end, and a client's result racing a command
// on a finished workflow: the command lands on the task's ended model (recorded once, replayed
// the same), and the result is answered.
#include <doctest/doctest.h>

#include <algorithm>

#include "actors/system/directory.hpp"
#include "actors/system/replay.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/history.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

/// "actor:body" for each event of the history.
std::vector<std::string> kinds(test::ActorFixture& fx, const std::string& id) {
  std::vector<std::string> out;
  for (const auto& e : test::decoded_history(*fx.store, id)) {
    out.push_back(std::string(e.get().getActorId().cStr()) + ":" + test::body_kind(e));
  }
  return out;
}

size_t count(const std::vector<std::string>& kinds, const std::string& kind) {
  return static_cast<size_t>(std::count(kinds.begin(), kinds.end(), kind));
}

std::string joined(const std::vector<std::string>& kinds) {
  std::string all;
  for (const auto& k : kinds) all += k + " ";
  return all;
}

/// x holds its attempt until the test ends it; y sleeps, so the workflow stays open when x fails.
const char* held = R"({"name": "d", "tasks": [
  {"name": "x", "handler": "hold"},
  {"name": "y", "handler": "sleep", "input": {"duration": "50s"}}]})";

struct Race {
  test::ActorFixture& fx;
  directory_actor dir;
  std::shared_ptr<std::shared_ptr<TaskContext>> saved = std::make_shared<std::shared_ptr<TaskContext>>();

  explicit Race(test::ActorFixture& fixture) : fx(fixture) {
    fx.handlers->add("hold", [saved = saved](std::shared_ptr<TaskContext> ctx) { *saved = ctx; });
    dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    auto started = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"), std::string(held),
                                       std::string("{}"), std::string());
    REQUIRE_MESSAGE(started, (started ? "" : started.error().message));
    fx.run();
    REQUIRE(*saved);
  }

  /// Sends `command` to the workflow, then fails x's attempt before the workflow has passed the
  /// command on: x decides FAILURE and tells its workflow while the command is on its way to
  /// x, and its end is still being written when the command reaches it. The command's answer.
  Result<TaskCommandOutcome> command_as_x_fails(TaskCommand command) {
    fx.store->hold();
    fx.self->send(dir, operate_atom::value, std::string("wf"), std::move(command));
    fx.sched.run_once();  // directory -> workflow
    (*saved)->fail("Boom", "bad", true);
    fx.sched.run_once_lifo();  // executor -> task
    fx.sched.run_once_lifo();  // the task decides FAILURE and tells the workflow
    fx.run();
    fx.store->release();
    fx.run();
    Result<TaskCommandOutcome> answer = fail(Errc::INTERNAL, "no answer");
    fx.self->receive([&](TaskCommandOutcome& o) { answer = o; },
                     [&](caf::error& e) { answer = from_caf(e); }, caf::after(0s) >> [] {});
    return answer;
  }

  uint64_t live_workflows() {
    uint64_t live = 0;
    fx.self->send(dir, describe_atom::value);
    fx.run();
    fx.self->receive([&](uint64_t l, uint64_t) { live = l; }, caf::after(0s) >> [] {});
    return live;
  }
};

}  // namespace

TEST_SUITE("actors.task_command_races") {
  TEST_CASE("a skip that reaches a task as it fails is recorded on its ended model, once, and replays") {
    test::ActorFixture fx;
    Race race(fx);
    auto answer = race.command_as_x_fails(TaskCommand{TaskCommandKind::SKIP, "x", "by hand", {}});
    REQUIRE_MESSAGE(answer, (answer ? "" : answer.error().message));
    CHECK(answer->task_state == "FORCED_SUCCESS");
    const auto history = kinds(fx, "wf");
    INFO(joined(history));
    CHECK(count(history, "x:taskFailed") == 1);
    CHECK(count(history, "x:taskForcedSuccess") == 1);
    CHECK(count(history, "wf:workflowTaskSkipped") == 1);
    // The failure came first: the skip follows the workflow's record of it.
    auto failed = std::find(history.begin(), history.end(), "wf:workflowTaskFinished");
    auto forced = std::find(history.begin(), history.end(), "x:taskForcedSuccess");
    CHECK(failed < forced);
    // The workflow carries on (y still sleeps), and its history replays to what it holds.
    CHECK(race.live_workflows() == 1);
    auto replayed = replay(*fx.store, "wf");
    REQUIRE_MESSAGE(replayed, (replayed ? "" : replayed.error().message));
    CHECK(replayed->tasks.at("x").state == TaskState::FORCED_SUCCESS);
    CHECK(replayed->workflow.state == WorkflowState::RUNNING);
    fx.advance(50s);  // y ends: the workflow succeeds with x skipped
    auto outcome = fx.ask<WorkflowOutcome>(race.dir, result_atom::value, std::string("wf"));
    REQUIRE_MESSAGE(outcome, (outcome ? "" : outcome.error().message));
    CHECK(outcome->state == "SUCCESS");
  }

  TEST_CASE("an update that reaches a task as it fails is kept for its retry") {
    test::ActorFixture fx;
    Race race(fx);
    TaskOptionsPatch tight;
    tight.schedule_to_start = "1m";
    tight.start_to_close = "2s";
    auto answer = race.command_as_x_fails(TaskCommand{TaskCommandKind::UPDATE, "x", {}, tight});
    REQUIRE_MESSAGE(answer, (answer ? "" : answer.error().message));
    CHECK(answer->task_state == "FAILURE");
    CHECK(count(kinds(fx, "wf"), "x:taskOptionsUpdated") == 1);
    CHECK(race.live_workflows() == 1);

    // The retry runs with the updated startToClose: the held attempt times out after 2 s.
    auto retried = fx.ask<TaskCommandOutcome>(race.dir, operate_atom::value, std::string("wf"),
                                              TaskCommand{TaskCommandKind::RETRY, "x", {}, {}});
    REQUIRE_MESSAGE(retried, (retried ? "" : retried.error().message));
    fx.advance(3s);
    auto replayed = replay(*fx.store, "wf");
    REQUIRE_MESSAGE(replayed, (replayed ? "" : replayed.error().message));
    INFO(joined(kinds(fx, "wf")));
    CHECK(replayed->tasks.at("x").attempt == 2);
    CHECK(replayed->tasks.at("x").failure_reason == "Timeout:startToClose");
  }

  TEST_CASE("the result of a finished workflow adopted for a command is answered") {
    test::ActorFixture fx;
    fx.handlers->add("bad", [](std::shared_ptr<TaskContext> ctx) { ctx->fail("Boom", "bad", true); });
    auto dir = fx.own(spawn_directory(fx.sys, fx.store, fx.wiring));
    auto started = fx.ask<std::string>(dir, submit_atom::value, std::string("wf"),
                                       std::string(R"({"name": "d", "tasks": [{"name": "x", "handler": "bad"}]})"),
                                       std::string("{}"), std::string());
    REQUIRE(started);
    fx.run();
    TaskOptionsPatch patch;
    patch.set_priority = true;
    patch.priority = 5;
    fx.self->send(dir, operate_atom::value, std::string("wf"), TaskCommand{TaskCommandKind::UPDATE, "x", {}, patch});
    fx.sched.run_once();  // the directory adopts the finished workflow for the update
    fx.self->send(dir, result_atom::value, std::string("wf"));
    fx.run();
    int commands = 0;
    std::optional<WorkflowOutcome> outcome;
    for (int i = 0; i < 2; ++i) {
      fx.self->receive([&](TaskCommandOutcome&) { ++commands; }, [&](WorkflowOutcome& o) { outcome = o; },
                       [&](caf::error& e) { FAIL("an error: " << from_caf(e).message); }, caf::after(0s) >> [] {});
    }
    CHECK(commands == 1);
    REQUIRE(outcome);
    CHECK(outcome->state == "FAILED");
  }
}
