// Why a workflow is not moving, as diagnose words it from a durable status and its actors'
// probes; and the probes and roster it reads.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/system/actor_roster.hpp"
#include "actors/task/task_probe.hpp"
#include "actors/workflow/workflow_probe.hpp"
#include "runtime/admin/diagnosis.hpp"

using namespace troupe;

namespace {

TaskStatus task(std::string name, TaskStateCode code, std::string wait = {}) {
  TaskStatus t;
  t.name = std::move(name);
  t.state_code = code;
  t.state = std::string(name_of(code));
  t.wait_reason = std::move(wait);
  t.worker = "w1";
  t.attempt = 1;
  return t;
}

actors::ProbedActor probed(std::string id, std::string state, std::string waits_for) {
  actors::ProbedActor p;
  p.entry.id = std::move(id);
  auto probe = std::make_shared<actors::ActorProbe>();
  probe->state = std::move(state);
  probe->waits_for = std::move(waits_for);
  p.probe = probe;
  return p;
}

WorkflowStatus running(std::vector<TaskStatus> tasks) {
  WorkflowStatus s;
  s.workflow_id = "wf";
  s.state = "RUNNING";
  s.state_code = WorkflowStateCode::RUNNING;
  s.tasks = std::move(tasks);
  return s;
}

}  // namespace

TEST_SUITE("runtime.diagnosis") {
  TEST_CASE("a task no worker can take explains the workflow before one that waits for a busy worker") {
    auto status = running({task("busy", TaskStateCode::DISPATCHING, "the only worker of 'default' is busy"),
                           task("gpu", TaskStateCode::DISPATCHING, "no live worker serves task list 'gpu'"),
                           task("done", TaskStateCode::SUCCESS), task("later", TaskStateCode::WAITING)});
    auto d = runtime::diagnose(status, {probed("wf", "RUNNING", "its active tasks: 'busy', 'gpu'"),
                                        probed("wf/busy", "DISPATCHING", "a worker slot in task list 'default'"),
                                        probed("wf/gpu", "DISPATCHING", "a worker slot in task list 'gpu'")});
    CHECK(d.live);
    CHECK(d.summary ==
          "task 'gpu' (DISPATCHING) waits for a worker slot in task list 'gpu': no live worker serves task list 'gpu'");
    REQUIRE(d.blockers.size() == 3);  // the workflow, and its two open tasks
    CHECK(d.blockers[0].subject == "workflow");
    CHECK(d.blockers[1].waits_for == "a worker slot in task list 'default': the only worker of 'default' is busy");
  }

  TEST_CASE("a passivated workflow is read from its status alone; a paused one waits for its operator") {
    auto status = running({task("run", TaskStateCode::RUNNING)});
    auto d = runtime::diagnose(status, {});
    CHECK_FALSE(d.live);
    CHECK(d.blockers[0].waits_for.starts_with("passivated"));
    CHECK(d.blockers[1].waits_for == "its attempt 1 to end on worker 'w1'");

    status.state = "PAUSED";
    status.state_code = WorkflowStateCode::PAUSED;
    status.tasks = {task("held", TaskStateCode::PAUSED)};
    d = runtime::diagnose(status, {});
    CHECK(d.summary == "it is paused: it waits for an operator to resume it (troupe resume wf)");
  }

  TEST_CASE("an actor that does not answer is named as such; an ended workflow says how it ended") {
    actors::ProbedActor silent;
    silent.entry.id = "wf/slow";
    silent.error = "no answer within 2000ms: busy in one long step, or stuck";
    auto d = runtime::diagnose(running({task("slow", TaskStateCode::RUNNING)}), {silent});
    CHECK(d.blockers[1].waits_for == "its actor did not answer: " + silent.error);

    WorkflowStatus ended;
    ended.workflow_id = "wf";
    ended.state = "FAILED";
    ended.state_code = WorkflowStateCode::FAILED;
    ended.detail = "task 'x' failed";
    d = runtime::diagnose(ended, {});
    CHECK(d.summary == "it ended FAILED: task 'x' failed");
    CHECK(d.blockers.empty());
  }
}

