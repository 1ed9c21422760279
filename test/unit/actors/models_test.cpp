#include <doctest/doctest.h>

#include "actors/invocation_id.hpp"
#include "actors/task/task_model.hpp"
#include "actors/task/task_options.hpp"
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
  TEST_CASE("a task its session ends is NEVER_ATTEMPTED only if no attempt of it ran, as far as its worker said") {
    for (const bool worker_never_started : {true, false}) {
      CAPTURE(worker_never_started);
      TaskModel task;
      task.name = "t";
      REQUIRE(apply(task, 0, [](Body b) { b.initTaskScheduled().setInput(as_bytes("{}")); }));
      REQUIRE(apply(task, 10, [&](Body b) {
        auto d = b.initTaskDispatched();
        d.setInvocationId("t/1.1");
        d.setWorkerShard("w1");
      }));
      REQUIRE(apply(task, 20, [](Body b) {
        auto k = b.initTaskKillRequested();
        k.setText("session 's' ended before it ran");
        k.setNeverAttempted(true);
      }));
      // Queued in its session on the worker, or started there with the start not yet heard of.
      REQUIRE(apply(task, 30, [&](Body b) {
        auto k = b.initTaskKilled();
        k.setInvocationId("t/1.1");
        k.setNeverStarted(worker_never_started);
      }));
      CHECK(task.state == TaskState::KILLED);
      CHECK(task.never_attempted() == worker_never_started);
      CHECK(task.ran_attempt == (worker_never_started ? 0u : 1u));
    }
    // Killed by a stop before it was dispatched: it never ran.
    TaskModel waiting;
    waiting.name = "t";
    REQUIRE(apply(waiting, 0, [](Body b) { b.initTaskScheduled().setInput(as_bytes("{}")); }));
    REQUIRE(apply(waiting, 10, [](Body b) { b.initTaskDispatching().setTaskList("default"); }));
    REQUIRE(apply(waiting, 20, [](Body b) {
      auto k = b.initTaskKillRequested();
      k.setText("workflow stop");
      k.setNeverAttempted(true);
    }));
    CHECK(waiting.state == TaskState::KILLED);
    CHECK(waiting.never_attempted());
  }

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

  TEST_CASE("a task remembers the worker its last attempt failed on; an interrupted or never-started invocation changes nothing") {
    TaskModel task;
    task.name = "t";
    auto dispatched = [&](int64_t at, const char* id, const char* shard) {
      REQUIRE(apply(task, at, [&](Body b) {
        auto d = b.initTaskDispatched();
        d.setInvocationId(id);
        d.setWorkerShard(shard);
      }));
    };
    auto retried = [&](int64_t at, uint32_t next) {
      REQUIRE(apply(task, at, [&](Body b) {
        auto r = b.initTaskRetryScheduled();
        r.setNextAttempt(next);
        r.initCause().setReason("x");
      }));
    };
    auto failover = [&](int64_t at, const char* id, const char* shard, Loss loss) {
      REQUIRE(apply(task, at, [&](Body b) {
        auto f = b.initTaskFailover();
        f.setInvocationId(id);
        f.setWorkerShard(shard);
        f.setKind(static_cast<schema::FailoverKind>(loss));
      }));
    };
    REQUIRE(apply(task, 0, [](Body b) { b.initTaskScheduled().setInput(as_bytes("{}")); }));
    dispatched(10, "t/1.1", "w1");
    CHECK(task.failed_on.empty());
    retried(20, 2);  // attempt 1 failed on w1
    CHECK(task.failed_on == "w1");

    dispatched(30, "t/2.2", "w2");
    failover(40, "t/2.2", "w2", Loss::INTERRUPTED);  // w2 shut down: attempt 2 goes on
    retried(50, 2);
    CHECK(task.failed_on == "w1");
    dispatched(60, "t/2.3", "w2");
    failover(70, "t/2.3", "w2", Loss::NEVER_STARTED);
    retried(80, 2);
    CHECK(task.failed_on == "w1");

    dispatched(90, "t/2.4", "w2");
    failover(100, "t/2.4", "w2", Loss::WHILE_RUNNING);  // lost with w2 while it ran: failed there
    CHECK(task.failed_on == "w2");
    retried(110, 3);
    CHECK(task.failed_on == "w2");

    // An attempt that never got a worker (its scheduleToStart ran out) failed on none.
    REQUIRE(apply(task, 120, [](Body b) { b.initTaskDispatching().setTaskList("default"); }));
    retried(130, 4);
    CHECK(task.failed_on.empty());

    dispatched(140, "t/4.5", "w3");
    REQUIRE(apply(task, 150, [](Body b) { b.initTaskFailed().initFailure().setReason("ExitCode:1"); }));
    CHECK(task.failed_on == "w3");
    // An operator's retry avoids it too.
    REQUIRE(apply(task, 160, [](Body b) { b.initTaskScheduled().setContinuesAttempts(true); }));
    CHECK(task.failed_on == "w3");
    CHECK(task.canonical().find("failed_on=2:w3;") != std::string::npos);
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

  TEST_CASE("an operator's retry continues the failed instance's attempts and progress in a fresh round") {
    TaskModel task;
    task.name = "t";
    REQUIRE(apply(task, 0, [](Body b) { b.initTaskScheduled().setInput(as_bytes("{}")); }));
    auto not_failed = apply(task, 10, [](Body b) { b.initTaskScheduled().setContinuesAttempts(true); });
    REQUIRE_FALSE(not_failed);
    CHECK(not_failed.error().message == "task 't' was retried while SUBMITTED");
    REQUIRE(apply(task, 100, [](Body b) {
      auto d = b.initTaskDispatched();
      d.setInvocationId("wf/t/1.1");
      d.setWorkerShard("w1");
    }));
    REQUIRE(apply(task, 150, [](Body b) { b.initTaskHeartbeat().setProgress(as_bytes("7/10")); }));
    REQUIRE(apply(task, 200, [](Body b) { b.initTaskTimedOut().setInvocationId("wf/t/1.1"); }));
    REQUIRE(task.state == TaskState::FAILURE);
    // A timed-out attempt may still be ending on its worker: a retry waits it out.
    CHECK(task.previous_invocation == "wf/t/1.1");
    CHECK(task.previous_executor == "w1");

    REQUIRE(apply(task, 300, [](Body b) {
      auto s = b.initTaskScheduled();
      s.setInput(as_bytes("{}"));
      s.setContinuesAttempts(true);
    }));
    CHECK(task.state == TaskState::SUBMITTED);
    CHECK(task.attempt == 1);
    CHECK(task.attempt_base == 1);
    CHECK(task.starting_attempt() == 2);
    CHECK(task.progress == "7/10");
    CHECK(task.dispatches == 1);
    CHECK(task.failure_reason.empty());
    CHECK(task.banked_us == 0);
    CHECK(task.previous_invocation == "wf/t/1.1");
    REQUIRE(apply(task, 400, [](Body b) { b.initTaskDispatching().setTaskList("default"); }));
    CHECK(task.attempt == 2);  // the next number, while the policy counts attempt - base = 1
    CHECK(task.attempt - task.attempt_base == 1);
  }

  TEST_CASE("an update waits for the attempt on an executor, reaches a task before it is scheduled, and carries on") {
    TaskOverrides longer;
    longer.timeouts = TimeoutsSpec{std::nullopt, Duration(5'000'000), Duration(9'000'000), std::nullopt};
    longer.task_list = "gpu";
    TaskModel task;
    task.name = "t";
    // Before the task has an instance: recorded, and still not scheduled.
    REQUIRE(apply(task, 0, [&](Body b) { write_options(b.initTaskOptionsUpdated(), longer); }));
    REQUIRE(task.options);
    CHECK(*task.options == longer);
    CHECK_FALSE(task.scheduled);
    REQUIRE(apply(task, 10, [](Body b) { b.initTaskScheduled().setInput(as_bytes("{}")); }));
    CHECK(task.scheduled);
    CHECK(*task.options == longer);  // a first instance keeps what came before it
    REQUIRE(apply(task, 100, [](Body b) { b.initTaskDispatched().setInvocationId("i1"); }));

    TaskOverrides no_retry;
    no_retry.retry = std::optional<RetrySpec>();
    no_retry.priority = 7;
    REQUIRE(apply(task, 200, [&](Body b) { write_options(b.initTaskOptionsUpdated(), no_retry); }));
    CHECK(*task.options == longer);  // the attempt on the executor keeps its options...
    REQUIRE(task.pending_options);
    CHECK(*task.pending_options == no_retry);
    TaskSpec spec;
    spec.task_list = "default";
    CHECK(task.effective(spec, false).task_list == "gpu");
    CHECK(task.effective(spec, true).priority == 7);
    REQUIRE(apply(task, 300, [](Body b) { b.initTaskFailed().initFailure().setReason("ExitCode:1"); }));
    TaskOverrides both = longer;  // ...and the next one has both
    both.merge(no_retry);
    CHECK(*task.options == both);
    CHECK_FALSE(task.pending_options);

    // A rerun's fresh instance keeps them too.
    REQUIRE(apply(task, 400, [](Body b) { b.initTaskScheduled(); }));
    CHECK(*task.options == both);
    CHECK(task.attempt == 0);
    auto refused = apply(task, 500, [](Body b) { b.initTaskForcedSuccess(); });
    REQUIRE(refused);  // a task not yet started may be forced to success
    CHECK(task.state == TaskState::FORCED_SUCCESS);
    auto canonical = task.canonical();
    CHECK(canonical.find("options=") != std::string::npos);
  }

  TEST_CASE("a forced success ends a task that failed, was killed or waits, never one on an executor") {
    for (auto setup : {"failed", "killed", "paused", "running"}) {
      CAPTURE(setup);
      TaskModel task;
      task.name = "t";
      REQUIRE(apply(task, 0, [](Body b) { b.initTaskScheduled(); }));
      REQUIRE(apply(task, 10, [](Body b) { b.initTaskDispatched().setInvocationId("i1"); }));
      REQUIRE(apply(task, 20, [](Body b) { b.initTaskRunning().setInvocationId("i1"); }));
      const std::string s = setup;
      if (s == "failed") REQUIRE(apply(task, 30, [](Body b) { b.initTaskFailed(); }));
      if (s == "killed") REQUIRE(apply(task, 30, [](Body b) { b.initTaskKilled(); }));
      if (s == "paused") REQUIRE(apply(task, 30, [](Body b) { b.setTaskPaused(); }));
      auto forced = apply(task, 40, [](Body b) { b.initTaskForcedSuccess().setText("not needed"); });
      if (s == "running") {
        REQUIRE_FALSE(forced);
        CHECK(forced.error().message == "task 't': FORCE is not allowed in state RUNNING");
      } else {
        REQUIRE(forced);
        CHECK(task.state == TaskState::FORCED_SUCCESS);
      }
    }
  }

  TEST_CASE("a workflow records an operator's retry and skip, and a FAILED one reopens for them") {
    const char* three = R"({"name": "three", "tasks": [
      {"name": "a", "handler": "noop"}, {"name": "b", "handler": "noop", "dependsOn": ["a"]},
      {"name": "c", "handler": "noop", "dependsOn": ["b"]}]})";
    WorkflowModel wf;
    wf.id = "wf";
    auto finish = [&](const char* task, schema::TaskOutcome outcome, const char* detail = "") {
      return apply(wf, 5, [&](Body b) {
        auto f = b.initWorkflowTaskFinished();
        f.setTaskName(task);
        f.setOutcome(outcome);
        f.setDetail(detail);
      }, "wf");
    };
    REQUIRE(apply(wf, 0, [&](Body b) { b.initWorkflowSubmitted().setDefinitionJson(three); }, "wf"));
    REQUIRE(apply(wf, 1, [](Body b) { b.setWorkflowStarted(); }, "wf"));
    REQUIRE(apply(wf, 2, [](Body b) { b.initTaskScheduled(); }, "a"));

    // The refusals name the task, why, and what to do instead.
    auto check_refusal = [&](WorkflowEvent op, const char* task, const std::string& message) {
      auto refused = wf.task_for(op, task);
      REQUIRE_FALSE(refused);
      CHECK(refused.error().message == message);
    };
    check_refusal(WorkflowEvent::RETRY_TASK, "a",
                  "task 'a' of workflow 'wf' has not ended (it is in progress): only a task that failed or was killed can be retried");
    check_refusal(WorkflowEvent::RETRY_TASK, "b",
                  "task 'b' of workflow 'wf' has not run yet: only a task that failed or was killed can be retried");
    CHECK(wf.task_for(WorkflowEvent::RETRY_TASK, "zz").error().code == Errc::INVALID_ARGUMENT);
    CHECK(wf.task_for(WorkflowEvent::SKIP_TASK, "b"));
    CHECK(wf.task_for(WorkflowEvent::UPDATE_TASK, "c"));

    REQUIRE(finish("a", schema::TaskOutcome::SUCCEEDED));
    REQUIRE(apply(wf, 6, [](Body b) { b.initTaskScheduled(); }, "b"));
    REQUIRE(finish("b", schema::TaskOutcome::FAILED, "ExitCode:1"));
    check_refusal(WorkflowEvent::RETRY_TASK, "a",
                  "task 'a' of workflow 'wf' succeeded: only a task that failed or was killed can be retried (to run it "
                  "again, rerun the workflow from it once the workflow has finished)");
    check_refusal(WorkflowEvent::RETRY_TASK, "c",
                  "task 'c' of workflow 'wf' has not run because 'b' failed: retry or skip 'b' instead");
    check_refusal(WorkflowEvent::UPDATE_TASK, "a", "task 'a' of workflow 'wf' succeeded: it has no next attempt");
    REQUIRE(apply(wf, 7, [](Body b) { b.initWorkflowFailed().setReason("task 'b' failed: ExitCode:1"); }, "wf"));
    REQUIRE(apply(wf, 7, [](Body b) { b.setWorkflowFinalized(); }, "wf"));
    REQUIRE(wf.state == WorkflowState::FAILED);

    // A retry reopens it; b waits to be scheduled as a retry, c waits for b.
    REQUIRE(wf.task_for(WorkflowEvent::RETRY_TASK, "b"));
    REQUIRE(apply(wf, 8, [](Body b) { b.initWorkflowTaskRetried().setTaskName("b"); }, "wf"));
    CHECK(wf.state == WorkflowState::RUNNING);
    CHECK_FALSE(wf.finalized);
    CHECK(wf.failure_reason.empty());
    CHECK(wf.first_task_failure.empty());
    CHECK(wf.retried == std::set<uint32_t>{1});
    CHECK(wf.graph->state(1) == NodeState::READY);
    CHECK(wf.graph->state(2) == NodeState::WAITING);
    CHECK_FALSE(apply(wf, 9, [](Body b) { b.initTaskScheduled(); }, "b"));  // not as the retry it recorded
    REQUIRE(apply(wf, 9, [](Body b) { b.initTaskScheduled().setContinuesAttempts(true); }, "b"));
    CHECK(wf.retried.empty());

    // c is skipped before it is scheduled; b fails again, and is skipped instead.
    REQUIRE(apply(wf, 10, [](Body b) {
      auto s = b.initWorkflowTaskSkipped();
      s.setTaskName("c");
      s.setReason("not needed today");
    }, "wf"));
    CHECK(wf.skips == std::map<uint32_t, std::string>{{2, "not needed today"}});
    CHECK(wf.graph->state(2) == NodeState::WAITING);
    REQUIRE(finish("b", schema::TaskOutcome::FAILED, "ExitCode:2"));
    CHECK(wf.first_task_failure == "task 'b' failed: ExitCode:2");
    REQUIRE(apply(wf, 11, [](Body b) { b.initWorkflowTaskSkipped().setTaskName("b"); }, "wf"));
    CHECK(wf.graph->state(1) == NodeState::SUCCEEDED);
    CHECK(wf.graph->ready() == std::vector<uint32_t>{2});
    CHECK(wf.first_task_failure.empty());
    CHECK(wf.failures.empty());
    REQUIRE(apply(wf, 12, [](Body b) { b.initTaskScheduled(); }, "c"));
    CHECK(wf.skips.empty());
    CHECK(wf.canonical().find(";skips=;") != std::string::npos);
  }

  TEST_CASE("a task's new options are checked by a definition's rules and resolved as a definition's are") {
    auto spec = parse_definition(R"({"name": "w", "tasks": [{"name": "t", "handler": "h",
        "timeouts": {"scheduleToClose": "10m", "heartbeat": "30s"},
        "retry": {"initialInterval": "2s", "maximumAttempts": 3}}]})");
    REQUIRE(spec);
    const TaskSpec& task = spec->tasks[0];

    TaskOptionsPatch shorter;
    shorter.start_to_close = "1m";
    shorter.task_list = "gpu";
    auto resolved = resolve_patch(task, shorter);
    REQUIRE_MESSAGE(resolved, (resolved ? "" : resolved.error().message));
    CHECK(resolved->task_list == std::optional<std::string>("gpu"));
    CHECK_FALSE(resolved->priority);
    CHECK_FALSE(resolved->retry);
    REQUIRE(resolved->timeouts);
    CHECK(resolved->timeouts->start_to_close == Duration(60'000'000));
    CHECK(resolved->timeouts->schedule_to_close == Duration(600'000'000));
    CHECK(resolved->timeouts->heartbeat == Duration(30'000'000));

    TaskOptionsPatch bad;
    bad.start_to_close = "10s";  // below the heartbeat
    bad.retry_json = R"({"initialInterval": "5s", "maximumInterval": "1s", "backoffCoefficient": 0.5})";
    auto problems = resolve_patch(task, bad);
    REQUIRE_FALSE(problems);
    CHECK(problems.error().code == Errc::INVALID_ARGUMENT);
    CHECK(problems.error().message ==
          "the task's new options have 3 problems:\n"
          "  timeouts.heartbeat: is longer than startToClose (10s), so it could never fire\n"
          "  retry.maximumInterval: is shorter than initialInterval (5s)\n"
          "  retry.backoffCoefficient: must be at least 1");

    TaskOptionsPatch unbounded;
    unbounded.schedule_to_close = "none";
    unbounded.retry_json = R"({"maximumAttempts": 0})";
    auto forever = resolve_patch(task, unbounded);
    REQUIRE_FALSE(forever);
    // Without scheduleToClose the retries would never stop (the other timeouts, which were
    // derived from it, stay).
    CHECK(forever.error().message ==
          "the task's new options have a problem:\n  retry: never stops retrying: set maximumAttempts, "
          "expirationInterval or timeouts.scheduleToClose");

    TaskOptionsPatch nothing;
    CHECK(resolve_patch(task, nothing).error().message.find("the update changes nothing") == 0);
    TaskOptionsPatch not_object;
    not_object.retry_json = "[1]";
    CHECK(resolve_patch(task, not_object).error().message.find("retry: must be an object") == 0);
    TaskOptionsPatch quoted;
    quoted.task_list = "a \"quoted\" list";
    auto odd = resolve_patch(task, quoted);
    REQUIRE_MESSAGE(odd, (odd ? "" : odd.error().message));
    CHECK(odd->task_list == std::optional<std::string>("a \"quoted\" list"));

    TaskOptionsPatch once;
    once.remove_retry = true;
    once.set_priority = true;
    once.priority = -3;
    auto plain = resolve_patch(task, once);
    REQUIRE(plain);
    REQUIRE(plain->retry);
    CHECK_FALSE(*plain->retry);
    CHECK(plain->priority == std::optional<int32_t>(-3));
  }
}
