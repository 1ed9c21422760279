// The session table walked pair by pair against a specification written out here (what each
// state does with each event it does not ignore), and the rules every row must keep: envExit
// for every envEnter that ran while the worker lives, timers stopped on the way out, tasks held
// while the session has no worker.
#include <doctest/doctest.h>

#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "actors/session/session_machine.hpp"

using namespace troupe;
using namespace troupe::actors;
using S = SessionState;
using E = SessionEvent;
using A = SessionAction;

namespace {

/// Per state, the events it takes as "EVENT -> STATE: actions"; every other event is ignored.
const std::map<std::string, std::vector<std::string>> spec = {
    {"WAITING",
     {"FIRST_TASK_READY -> CREATING: find worker, arm creation timer", "TASKS_DONE -> CLOSED: ",
      "TASK_FAILED -> FAILED: never attempt queued", "CANCEL -> CLOSED: "}},
    {"CREATING",
     {"PLACED -> ENTERING: stop looking, enter on worker, arm execution timer",
      "CREATION_TIMED_OUT -> FAILED: stop looking, never attempt queued, stop execution timer",
      "TASKS_DONE -> CLOSED: stop looking, stop execution timer",
      "TASK_FAILED -> FAILED: stop looking, never attempt queued, stop execution timer",
      "CANCEL -> CLOSED: stop looking, never attempt queued, stop execution timer",
      "EXECUTION_TIMED_OUT -> FAILED: stop looking, never attempt queued"}},
    {"ENTERING",
     {"ENTERED -> OPEN: release tasks", "ENTER_FAILED -> FAILING: never attempt queued, exit on worker",
      "TASKS_DONE -> CLOSING: exit on worker", "TASK_FAILED -> FAILING: never attempt queued, exit on worker",
      "CANCEL -> CLOSING: stop current action, never attempt queued, exit on worker",
      "EXECUTION_TIMED_OUT -> FAILING: stop current action, never attempt queued, exit on worker",
      "WORKER_LOST -> REESTABLISHING: free slot, hold tasks, arm reestablish timer",
      "WORKER_DRAINED -> MOVING: exit on worker", "WORKER_DRAINED_NOW -> MOVING: stop env enter, exit on worker"}},
    {"OPEN",
     {"TASKS_DONE -> CLOSING: exit on worker", "TASK_FAILED -> FAILING: never attempt queued, exit on worker",
      "CANCEL -> CLOSING: never attempt queued, exit on worker",
      "EXECUTION_TIMED_OUT -> FAILING: stop current action, never attempt queued, exit on worker",
      "WORKER_LOST -> REESTABLISHING: free slot, hold tasks, arm reestablish timer",
      "WORKER_DRAINED -> MOVING: exit on worker", "WORKER_DRAINED_NOW -> MOVING: exit on worker"}},
    {"REESTABLISHING",
     {"TASKS_DONE -> CLOSED: stop reestablish timer, stop execution timer",
      "TASK_FAILED -> FAILED: stop reestablish timer, never attempt queued, stop execution timer",
      "CANCEL -> CLOSED: stop reestablish timer, never attempt queued, stop execution timer",
      "EXECUTION_TIMED_OUT -> FAILED: stop reestablish timer, never attempt queued",
      "WORKER_BACK -> ENTERING: stop reestablish timer, enter on worker",
      "RECREATE -> CREATING: stop reestablish timer, find worker, arm creation timer",
      "ABANDON -> FAILED: stop reestablish timer, never attempt queued, stop execution timer"}},
    {"MOVING",
     {"ENTERED -> MOVING: ", "ENTER_FAILED -> MOVING: ", "TASKS_DONE -> CLOSING: ",
      "TASK_FAILED -> FAILING: never attempt queued", "CANCEL -> CLOSING: never attempt queued",
      "EXECUTION_TIMED_OUT -> FAILING: stop current action, never attempt queued",
      "EXITED -> CREATING: free slot, find worker, arm creation timer",
      "WORKER_LOST -> CREATING: free slot, find worker, arm creation timer",
      "WORKER_DRAINED_NOW -> MOVING: stop env enter"}},
    {"CLOSING",
     {"ENTERED -> CLOSING: ", "ENTER_FAILED -> CLOSING: ", "EXECUTION_TIMED_OUT -> CLOSING: stop current action",
      "EXITED -> CLOSED: free slot, stop execution timer", "WORKER_LOST -> CLOSED: free slot, stop execution timer"}},
    {"FAILING",
     {"ENTERED -> FAILING: ", "ENTER_FAILED -> FAILING: ", "EXECUTION_TIMED_OUT -> FAILING: stop current action",
      "EXITED -> FAILED: free slot, stop execution timer", "WORKER_LOST -> FAILED: free slot, stop execution timer"}},
    {"CLOSED", {}},
    {"FAILED", {}},
};

std::vector<S> all_states() {
  std::vector<S> out;
  for (size_t s = 0; s < SessionMachineTraits::states; ++s) out.push_back(static_cast<S>(s));
  return out;
}

std::vector<E> all_events() {
  std::vector<E> out;
  for (size_t e = 0; e < SessionMachineTraits::events; ++e) out.push_back(static_cast<E>(e));
  return out;
}

std::string text_of(const SessionTransition& t) {
  return std::string(SessionMachineTraits::name(t.to)) + ": " +
         StateTable<SessionMachineTraits>::action_text(t.actions);
}

/// Every defined transition (not ignored), as (from, event, transition).
struct Step {
  S from;
  E event;
  SessionTransition t;
};
std::vector<Step> steps() {
  std::vector<Step> out;
  for (S s : all_states()) {
    for (E e : all_events()) {
      auto t = SessionMachine::transition(s, e);
      if (!t.ignored) out.push_back({s, e, t});
    }
  }
  return out;
}

}  // namespace

