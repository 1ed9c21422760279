#include <doctest/doctest.h>

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
}