TEST_SUITE("actors.probes") {
  TEST_CASE("a task says what it waits for by its state, its unwritten events first") {
    actors::TaskModel model;
    TaskSpec spec;
    spec.task_list = "gpu";
    model.state = actors::TaskState::DISPATCHING;
    CHECK(actors::probe_task(model, spec, {}, 0).waits_for == "a worker slot in task list 'gpu'");
    CHECK(actors::probe_task(model, spec, {0, false, false, "env"}, 0).waits_for ==
          "a worker slot in task list 'gpu', on the worker that holds its session 'env'");
    CHECK(actors::probe_task(model, spec, {2, false, false, ""}, 0).waits_for ==
          "2 events to be written to the history store");
    model.state = actors::TaskState::RUNNING;
    model.invocation_id = "wf/t/1.1";
    model.executor = "w1";
    CHECK(actors::probe_task(model, spec, {}, 0).waits_for == "invocation wf/t/1.1 to end on worker 'w1'");
    model.awaiting_completion = true;
    CHECK(actors::probe_task(model, spec, {}, 0).waits_for == "completeTask or failTask with its token (asyncCompletion)");
    model.state = actors::TaskState::SUCCESS;
    CHECK(actors::probe_task(model, spec, {}, 0).waits_for.empty());
  }

  TEST_CASE("a paused workflow waits for its operator") {
    actors::WorkflowModel model;
    model.id = "wf";
    model.state = actors::WorkflowState::PAUSED;
    CHECK(actors::probe_workflow(model, {}).waits_for == "an operator to resume it (troupe resume wf)");
  }

  TEST_CASE("the roster lists the live actors by kind, finds one by id, and forgets one whose seat is gone") {
    auto shared = std::make_shared<actors::ActorRoster>();
    auto& roster = *shared;
    {
      actors::RosterSeat a(shared, {"task", "wf/a", 1, {}});
      actors::RosterSeat b(shared, {"workflow", "wf", 2, {}});
      CHECK(roster.entries().size() == 2);
      CHECK(roster.entries("task").size() == 1);
      CHECK(roster.counts() == std::map<std::string, uint64_t>{{"task", 1}, {"workflow", 1}});
      REQUIRE(roster.find("wf/a"));
      CHECK(roster.find("wf/a")->kind == "task");
      actors::RosterSeat moved = std::move(a);
      CHECK(roster.entries().size() == 2);
    }
    CHECK(roster.entries().empty());
    CHECK_FALSE(roster.find("wf"));
  }

  TEST_CASE("a sample of the roster keeps at most so many actors of each kind, chosen anew by its seed") {
    auto shared = std::make_shared<actors::ActorRoster>();
    std::vector<std::unique_ptr<actors::RosterSeat>> seats;
    auto seat = [&](std::string kind, std::string id) {
      seats.push_back(std::make_unique<actors::RosterSeat>(shared, actors::ActorRoster::Entry{kind, id, 0, {}}));
    };
    for (int i = 0; i < 50; ++i) seat("task", "wf/t" + std::to_string(i));
    for (int i = 0; i < 3; ++i) seat("worker", "w" + std::to_string(i));
    auto ids = [&](uint64_t seed) {
      std::map<std::string, std::set<std::string>> by_kind;
      for (const auto& e : shared->sample(10, seed)) by_kind[e.kind].insert(e.id);
      return by_kind;
    };
    const auto one = ids(1);
    CHECK(one.at("task").size() == 10);
    CHECK(one.at("worker").size() == 3);
    CHECK(ids(1) == one);
    std::set<std::string> seen;
    for (uint64_t seed = 0; seed < 100; ++seed) {
      const auto some = ids(seed);
      seen.insert(some.at("task").begin(), some.at("task").end());
    }
    CHECK(seen.size() == 50);  // every task in some sample
    CHECK(shared->sample(0, 1).empty());
  }
}
