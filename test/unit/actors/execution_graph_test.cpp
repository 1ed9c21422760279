#include <doctest/doctest.h>

#include <algorithm>

#include "actors/workflow/execution_graph.hpp"

using namespace troupe;
using namespace troupe::actors;

namespace {

WorkflowSpec spec_of(const char* json) {
  auto spec = parse_definition(json);
  REQUIRE_MESSAGE(spec, (spec ? "" : spec.error().message));
  return *spec;
}

// a -> {b, c} -> d
const char* diamond = R"({"name": "diamond", "tasks": [
  {"name": "a", "handler": "h"},
  {"name": "b", "handler": "h", "dependsOn": ["a"]},
  {"name": "c", "handler": "h", "dependsOn": ["a"]},
  {"name": "d", "handler": "h", "dependsOn": ["b", "c"]}]})";

/// Starts every ready task, then finishes each with `outcome`.
void run_ready(ExecutionGraph& g, TaskOutcome outcome) {
  for (uint32_t t : g.ready()) REQUIRE(g.start(t));
  for (uint32_t t : g.active()) REQUIRE(g.finish(t, outcome));
}

}  // namespace

TEST_SUITE("actors.execution_graph") {
  TEST_CASE("a diamond runs root, both branches, then the join") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    CHECK(g.ready() == std::vector<uint32_t>{0});
    CHECK(g.verdict() == GraphVerdict::IN_PROGRESS);
    run_ready(g, TaskOutcome::SUCCEEDED);
    CHECK(g.ready() == std::vector<uint32_t>{1, 2});
    REQUIRE(g.start(1));
    REQUIRE(g.finish(1, TaskOutcome::SUCCEEDED));
    CHECK(g.ready() == std::vector<uint32_t>{2});  // d still waits for c
    REQUIRE(g.start(2));
    REQUIRE(g.finish(2, TaskOutcome::SUCCEEDED));
    CHECK(g.ready() == std::vector<uint32_t>{3});
    run_ready(g, TaskOutcome::SUCCEEDED);
    CHECK(g.verdict() == GraphVerdict::SUCCEEDED);
  }

  TEST_CASE("a failure stops its successors but not independent branches") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    run_ready(g, TaskOutcome::SUCCEEDED);
    REQUIRE(g.start(1));
    REQUIRE(g.start(2));
    REQUIRE(g.finish(1, TaskOutcome::FAILED));
    CHECK(g.state(3) == NodeState::BLOCKED);
    CHECK(g.verdict() == GraphVerdict::IN_PROGRESS);  // c is still running
    REQUIRE(g.finish(2, TaskOutcome::SUCCEEDED));
    CHECK(g.ready().empty());
    CHECK(g.verdict() == GraphVerdict::FAILED);
  }

  TEST_CASE("run-from runs a task and its descendants only") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, 1u);  // b, then d; a and c count as done
    CHECK(g.state(0) == NodeState::OUTSIDE);
    CHECK(g.state(2) == NodeState::OUTSIDE);
    CHECK(g.ready() == std::vector<uint32_t>{1});
    run_ready(g, TaskOutcome::SUCCEEDED);
    CHECK(g.ready() == std::vector<uint32_t>{3});
    run_ready(g, TaskOutcome::SUCCEEDED);
    CHECK(g.verdict() == GraphVerdict::SUCCEEDED);
  }

  TEST_CASE("a paused task holds its successors until it starts again") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    REQUIRE(g.start(0));
    REQUIRE(g.finish(0, TaskOutcome::PAUSED));
    CHECK(g.paused() == std::vector<uint32_t>{0});
    CHECK(g.verdict() == GraphVerdict::QUIESCENT);
    REQUIRE(g.start(0));  // resumed
    REQUIRE(g.finish(0, TaskOutcome::SUCCEEDED));
    CHECK(g.ready() == std::vector<uint32_t>{1, 2});
  }

  TEST_CASE("a paused task killed by its session's failure blocks its successors") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    run_ready(g, TaskOutcome::SUCCEEDED);  // a
    REQUIRE(g.start(1));
    REQUIRE(g.finish(1, TaskOutcome::PAUSED));
    CHECK(g.finish(1, TaskOutcome::KILLED));
    CHECK(g.state(1) == NodeState::KILLED);
    CHECK(g.state(3) == NodeState::BLOCKED);
  }

  TEST_CASE("a session's rerun restarts what succeeded and what it killed after it; their successors wait again") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    run_ready(g, TaskOutcome::SUCCEEDED);  // a
    REQUIRE(g.start(1));
    REQUIRE(g.start(2));
    REQUIRE(g.finish(2, TaskOutcome::SUCCEEDED));  // c succeeded; b is active when the worker is lost
    REQUIRE(g.finish(1, TaskOutcome::KILLED));     // killed for the rerun
    CHECK(g.state(3) == NodeState::BLOCKED);
    g.restart({0, 1, 2});
    CHECK(g.ready() == std::vector<uint32_t>{0});
    CHECK(g.state(1) == NodeState::WAITING);
    CHECK(g.state(2) == NodeState::WAITING);
    CHECK(g.state(3) == NodeState::WAITING);
    run_ready(g, TaskOutcome::SUCCEEDED);
    CHECK(g.ready() == std::vector<uint32_t>{1, 2});
  }

  TEST_CASE("finishing or starting a task in the wrong state is refused") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    CHECK_FALSE(g.finish(0, TaskOutcome::SUCCEEDED));  // never started
    CHECK_FALSE(g.start(3));                           // not ready
    REQUIRE(g.start(0));
    CHECK_FALSE(g.start(0));
    REQUIRE(g.finish(0, TaskOutcome::KILLED));
    CHECK(g.state(1) == NodeState::BLOCKED);
    CHECK(g.state(3) == NodeState::BLOCKED);
    CHECK(g.verdict() == GraphVerdict::FAILED);
  }

  TEST_CASE("a rerun from a task resets it and its descendants; the others keep their outcome") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    run_ready(g, TaskOutcome::SUCCEEDED);  // a
    REQUIRE(g.start(1));
    REQUIRE(g.start(2));
    REQUIRE(g.finish(1, TaskOutcome::FAILED));
    REQUIRE(g.finish(2, TaskOutcome::SUCCEEDED));
    REQUIRE(g.verdict() == GraphVerdict::FAILED);

    const auto from_b = g.rerun_set(1u);
    CHECK(from_b == std::vector<bool>{false, true, false, true});
    CHECK_FALSE(g.unmet_dependency(from_b));
    // From c, d would need b, which failed and is not rerun.
    const auto from_c = g.rerun_set(2u);
    auto unmet = g.unmet_dependency(from_c);
    REQUIRE(unmet);
    CHECK(*unmet == std::make_pair(3u, 1u));
    // Without a task: everything that did not succeed (b failed, d was blocked).
    CHECK(g.rerun_set(std::nullopt) == from_b);

    g.rerun(from_b);
    CHECK(g.state(0) == NodeState::SUCCEEDED);
    CHECK(g.state(2) == NodeState::SUCCEEDED);
    CHECK(g.ready() == std::vector<uint32_t>{1});
    CHECK(g.state(3) == NodeState::WAITING);
    run_ready(g, TaskOutcome::SUCCEEDED);
    CHECK(g.ready() == std::vector<uint32_t>{3});
    run_ready(g, TaskOutcome::SUCCEEDED);
    CHECK(g.verdict() == GraphVerdict::SUCCEEDED);
    // A succeeded workflow has nothing left that did not succeed.
    const auto nothing = g.rerun_set(std::nullopt);
    CHECK(std::find(nothing.begin(), nothing.end(), true) == nothing.end());
  }

  TEST_CASE("a rerun leaves out tasks that never finished, and a failure it does not repeat still counts") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    run_ready(g, TaskOutcome::SUCCEEDED);  // a
    REQUIRE(g.start(1));
    REQUIRE(g.start(2));
    REQUIRE(g.finish(1, TaskOutcome::PAUSED));  // the run was stopped with b paused...
    REQUIRE(g.finish(2, TaskOutcome::FAILED));  // ...and c failed
    g.rerun(g.rerun_set(0u));                   // rerun everything from a
    CHECK(g.ready() == std::vector<uint32_t>{0});
    CHECK(g.state(1) == NodeState::WAITING);

    ExecutionGraph h(spec, std::nullopt);
    run_ready(h, TaskOutcome::SUCCEEDED);
    REQUIRE(h.start(1));
    REQUIRE(h.start(2));
    REQUIRE(h.finish(1, TaskOutcome::PAUSED));
    REQUIRE(h.finish(2, TaskOutcome::FAILED));
    // A rerun of a alone: b was left paused and is not part of it, so it will not run...
    std::vector<bool> only_a = {true, false, false, false};
    CHECK_FALSE(h.unmet_dependency(only_a));
    h.rerun(only_a);
    CHECK(h.state(1) == NodeState::BLOCKED);
    run_ready(h, TaskOutcome::SUCCEEDED);
    // ...and the workflow cannot succeed with b not run and c failed.
    CHECK(h.ready().empty());
    CHECK(h.verdict() == GraphVerdict::FAILED);
  }

  TEST_CASE("a rerun can reach tasks an earlier run-from left outside") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, 1u);  // b and d ran; a and c were outside
    run_ready(g, TaskOutcome::SUCCEEDED);
    run_ready(g, TaskOutcome::SUCCEEDED);
    REQUIRE(g.verdict() == GraphVerdict::SUCCEEDED);
    g.rerun(g.rerun_set(0u));
    CHECK(g.ready() == std::vector<uint32_t>{0});
    run_ready(g, TaskOutcome::SUCCEEDED);
    CHECK(g.ready() == std::vector<uint32_t>{1, 2});
  }

  TEST_CASE("a retried task waits again, and what it alone blocked waits for it") {
    // a -> {b, c} -> d, and e after c alone.
    auto spec = spec_of(R"({"name": "g", "tasks": [
      {"name": "a", "handler": "h"},
      {"name": "b", "handler": "h", "dependsOn": ["a"]},
      {"name": "c", "handler": "h", "dependsOn": ["a"]},
      {"name": "d", "handler": "h", "dependsOn": ["b", "c"]},
      {"name": "e", "handler": "h", "dependsOn": ["c"]}]})");
    ExecutionGraph g(spec, std::nullopt);
    run_ready(g, TaskOutcome::SUCCEEDED);
    REQUIRE(g.start(1));
    REQUIRE(g.start(2));
    REQUIRE(g.finish(1, TaskOutcome::FAILED));
    REQUIRE(g.finish(2, TaskOutcome::FAILED));
    CHECK(g.state(3) == NodeState::BLOCKED);
    CHECK(g.state(4) == NodeState::BLOCKED);
    CHECK(g.verdict() == GraphVerdict::FAILED);
    CHECK_FALSE(g.retry(0));  // succeeded
    CHECK_FALSE(g.force(3));  // blocked, not failed

    REQUIRE(g.retry(2));
    CHECK(g.state(2) == NodeState::READY);
    CHECK(g.state(4) == NodeState::WAITING);  // c alone blocked it
    CHECK(g.state(3) == NodeState::BLOCKED);  // b still fails it
    CHECK(g.verdict() == GraphVerdict::IN_PROGRESS);
    REQUIRE(g.start(2));
    REQUIRE(g.finish(2, TaskOutcome::SUCCEEDED));
    CHECK(g.ready() == std::vector<uint32_t>{4});

    REQUIRE(g.force(1));  // b counts as succeeded: d may run
    CHECK(g.state(1) == NodeState::SUCCEEDED);
    CHECK(g.ready() == std::vector<uint32_t>{3, 4});
  }

  TEST_CASE("a retry that fails again blocks its descendants again; a paused task forced to success finishes") {
    auto spec = spec_of(diamond);
    ExecutionGraph g(spec, std::nullopt);
    run_ready(g, TaskOutcome::SUCCEEDED);
    REQUIRE(g.start(1));
    REQUIRE(g.start(2));
    REQUIRE(g.finish(1, TaskOutcome::KILLED));
    REQUIRE(g.retry(1));
    CHECK(g.state(3) == NodeState::WAITING);
    REQUIRE(g.start(1));
    REQUIRE(g.finish(1, TaskOutcome::FAILED));
    CHECK(g.state(3) == NodeState::BLOCKED);

    REQUIRE(g.finish(2, TaskOutcome::PAUSED));
    CHECK_FALSE(g.finish(2, TaskOutcome::FAILED));  // only a forced success or a kill ends a paused task
    REQUIRE(g.finish(2, TaskOutcome::SUCCEEDED));
    CHECK(g.state(2) == NodeState::SUCCEEDED);
  }
}
