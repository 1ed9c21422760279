// Both state machines walked pair by pair against a specification written out here, apart
// from the production tables, plus the invariants every transition must keep.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>

#include "actors/task/task_machine.hpp"
#include "actors/workflow/workflow_machine.hpp"

using namespace troupe;
using namespace troupe::actors;

namespace {

/// "EVENT>STATE" for a transition, "EVENT=" for an ignored pair; every pair not listed must be
/// rejected.
using Spec = std::map<std::string, std::string>;  // state -> space-separated entries

template <class Machine, class Traits>
void walk(const Spec& spec) {
  using State = typename Traits::State;
  using Event = typename Traits::Event;
  int defined = 0;
  for (size_t s = 0; s < Traits::states; ++s) {
    const State state = static_cast<State>(s);
    const std::string state_name(Traits::name(state));
    std::map<std::string, std::string> expected;  // event -> ">STATE" or "="
    if (auto it = spec.find(state_name); it != spec.end()) {
      std::istringstream in(it->second);
      std::string entry;
      while (in >> entry) {
        auto cut = entry.find_first_of(">=");
        expected[entry.substr(0, cut)] = entry.substr(cut);
      }
    }
    for (size_t e = 0; e < Traits::events; ++e) {
      const Event event = static_cast<Event>(e);
      const std::string event_name(Traits::name(event));
      CAPTURE(state_name);
      CAPTURE(event_name);
      auto t = Machine::transition(state, event);
      auto want = expected.find(event_name);
      if (want == expected.end()) {
        REQUIRE_FALSE(t);
        CHECK(t.error().code == Errc::NOT_ALLOWED_IN_STATE);
        CHECK(t.error().message == event_name + " is not allowed in state " + state_name);
        continue;
      }
      ++defined;
      REQUIRE(t);
      if (want->second == "=") {
        CHECK(t->ignored);
        CHECK(t->to == state);
        CHECK_FALSE(t->note.empty());
      } else {
        CHECK_FALSE(t->ignored);
        CHECK(std::string(Traits::name(t->to)) == want->second.substr(1));
      }
      expected.erase(want);
    }
    CHECK_MESSAGE(expected.empty(), "the spec names events the table does not know");
  }
  CHECK(defined == static_cast<int>(Machine::table().rows().size()));
}

}  // namespace

