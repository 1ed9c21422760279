// Where a workflow's history says its tasks ran: each invocation with its attempt and worker,
// whether it may have run, and where its outcome says its log is.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include <capnp/message.h>

#include "runtime/logs/task_runs.hpp"

using namespace troupe;
using namespace troupe::runtime;

namespace {

/// Folds one event of actor `task` whose body `fill` writes.
void add(TaskRuns& runs, const std::string& task, const std::function<void(schema::EventBody::Builder)>& fill,
         schema::ActorKind kind = schema::ActorKind::TASK) {
  capnp::MallocMessageBuilder message;
  auto event = message.initRoot<schema::HistoryEvent>();
  event.setActorKind(kind);
  event.setActorId(task);
  fill(event.initBody());
  REQUIRE(runs.add(event.asReader()));
}

void dispatched(TaskRuns& runs, const std::string& task, const std::string& id, const std::string& worker) {
  add(runs, task, [&](schema::EventBody::Builder body) {
    auto d = body.initTaskDispatched();
    d.setInvocationId(id);
    d.setWorkerShard(worker);
  });
}

capnp::Data::Reader data(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

}  // namespace

TEST_SUITE("runtime.task_runs") {
  TEST_CASE("each dispatch is a run of its attempt on its worker; outcomes mark it started and ended") {
    TaskRuns runs;
    CHECK(runs.of("build").empty());
    CHECK(runs.last_attempt("build") == 0);
    dispatched(runs, "build", "wf/build/1.1", "worker-a");
    add(runs, "build", [](auto body) { body.initTaskRunning().setInvocationId("wf/build/1.1"); });
    REQUIRE(runs.of("build").size() == 1);
    CHECK(runs.of("build")[0].attempt == 1);
    CHECK(runs.of("build")[0].worker == "worker-a");
    CHECK(runs.of("build")[0].started);
    CHECK_FALSE(runs.of("build")[0].ended);

    add(runs, "build", [](auto body) {
      auto f = body.initTaskFailed();
      f.setInvocationId("wf/build/1.1");
      f.initFailure().setDetails("exited with 3; log: /var/logs/wf/build.1.1.log (not retried: x)");
    });
    dispatched(runs, "build", "wf/build/2.2", "worker-b");
    add(runs, "build", [](auto body) {
      auto s = body.initTaskSucceeded();
      s.setInvocationId("wf/build/2.2");
      s.setResult(data(R"({"exitCode":0,"log":"/logs/wf/build.2.2.log"})"));
    });
    CHECK(runs.last_attempt("build") == 2);
    auto first = runs.runs_of_attempt("build", 1);
    REQUIRE(first.size() == 1);
    CHECK(first[0].ended);
    CHECK(first[0].log_path == "/var/logs/wf/build.1.1.log");
    auto second = runs.runs_of_attempt("build", 2);
    REQUIRE(second.size() == 1);
    CHECK(second[0].worker == "worker-b");
    CHECK(second[0].log_path == "/logs/wf/build.2.2.log");
    CHECK(runs.runs_of_attempt("build", 3).empty());
  }

  TEST_CASE("an attempt that moved has a run per worker; one that never started is no run of it") {
    TaskRuns runs;
    dispatched(runs, "t", "wf/t/1.1", "worker-a");
    add(runs, "t", [](auto body) {
      auto f = body.initTaskFailover();
      f.setInvocationId("wf/t/1.1");
      f.setKind(schema::FailoverKind::NEVER_STARTED);
    });
    dispatched(runs, "t", "wf/t/1.2", "worker-b");
    add(runs, "t", [](auto body) {
      auto f = body.initTaskFailover();
      f.setInvocationId("wf/t/1.2");
      f.setKind(schema::FailoverKind::INTERRUPTED);
    });
    dispatched(runs, "t", "wf/t/1.3", "worker-c");
    auto attempt = runs.runs_of_attempt("t", 1);
    REQUIRE(attempt.size() == 2);
    CHECK(attempt[0].invocation_id == "wf/t/1.2");
    CHECK(attempt[0].ended);
    CHECK(attempt[1].invocation_id == "wf/t/1.3");
    CHECK_FALSE(attempt[1].ended);
    CHECK(runs.of("t").size() == 3);
    CHECK(runs.of("t")[0].never_started);
  }

  TEST_CASE("a task killed before its worker started it has no attempt that ran") {
    TaskRuns runs;
    dispatched(runs, "t", "wf/t/1.1", "worker-a");
    add(runs, "t", [](auto body) {
      auto k = body.initTaskKilled();
      k.setInvocationId("wf/t/1.1");
      k.setNeverStarted(true);
    });
    CHECK(runs.last_attempt("t") == 0);
    CHECK(runs.runs_of_attempt("t", 1).empty());
  }

  TEST_CASE("the definition says which tasks run handlers") {
    TaskRuns runs;
    add(
        runs, "wf",
        [](auto body) {
          body.initWorkflowSubmitted().setDefinitionJson(
              R"({"name": "d", "tasks": [{"name": "h", "handler": "noop"},
                                         {"name": "s", "shell": {"command": ["true"]}}]})");
        },
        schema::ActorKind::WORKFLOW);
    CHECK(runs.runs_handler("h"));
    CHECK_FALSE(runs.runs_handler("s"));
    CHECK_FALSE(runs.runs_handler("nope"));
  }

  TEST_CASE("the log path an outcome names") {
    CHECK(log_path_in_result(R"({"exitCode":0,"log":"/a/b \"c\".1.1.log"})") == "/a/b \"c\".1.1.log");
    CHECK(log_path_in_result(R"({"exitCode":0})").empty());
    CHECK(log_path_in_result(R"({"log":"/x\u0001y.log"})") == "/x\x01y.log");
    CHECK(log_path_in_failure("exited with 1; log: /l/wf/a.1.1.log") == "/l/wf/a.1.1.log");
    CHECK(log_path_in_failure("killed by SIGKILL; log: /l/a.logs/b.1.1.log (not retried: no retry policy)") ==
          "/l/a.logs/b.1.1.log");
    CHECK(log_path_in_failure("cannot run '/no/such/binary'").empty());
  }
}
