// A workflow's sessions meeting its own operator actions: a session that fails while the
// workflow is paused, or is cancelled by a stop of a paused workflow. The executor has no slot,
// so the session's task waits (and pauses) without running.
#include <doctest/doctest.h>

#include "actors/system/replay.hpp"
#include "actors/workflow/workflow_actor.hpp"
#include "storage/codec.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/fake_session_host.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

struct PausedSession {
  test::ActorFixture fx{LocalExecutorOptions{"local", 0, {}}};
  test::fake_session_host host;
  workflow_actor wf;
  const std::string id = "w";

  /// A workflow of one task in session s, whose worker is never found (creationTimeout 5s).
  PausedSession() {
    host = fx.own(fx.sys.spawn(test::fake_session_host_behavior, test::FakeSessionHostOptions{1, 1, 0, 0, 0}));
    fx.wiring.sessions = caf::actor_cast<session_host>(host);
    const std::string json =
        R"({"name": "w", "tasks": [{"name": "t0", "handler": "noop"}],
            "sessions": [{"name": "s", "tasks": ["t0"], "creationTimeout": "5s"}]})";
    wf = fx.own(spawn_workflow(fx.sys, WorkflowSetup{id, json, "{}", "", fx.shared_wiring(), nullptr}));
    REQUIRE(fx.ask<std::string>(wf, start_atom::value));
    fx.run();
    REQUIRE(*fx.ask<std::string>(wf, pause_atom::value) == "READY_PAUSE");
    fx.run();
  }

  ReplayedWorkflow replayed() {
    auto r = actors::replay(*fx.store, id);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
    return std::move(*r);
  }
};

}  // namespace

TEST_SUITE("actors.workflow_sessions") {
  TEST_CASE("a session that fails while its workflow is paused ends its paused task, and the workflow fails") {
    PausedSession p;
    REQUIRE(p.replayed().workflow.state == WorkflowState::PAUSED);
    p.fx.advance(6s);  // the creation timeout: the session fails, its paused task will never run
    REQUIRE(p.fx.ended_workflows.count(p.id) == 1);  // nothing else could run
    auto after = p.replayed();
    CHECK(after.sessions.at("s").state == SessionState::FAILED);
    CHECK(after.tasks.at("t0").never_attempted());
    CHECK(after.workflow.state == WorkflowState::FAILED);
    CHECK(after.workflow.canonical() == p.fx.ended_workflows.at(p.id));
  }

  TEST_CASE("a stop of a paused workflow leaves its session's paused task paused: nothing is recorded after the end") {
    PausedSession p;
    REQUIRE(p.fx.ask<std::string>(p.wf, stop_atom::value));
    p.fx.advance(1s);
    REQUIRE(p.fx.ended_workflows.count(p.id) == 1);
    auto after = p.replayed();
    CHECK(after.workflow.state == WorkflowState::STOPPED);
    CHECK(after.sessions.at("s").state == SessionState::CLOSED);
    CHECK(after.tasks.at("t0").state == TaskState::PAUSED);
    auto events = p.fx.store->read(p.id, 1, 1000000);
    REQUIRE(events);
    auto last = storage::DecodedEvent::decode(events->back().packed);
    REQUIRE(last);
    CHECK(last->get().getBody().isWorkflowFinalized());
  }
}