TEST_SUITE("actors.machines") {
  TEST_CASE("the workflow table matches its specification pair by pair") {
    walk<WorkflowMachine, WorkflowMachineTraits>({
        {"SUBMITTED", "START>RUNNING STOP>STOPPED FAILOVER>FAILOVER"},
        {"RUNNING", "TASK_FINISHED>RUNNING PAUSE>READY_PAUSE RESUME>RUNNING STOP>READY_STOP "
                    "SUCCEED>SUCCESS FAILED>FAILED FAILOVER>FAILOVER "
                    "RETRY_TASK>RUNNING SKIP_TASK>RUNNING UPDATE_TASK>RUNNING RERUN_SESSION>RUNNING"},
        {"READY_PAUSE", "TASK_FINISHED>READY_PAUSE PAUSE= PAUSED>PAUSED RESUME>RUNNING "
                        "STOP>READY_STOP SUCCEED>SUCCESS FAILED>FAILED FAILOVER>FAILOVER "
                        "RETRY_TASK>READY_PAUSE SKIP_TASK>READY_PAUSE UPDATE_TASK>READY_PAUSE "
                        "RERUN_SESSION>READY_PAUSE"},
        {"PAUSED", "PAUSE= RESUME>RUNNING STOP>READY_STOP FAILOVER>FAILOVER "
                   "RETRY_TASK>PAUSED SKIP_TASK>PAUSED UPDATE_TASK>PAUSED "
                   "TASK_FINISHED>PAUSED SUCCEED>SUCCESS FAILED>FAILED RERUN_SESSION>PAUSED"},
        {"READY_STOP", "TASK_FINISHED>READY_STOP STOP= STOPPED>STOPPED FAILOVER>FAILOVER"},
        {"STOPPED", "STOP= FINALIZE>STOPPED RERUN>RUNNING UPDATE_TASK>STOPPED"},
        {"SUCCESS", "FINALIZE>SUCCESS RERUN>RUNNING UPDATE_TASK>SUCCESS"},
        {"FAILED", "FINALIZE>FAILED RERUN>RUNNING RETRY_TASK>RUNNING SKIP_TASK>RUNNING UPDATE_TASK>FAILED"},
        {"FAILOVER", "START>RUNNING PAUSE>READY_PAUSE STOP>READY_STOP TASK_FINISHED>FAILOVER"},
    });
  }

  TEST_CASE("the task table matches its specification pair by pair") {
    const std::string on_executor =
        "SUCCEEDED>SUCCESS FAILED>FAILURE TIMEOUT>FAILURE RETRY>DELAY_EXECUTION KILLED>KILLED "
        "PAUSED>PAUSED FAILOVER>FAILOVER HANDED_OFF>RUNNING ";
    walk<TaskMachine, TaskMachineTraits>({
        {"SUBMITTED", "START>DISPATCHING DISPATCHED>DISPATCHED PAUSE>PAUSED KILL>KILLED "
                      "FORCE>FORCED_SUCCESS UPDATE>SUBMITTED"},
        {"DELAY_EXECUTION", "DISPATCH>DISPATCHING DISPATCHED>DISPATCHED TIMEOUT>FAILURE PAUSE>PAUSED KILL>KILLED "
                            "FORCE>FORCED_SUCCESS UPDATE>DELAY_EXECUTION"},
        {"DISPATCHING", "DISPATCHED>DISPATCHED TIMEOUT>FAILURE RETRY>DELAY_EXECUTION "
                        "FAILED>FAILURE PAUSE>PAUSED KILL>KILLED FORCE>FORCED_SUCCESS UPDATE>DISPATCHING"},
        {"DISPATCHED", on_executor + "RUNNING>RUNNING HEARTBEAT>RUNNING KILL>DISPATCHED PAUSE>DISPATCHED "
                                     "UPDATE>DISPATCHED"},
        {"RUNNING", on_executor + "RUNNING= HEARTBEAT>RUNNING KILL>RUNNING PAUSE>RUNNING UPDATE>RUNNING"},
        {"PAUSED", "START>DISPATCHING DISPATCHED>DISPATCHED PAUSE= KILL>KILLED FORCE>FORCED_SUCCESS UPDATE>PAUSED"},
        {"FAILOVER", "RETRY>DELAY_EXECUTION FAILED>FAILURE TIMEOUT>FAILURE KILL>KILLED UPDATE>FAILOVER"},
        {"KILLED", "KILL= FORCE>FORCED_SUCCESS UPDATE>KILLED"},
        {"FAILURE", "FORCE>FORCED_SUCCESS UPDATE>FAILURE"},
        {"SUCCESS", "UPDATE>SUCCESS"},
        {"FORCED_SUCCESS", "UPDATE>FORCED_SUCCESS"},
    });
  }

  TEST_CASE("every accepted workflow transition persists first; only finishing closes") {
    for (const auto& row : WorkflowMachine::table().rows()) {
      CAPTURE(WorkflowMachineTraits::name(row.from));
      CAPTURE(WorkflowMachineTraits::name(row.event));
      if (row.ignored) {
        CHECK_FALSE(row.actions.contains(WorkflowAction::PERSIST));
        continue;
      }
      REQUIRE(row.actions.size() > 0);
      CHECK(*row.actions.begin() == WorkflowAction::PERSIST);
      CHECK(row.actions.contains(WorkflowAction::CLOSE) == (row.event == WorkflowEvent::FINALIZE));
      // A workflow that keeps or starts running looks at its graph again (an update of a
      // task's options changes nothing in it).
      if ((row.to == WorkflowState::RUNNING || row.to == WorkflowState::READY_PAUSE ||
           row.to == WorkflowState::READY_STOP) &&
          row.event != WorkflowEvent::UPDATE_TASK) {
        CHECK(row.actions.contains(WorkflowAction::EVALUATE));
      }
      // An operator's command is answered, changes no state but by reopening a FAILED
      // workflow, and only a retry or a skip (which change the graph) starts what became ready.
      if (row.event == WorkflowEvent::RETRY_TASK || row.event == WorkflowEvent::SKIP_TASK ||
          row.event == WorkflowEvent::UPDATE_TASK) {
        CHECK(row.actions.contains(WorkflowAction::REPLY));
        CHECK((row.to == row.from || (row.from == WorkflowState::FAILED && row.to == WorkflowState::RUNNING)));
        CHECK(row.actions.contains(WorkflowAction::START_READY_TASKS) ==
              (row.to == WorkflowState::RUNNING && row.event != WorkflowEvent::UPDATE_TASK));
      }
      CHECK(row.actions.contains(WorkflowAction::KILL_ACTIVE_TASKS) ==
            (row.to == WorkflowState::READY_STOP && row.from != WorkflowState::READY_STOP));
    }
  }

  TEST_CASE("task transitions keep the task's promises to its workflow and executor") {
    for (const auto& row : TaskMachine::table().rows()) {
      CAPTURE(TaskMachineTraits::name(row.from));
      CAPTURE(TaskMachineTraits::name(row.event));
      if (row.ignored) {
        CHECK(row.actions.size() == 0);
        continue;
      }
      REQUIRE(row.actions.size() > 0);
      CHECK(*row.actions.begin() == TaskAction::PERSIST);
      const bool finishing = TaskMachine::is_terminal(row.to) || row.to == TaskState::PAUSED;
      // The workflow hears about exactly the transitions that end (or pause) the task.
      CHECK(row.actions.contains(TaskAction::NOTIFY_WORKFLOW) == (finishing && row.from != row.to));
      // Leaving the task list other than by dispatch withdraws from it.
      if (row.from == TaskState::DISPATCHING && row.to != TaskState::DISPATCHED) {
        CHECK(row.actions.contains(TaskAction::WITHDRAW));
      }
      // An invocation abandoned on an executor is cancelled there.
      if (TaskMachine::is_on_executor(row.from) &&
          (row.to == TaskState::FAILURE || row.to == TaskState::DELAY_EXECUTION)) {
        CHECK(row.actions.contains(TaskAction::CANCEL_INVOCATION));
      }
      CHECK(row.actions.contains(TaskAction::START_BACKOFF_TIMER) ==
            (row.to == TaskState::DELAY_EXECUTION && row.from != TaskState::DELAY_EXECUTION));
      // An operator forces a task to success only off an executor, and its workflow hears of it.
      if (row.event == TaskEvent::FORCE) {
        CHECK_FALSE(TaskMachine::is_on_executor(row.from));
        CHECK(row.to == TaskState::FORCED_SUCCESS);
      }
      // An update changes the options, not the state; an attempt on an executor keeps its
      // timers, and a task that waits in its task list joins it again.
      if (row.event == TaskEvent::UPDATE) {
        CHECK(row.to == row.from);
        if (TaskMachine::is_on_executor(row.from)) CHECK(row.actions.size() == 1);
        CHECK(row.actions.contains(TaskAction::REJOIN) == (row.from == TaskState::DISPATCHING));
        CHECK(row.actions.contains(TaskAction::WITHDRAW) == (row.from == TaskState::DISPATCHING));
      }
      // A hand-off stops only the heartbeat timeout: the attempt's startToClose runs on, so an
      // asyncCompletion task whose token is never used times out like any other attempt.
      if (row.event == TaskEvent::HANDED_OFF) {
        CHECK(TaskMachine::is_on_executor(row.from));
        CHECK(row.to == TaskState::RUNNING);
        CHECK(row.actions == ActionList<TaskAction>{TaskAction::PERSIST, TaskAction::STOP_HEARTBEAT_TIMER});
      }
      CHECK(row.actions.contains(TaskAction::STOP_HEARTBEAT_TIMER) == (row.event == TaskEvent::HANDED_OFF));
      for (TaskAction stops : {TaskAction::STOP_ATTEMPT_TIMERS, TaskAction::STOP_ALL_TIMERS}) {
        if (row.actions.contains(stops)) CHECK(row.event != TaskEvent::HANDED_OFF);
      }
      // Only a dispatch sends an invocation (from the task list, or at once with a free slot).
      CHECK(row.actions.contains(TaskAction::SEND) == (row.to == TaskState::DISPATCHED && row.from != row.to));
      // The task-wide timer starts with the task's first start and with a resume.
      if (row.to == TaskState::DISPATCHING || row.to == TaskState::DISPATCHED) {
        CHECK(row.actions.contains(TaskAction::START_TASK_TIMER) ==
              (row.from == TaskState::SUBMITTED || row.from == TaskState::PAUSED));
      }
      if (TaskMachine::is_terminal(row.to) && row.from != row.to &&
          row.to != TaskState::FORCED_SUCCESS) {
        CHECK(row.actions.contains(TaskAction::STOP_ALL_TIMERS) != (row.from == TaskState::SUBMITTED ||
                                                                   row.from == TaskState::PAUSED));
      }
    }
  }

  TEST_CASE("the tables print as Markdown and Graphviz") {
    auto md = TaskMachine::table().markdown("Task");
    CHECK(md.find("| DISPATCHING | DISPATCHED | DISPATCHED | persist, stop attempt timers, send to executor |") !=
          std::string::npos);
    CHECK(md.find("(ignored: already running)") != std::string::npos);
    auto dot = WorkflowMachine::table().dot("workflow");
    CHECK(dot.find("digraph workflow {") == 0);
    CHECK(dot.find("READY_PAUSE -> PAUSED [label=\"PAUSED\"];") != std::string::npos);
  }
}
