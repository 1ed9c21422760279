#include <doctest/doctest.h>

#include "actors/invocation_id.hpp"
#include "actors/task/task_model.hpp"
#include "actors/workflow/workflow_model.hpp"

using namespace troupe;
using namespace troupe::actors;
using Body = schema::EventBody::Builder;

namespace {

template <class Model, class Fill>
Result<void> apply(Model& model, int64_t now, Fill&& fill, const std::string& actor = "t",
                   uint32_t attempt = 1) {
  auto event = make_event(storage::ActorKind::TASK, actor, attempt, now, std::forward<Fill>(fill));
  NewEventReader reader(event);
  return model.apply(reader.view());
}

const char* chain = R"({"name": "chain", "tasks": [
  {"name": "a", "handler": "noop"}, {"name": "b", "handler": "noop", "dependsOn": ["a"]}]})";

}  // namespace

TEST_SUITE("actors.models") {
  TEST_CASE("an invocation id names its workflow and task, read from its end") {
    const std::string id = troupe::actors::make_invocation_id("team/nightly", "load", 2, 5);
    CHECK(id == "team/nightly/load/2.5");
    auto parts = troupe::actors::parse_invocation_id(id);
    REQUIRE(parts);
    CHECK(parts->workflow_id == "team/nightly");
    CHECK(parts->task_name == "load");
    CHECK_FALSE(troupe::actors::parse_invocation_id("load/2.5"));
    CHECK_FALSE(troupe::actors::parse_invocation_id("nothing"));
  }

  TEST_CASE("a task retried after a failure carries its progress and counts its time") {
    TaskModel task;
    task.name = "t";
    REQUIRE(apply(task, 0, [](Body b) { b.initTaskScheduled().setInput(as_bytes("{}")); }));
    REQUIRE(apply(task, 100, [](Body b) { b.initTaskDispatching().setTaskList("default"); }));
    CHECK(task.state == TaskState::DISPATCHING);
    CHECK(task.attempt == 1);
    REQUIRE(apply(task, 150, [](Body b) {
      auto d = b.initTaskDispatched();
      d.setInvocationId("inv-1");
      d.setWorkerShard("local");
    }));
    REQUIRE(apply(task, 200, [](Body b) {
      b.initTaskHeartbeat().setProgress(as_bytes("half"));
    }));
    CHECK(task.state == TaskState::RUNNING);
    REQUIRE(apply(task, 300, [](Body b) {
      auto r = b.initTaskRetryScheduled();
      r.setNextAttempt(2);
      r.setBackoffUs(1000);
      r.initCause().setReason("ExitCode:1");
    }));
    CHECK(task.state == TaskState::DELAY_EXECUTION);
    CHECK(task.attempt == 2);
    CHECK(task.delay_until_us == 1300);
    CHECK(task.progress == "half");
    CHECK(task.invocation_id.empty());
    CHECK(task.elapsed(500) == Duration(400));

    auto refused = apply(task, 400, [](Body b) { b.initTaskSucceeded(); });
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message == "task 't': SUCCEEDED is not allowed in state DELAY_EXECUTION");
  }

  TEST_CASE("a task scheduled again by a rerun starts fresh once its last instance ended") {
    TaskModel task;
    task.name = "t";
    REQUIRE(apply(task, 0, [](Body b) { b.initTaskScheduled().setInput(as_bytes("{}")); }));
    REQUIRE(apply(task, 100, [](Body b) { b.initTaskDispatching().setTaskList("default"); }));
    REQUIRE(apply(task, 150, [](Body b) { b.initTaskDispatched().setInvocationId("inv-1"); }));
    auto running = apply(task, 200, [](Body b) { b.initTaskScheduled(); });
    REQUIRE_FALSE(running);
    CHECK(running.error().message == "task 't' was scheduled again while DISPATCHED");
    REQUIRE(apply(task, 300, [](Body b) { b.initTaskHeartbeat().setProgress(as_bytes("half")); }));
    REQUIRE(apply(task, 400, [](Body b) { b.initTaskFailed().initFailure().setReason("ExitCode:1"); }));
    REQUIRE(task.state == TaskState::FAILURE);

    REQUIRE(apply(task, 500, [](Body b) { b.initTaskScheduled().setInput(as_bytes("{\"again\": 1}")); }));
    CHECK(task.state == TaskState::SUBMITTED);
    CHECK(task.attempt == 0);
    CHECK(task.failure_reason.empty());
    CHECK(task.progress.empty());
    CHECK(task.input_json == "{\"again\": 1}");
    CHECK(task.dispatches == 1);  // invocation ids count on
    CHECK(task.applied == 1);
    CHECK(task.banked_us == 0);
  }

  TEST_CASE("a workflow's graph follows the tasks it schedules and hears about") {
    WorkflowModel wf;
    wf.id = "wf-1";
    REQUIRE(apply(wf, 0, [](Body b) { b.initWorkflowSubmitted().setDefinitionJson(chain); }, "wf-1"));
    REQUIRE(apply(wf, 1, [](Body b) { b.setWorkflowStarted(); }, "wf-1"));
    REQUIRE(apply(wf, 1, [](Body b) { b.initTaskScheduled(); }, "a"));
    CHECK(wf.graph->state(0) == NodeState::ACTIVE);
    CHECK_FALSE(apply(wf, 1, [](Body b) { b.initTaskScheduled(); }, "b"));  // not ready
    REQUIRE(apply(wf, 2, [](Body b) {
      auto f = b.initWorkflowTaskFinished();
      f.setTaskName("a");
      f.setOutcome(schema::TaskOutcome::SUCCEEDED);
    }, "wf-1"));
    CHECK(wf.graph->ready() == std::vector<uint32_t>{1});
    CHECK(wf.state == WorkflowState::RUNNING);
    const auto before = wf.canonical();
    WorkflowModel copy = wf;
    CHECK(copy.canonical() == before);
  }

  TEST_CASE("a submission with an unknown run-from task is refused") {
    WorkflowModel wf;
    wf.id = "wf";
    auto refused = apply(wf, 0, [](Body b) {
      auto s = b.initWorkflowSubmitted();
      s.setDefinitionJson(chain);
      s.setRunFrom("zz");
    }, "wf");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("run-from names task 'zz'") == 0);
  }
}
