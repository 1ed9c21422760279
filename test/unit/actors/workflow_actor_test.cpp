// Workflows run by real workflow and task actors on the deterministic test coordinator, with
// programmable handlers and the in-memory history store.
#include <doctest/doctest.h>

#include <algorithm>

#include <capnp/dynamic.h>

#include "actors/system/replay.hpp"
#include "actors/workflow/workflow_actor.hpp"
#include "test/support/actor_fixture.hpp"

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
    wf = spawn_workflow(fx.sys, WorkflowSetup{id, json, "{}", std::move(run_from), fx.wiring});
  }

  Result<std::string> start() { return fx.ask<std::string>(wf, start_atom::value); }
  Result<std::string> pause() { return fx.ask<std::string>(wf, pause_atom::value); }
  Result<std::string> resume() { return fx.ask<std::string>(wf, resume_atom::value); }
  Result<std::string> stop() { return fx.ask<std::string>(wf, stop_atom::value); }
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
    auto history = fx.store->read(id, 1, 100000);
    for (const auto& e : *history) {
      auto d = storage::DecodedEvent::decode(e.packed);
      auto body = d->get().getBody();
      KJ_IF_MAYBE(field, capnp::toDynamic(body).which()) {
        out.push_back(std::string(field->getProto().getName().cStr()) + ":" +
                      std::string(d->get().getActorId().cStr()));
      }
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