TEST_SUITE("actors.session_machine") {
  TEST_CASE("the session table matches its specification pair by pair, and defines every pair") {
    CHECK(SessionMachineTraits::name(static_cast<S>(SessionMachineTraits::states - 1)) == "FAILED");
    CHECK(SessionMachineTraits::name(static_cast<E>(SessionMachineTraits::events - 1)) == "WORKER_DRAINED_NOW");
    size_t taken = 0;
    for (S state : all_states()) {
      const std::string state_name(SessionMachineTraits::name(state));
      REQUIRE(spec.count(state_name) == 1);
      const auto& takes = spec.at(state_name);
      for (E event : all_events()) {
        const std::string event_name(SessionMachineTraits::name(event));
        CAPTURE(state_name);
        CAPTURE(event_name);
        auto t = SessionMachine::table().transition(state, event);
        REQUIRE(t);  // defined: a transition or an ignored pair, never a rejection
        std::string want;
        for (const auto& line : takes) {
          if (line.starts_with(event_name + " -> ")) want = line.substr(event_name.size() + 4);
        }
        if (want.empty()) {
          CHECK(t->ignored);
          CHECK(t->to == state);
          CHECK(t->actions.size() == 0);
          CHECK_FALSE(t->note.empty());
        } else {
          CHECK_FALSE(t->ignored);
          CHECK(text_of(*t) == want);
          ++taken;
        }
      }
    }
    size_t specified = 0;
    for (const auto& [state, takes] : spec) specified += takes.size();
    CHECK(taken == specified);
    CHECK(SessionMachine::table().rows().size() == SessionMachineTraits::states * SessionMachineTraits::events);
  }

  TEST_CASE("envExit follows every envEnter that ran, unless the worker went with it") {
    // Placed (ENTERING, OPEN), a session ends or moves only through CLOSING, FAILING or MOVING,
    // which run envExit, or by losing its worker.
    for (const auto& step : steps()) {
      if (step.from != S::ENTERING && step.from != S::OPEN) continue;
      CAPTURE(SessionMachineTraits::name(step.from));
      CAPTURE(SessionMachineTraits::name(step.event));
      CHECK_FALSE(SessionMachine::is_terminal(step.t.to));
      const bool exits = step.t.to == S::CLOSING || step.t.to == S::FAILING || step.t.to == S::MOVING;
      CHECK(exits == step.t.actions.contains(A::EXIT_ON_WORKER));
      if (!exits && step.t.to != S::OPEN) CHECK(step.event == E::WORKER_LOST);
    }
  }

  TEST_CASE("tasks dispatch only while it is open; they are released on entering and held on a loss") {
    CHECK(SessionMachine::runs_tasks(S::OPEN));
    for (S s : all_states()) CHECK(SessionMachine::runs_tasks(s) == (s == S::OPEN));
    for (const auto& step : steps()) {
      CAPTURE(SessionMachineTraits::name(step.from));
      CAPTURE(SessionMachineTraits::name(step.event));
      const bool opens = step.from != S::OPEN && step.t.to == S::OPEN;
      CHECK(opens == step.t.actions.contains(A::RELEASE_TASKS));
      if (step.t.to == S::REESTABLISHING) {
        CHECK(step.t.actions.contains(A::HOLD_TASKS));
        CHECK(step.t.actions.contains(A::ARM_REESTABLISH_TIMER));
      }
      if (step.from == S::REESTABLISHING) CHECK(step.t.actions.contains(A::STOP_REESTABLISH_TIMER));
      if (step.from == S::CREATING) CHECK(step.t.actions.contains(A::STOP_LOOKING));
      if (step.t.to == S::CREATING) {
        CHECK(step.t.actions.contains(A::FIND_WORKER));
        CHECK(step.t.actions.contains(A::ARM_CREATION_TIMER));
      }
    }
  }

  TEST_CASE("a session gives its slot back exactly when it stops holding a worker; an over one has no timer left") {
    for (const auto& step : steps()) {
      CAPTURE(SessionMachineTraits::name(step.from));
      CAPTURE(SessionMachineTraits::name(step.event));
      const bool frees = SessionMachine::holds_worker(step.from) && !SessionMachine::holds_worker(step.t.to);
      CHECK(frees == step.t.actions.contains(A::FREE_SLOT));
      if (!SessionMachine::is_terminal(step.t.to)) continue;
      // Never placed (WAITING), or its execution timer is what fired.
      const bool timer_may_run = step.from != S::WAITING && step.event != E::EXECUTION_TIMED_OUT;
      CHECK(timer_may_run == step.t.actions.contains(A::STOP_EXECUTION_TIMER));
    }
    for (E e : all_events()) {
      CHECK(SessionMachine::transition(S::CLOSED, e).ignored);
      CHECK(SessionMachine::transition(S::FAILED, e).ignored);
    }
  }

  TEST_CASE("names parse back to their state") {
    for (S s : all_states()) CHECK(SessionMachine::parse(SessionMachineTraits::name(s)) == s);
    CHECK_FALSE(SessionMachine::parse("OPENED"));
  }
}
