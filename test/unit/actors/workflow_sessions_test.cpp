// A workflow's sessions meeting its own operator actions: a session that fails while the
// workflow is paused, or is cancelled by a stop of a paused workflow (the executor has no slot,
// so the session's task waits and pauses without running); a session recreated with rerunAll.
#include <doctest/doctest.h>

#include "actors/system/replay.hpp"
#include "actors/workflow/workflow_actor.hpp"
#include "storage/codec.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/fake_session_host.hpp"
#include "test/support/history.hpp"

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

  TEST_CASE("a session recreated with rerunAll runs its succeeded task again, once the task after it ended; once only") {
    test::ActorFixture fx;
    fx.handlers->add("hang", [](std::shared_ptr<TaskContext>) {});  // runs until cancelled
    fx.wiring.kill_grace = 1s;
    auto host = fx.own(fx.sys.spawn(test::fake_session_host_behavior, test::FakeSessionHostOptions{}));
    fx.wiring.sessions = caf::actor_cast<session_host>(host);
    const std::string json = R"({"name": "w", "tasks": [{"name": "one", "handler": "noop"},
        {"name": "two", "handler": "hang", "dependsOn": ["one"]}],
        "sessions": [{"name": "s", "tasks": ["one", "two"], "onFailure": "recreate", "rerunAll": true}]})";
    auto wf = fx.own(spawn_workflow(fx.sys, WorkflowSetup{"w", json, "{}", "", fx.shared_wiring(), nullptr}));
    REQUIRE(fx.ask<std::string>(wf, start_atom::value));
    fx.advance(100ms);  // one succeeded; two runs (the stand-in host's tasks run wherever)
    fx.self->send(host, lost_atom::value);  // the session's worker dies: recreated
    fx.run();
    fx.advance(1ms);  // its window, none without a resource id
    // While two is being ended, one may not be retried or skipped: it runs again anyway.
    TaskCommand retry;
    retry.task = "one";
    retry.kind = TaskCommandKind::RETRY;
    auto refused = fx.ask<TaskCommandOutcome>(wf, operate_atom::value, retry);
    REQUIRE_FALSE(refused);
    CHECK_MESSAGE(refused.error().message.find("recreated with rerunAll") != std::string::npos, refused.error().message);
    fx.advance(2s);  // two's kill grace
    // A second word of the same recreation (as after a restart) changes nothing.
    fx.self->send(caf::actor_cast<session_owner_port>(wf), session_atom::value, uint32_t{0}, rerun_atom::value, uint32_t{2});
    fx.advance(1s);
    std::vector<std::string> ones, reruns;
    for (const auto& event : test::decoded_history(*fx.store, "w")) {
      const std::string kind = test::body_kind(event);
      if (kind == "workflowSessionRerun") reruns.push_back(kind);
      if (std::string(event.get().getActorId().cStr()) == "one" && (kind == "taskScheduled" || kind == "taskSucceeded")) {
        ones.push_back(kind);
      }
    }
    CHECK(reruns.size() == 1);
    CHECK(ones == std::vector<std::string>{"taskScheduled", "taskSucceeded", "taskScheduled", "taskSucceeded"});
    auto replayed = actors::replay(*fx.store, "w");
    REQUIRE(replayed);
    CHECK(replayed->tasks.at("one").dispatches == 2);       // invocation ids count on
    CHECK(replayed->tasks.at("two").state == TaskState::RUNNING);  // again, continuing its attempts
    CHECK(replayed->tasks.at("two").attempt == 2);
    CHECK(replayed->tasks.at("two").attempt_base == 1);
  }
}
