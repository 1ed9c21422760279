// The worker health machine walked pair by pair against a specification written out here (target
// state and actions), the Bistro rules as invariants, a random walk that checks the actions keep
// the actor's bookkeeping consistent, and the heartbeat timeouts at their boundaries.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "actors/worker/health_machine.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using S = HealthState;
using E = HealthEvent;
using A = HealthAction;

namespace {

struct SpecRow {
  std::string state;
  std::string event;
  std::string to;       ///< "=" for ignored with a note
  std::string actions;  ///< the actions' printed names, in order
};

// A silent or suicidal worker leaves its task lists and waits for its lease; a replaced one's
// invocations fail over at once (the newcomer killed what it left).
const std::string silent = "leave task lists, request suicide, arm health timer";
const std::string replaced = "leave task lists, request suicide, fail over invocations, stop health timer";
const std::string failed_over = "fail over invocations, stop health timer";
// A worker shutting down gets no new tasks; its word that it stopped fails over what is left at
// once: nothing of it runs any more.
const std::string stopping = "stop assigning, arm health timer";
const std::string stopped = "leave task lists, fail over invocations, stop health timer";

/// Every pair: the table defines all 45.
const std::vector<SpecRow> spec = {
    {"NEW", "ASSOCIATED", "HEALTHY", "reconcile invocations, accept tasks, arm health timer"},
    {"NEW", "HEARTBEAT", "NEW", "arm health timer, query running tasks"},
    {"NEW", "HEARTBEAT_LATE", "=", ""},
    {"NEW", "HEARTBEAT_LOST", "MUST_DIE", silent},
    {"NEW", "SUICIDE", "MUST_DIE", silent},
    {"NEW", "REPLACED", "MUST_DIE", replaced},
    {"NEW", "LEASE_EXPIRED", "=", ""},
    {"NEW", "STOP_REQUESTED", "STOPPING", stopping},
    {"NEW", "STOPPED", "MUST_DIE", stopped},

    {"HEALTHY", "ASSOCIATED", "=", ""},
    {"HEALTHY", "HEARTBEAT", "HEALTHY", "arm health timer"},
    {"HEALTHY", "HEARTBEAT_LATE", "UNHEALTHY", "stop assigning, arm health timer"},
    {"HEALTHY", "HEARTBEAT_LOST", "MUST_DIE", silent},
    {"HEALTHY", "SUICIDE", "MUST_DIE", silent},
    {"HEALTHY", "REPLACED", "MUST_DIE", replaced},
    {"HEALTHY", "LEASE_EXPIRED", "=", ""},
    {"HEALTHY", "STOP_REQUESTED", "STOPPING", stopping},
    {"HEALTHY", "STOPPED", "MUST_DIE", stopped},

    {"UNHEALTHY", "ASSOCIATED", "=", ""},
    {"UNHEALTHY", "HEARTBEAT", "HEALTHY", "accept tasks, arm health timer"},
    {"UNHEALTHY", "HEARTBEAT_LATE", "=", ""},
    {"UNHEALTHY", "HEARTBEAT_LOST", "MUST_DIE", silent},
    {"UNHEALTHY", "SUICIDE", "MUST_DIE", silent},
    {"UNHEALTHY", "REPLACED", "MUST_DIE", replaced},
    {"UNHEALTHY", "LEASE_EXPIRED", "=", ""},
    {"UNHEALTHY", "STOP_REQUESTED", "STOPPING", stopping},
    {"UNHEALTHY", "STOPPED", "MUST_DIE", stopped},

    {"STOPPING", "ASSOCIATED", "=", ""},
    {"STOPPING", "HEARTBEAT", "STOPPING", "arm health timer"},
    {"STOPPING", "HEARTBEAT_LATE", "=", ""},
    {"STOPPING", "HEARTBEAT_LOST", "MUST_DIE", silent},
    {"STOPPING", "SUICIDE", "MUST_DIE", silent},
    {"STOPPING", "REPLACED", "MUST_DIE", replaced},
    {"STOPPING", "LEASE_EXPIRED", "=", ""},
    {"STOPPING", "STOP_REQUESTED", "=", ""},
    {"STOPPING", "STOPPED", "MUST_DIE", stopped},

    {"MUST_DIE", "ASSOCIATED", "=", ""},
    {"MUST_DIE", "HEARTBEAT", "=", ""},
    {"MUST_DIE", "HEARTBEAT_LATE", "=", ""},
    {"MUST_DIE", "HEARTBEAT_LOST", "=", ""},
    {"MUST_DIE", "REPLACED", "MUST_DIE", failed_over},
    {"MUST_DIE", "SUICIDE", "=", ""},
    {"MUST_DIE", "LEASE_EXPIRED", "MUST_DIE", failed_over},
    {"MUST_DIE", "STOP_REQUESTED", "=", ""},
    {"MUST_DIE", "STOPPED", "MUST_DIE", failed_over},
};

const SpecRow* find_spec(std::string_view state, std::string_view event) {
  for (const auto& row : spec) {
    if (row.state == state && row.event == event) return &row;
  }
  return nullptr;
}

constexpr S all_states[] = {S::NEW, S::HEALTHY, S::UNHEALTHY, S::MUST_DIE, S::STOPPING};
constexpr E all_events[] = {E::ASSOCIATED, E::HEARTBEAT, E::HEARTBEAT_LATE, E::HEARTBEAT_LOST, E::REPLACED,
                            E::SUICIDE,    E::LEASE_EXPIRED, E::STOP_REQUESTED, E::STOPPED};

bool before(const ActionList<A>& actions, A first, A second) {
  int i = 0, a = -1, b = -1;
  for (A x : actions) {
    if (x == first) a = i;
    if (x == second) b = i;
    ++i;
  }
  return a >= 0 && b >= 0 && a < b;
}

}  // namespace

TEST_SUITE("actors.worker_health") {
  TEST_CASE("the health table matches its specification pair by pair") {
    static_assert(std::size(all_states) == HealthMachineTraits::states);
    static_assert(std::size(all_events) == HealthMachineTraits::events);
    int defined = 0;
    for (S state : all_states) {
      for (E event : all_events) {
        const std::string state_name(HealthMachineTraits::name(state));
        const std::string event_name(HealthMachineTraits::name(event));
        CAPTURE(state_name);
        CAPTURE(event_name);
        auto t = HealthMachine::transition(state, event);
        const SpecRow* want = find_spec(state_name, event_name);
        if (!want) {
          REQUIRE_FALSE(t);
          CHECK(t.error().code == Errc::NOT_ALLOWED_IN_STATE);
          CHECK(t.error().message == event_name + " is not allowed in state " + state_name);
          continue;
        }
        ++defined;
        REQUIRE(t);
        if (want->to == "=") {
          CHECK(t->ignored);
          CHECK(t->to == state);
          CHECK_FALSE(t->note.empty());
        } else {
          CHECK_FALSE(t->ignored);
          CHECK(std::string(HealthMachineTraits::name(t->to)) == want->to);
        }
        CHECK(StateTable<HealthMachineTraits>::action_text(t->actions) == want->actions);
      }
    }
    CHECK(defined == static_cast<int>(spec.size()));
    CHECK(defined == static_cast<int>(HealthMachine::table().rows().size()));
  }

  TEST_CASE("the table keeps Bistro's rules") {
    for (const auto& row : HealthMachine::table().rows()) {
      CAPTURE(HealthMachineTraits::name(row.from));
      CAPTURE(HealthMachineTraits::name(row.event));
      if (row.ignored) {
        CHECK(row.actions.size() == 0);
        continue;
      }
      // MUST_DIE is terminal: only the end of what may still run there is acted on.
      if (row.from == S::MUST_DIE) {
        CHECK((row.event == E::LEASE_EXPIRED || row.event == E::REPLACED || row.event == E::STOPPED));
        CHECK(row.actions.contains(A::FAIL_OVER_INVOCATIONS));
        continue;
      }
      // A worker leaves NEW for a live state only once its running tasks are known.
      if (row.from == S::NEW && row.to != S::NEW && row.to != S::MUST_DIE && row.to != S::STOPPING) {
        CHECK(row.event == E::ASSOCIATED);
        CHECK(before(row.actions, A::RECONCILE, A::ACCEPT_TASKS));
      }
      // Only a heartbeat (or the association) makes a worker HEALTHY; only missing ones harm it.
      if (row.to == S::HEALTHY && row.from != S::HEALTHY) {
        CHECK((row.event == E::HEARTBEAT || row.event == E::ASSOCIATED));
      }
      if (row.to == S::UNHEALTHY) CHECK(row.event == E::HEARTBEAT_LATE);
      // Tasks are offered exactly on becoming HEALTHY; withdrawn on becoming UNHEALTHY, and
      // for good on dying.
      CHECK(row.actions.contains(A::ACCEPT_TASKS) ==
            (row.to == S::HEALTHY && row.from != S::HEALTHY));
      CHECK(row.actions.contains(A::STOP_ASSIGNING) ==
            ((row.from == S::HEALTHY && row.to == S::UNHEALTHY) || row.event == E::STOP_REQUESTED));
      if (row.event == E::STOP_REQUESTED) CHECK(row.to == S::STOPPING);
      // Dying: out of its task lists first, told to die; its invocations fail over at once only
      // when a new instance replaced it or it said it stopped, else the health timer counts down
      // to its lease.
      const bool dies = row.to == S::MUST_DIE;
      const bool nothing_runs = row.event == E::REPLACED || row.event == E::STOPPED;
      CHECK(row.actions.contains(A::LEAVE_TASK_LISTS) == dies);
      CHECK(row.actions.contains(A::REQUEST_SUICIDE) == (dies && row.event != E::STOPPED));
      CHECK(row.actions.contains(A::FAIL_OVER_INVOCATIONS) == (dies && nothing_runs));
      CHECK(row.actions.contains(A::STOP_HEALTH_TIMER) == (dies && nothing_runs));
      CHECK(row.actions.contains(A::ARM_HEALTH_TIMER) == !nothing_runs);
      if (dies && row.event != E::STOPPED) CHECK(before(row.actions, A::LEAVE_TASK_LISTS, A::REQUEST_SUICIDE));
      CHECK(row.actions.contains(A::QUERY_RUNNING_TASKS) ==
            (row.from == S::NEW && row.event == E::HEARTBEAT));
    }
    CHECK(HealthMachine::accepts_tasks(S::HEALTHY));
    for (S s : {S::NEW, S::UNHEALTHY, S::MUST_DIE, S::STOPPING}) CHECK_FALSE(HealthMachine::accepts_tasks(s));
    CHECK(HealthMachine::is_terminal(S::MUST_DIE));
    for (S s : {S::NEW, S::HEALTHY, S::UNHEALTHY, S::STOPPING}) CHECK_FALSE(HealthMachine::is_terminal(s));
  }

  TEST_CASE("random event sequences keep the worker actor's bookkeeping consistent") {
    uint64_t seed = std::random_device{}();
    if (const char* fixed = std::getenv("TROUPE_TEST_SEED"))
      seed = std::strtoull(fixed, nullptr, 10);
    INFO("TROUPE_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 500; ++round) {
      CAPTURE(round);
      // What a thin actor would track by running the actions.
      S state = S::NEW;
      bool offered = false;      // its slots are in its task lists
      bool timer = false;        // the health timer is armed
      bool failed_over = false;  // its invocations were failed over
      bool reconciled = false;
      for (int step = 0; step < 30; ++step) {
        const E event = all_events[rng() % std::size(all_events)];
        const std::string_view from_name = HealthMachineTraits::name(state);
        const std::string_view event_name = HealthMachineTraits::name(event);
        CAPTURE(step);
        CAPTURE(from_name);
        CAPTURE(event_name);
        auto t = HealthMachine::transition(state, event);
        REQUIRE(t);
        for (A a : t->actions) {
          switch (a) {
            case A::ACCEPT_TASKS:
              CHECK_FALSE(offered);
              offered = true;
              break;
            case A::STOP_ASSIGNING:
            case A::LEAVE_TASK_LISTS:
              CHECK(offered == (state == S::HEALTHY));
              offered = false;
              break;
            case A::ARM_HEALTH_TIMER:
              timer = true;
              break;
            case A::STOP_HEALTH_TIMER:
              timer = false;
              break;
            case A::FAIL_OVER_INVOCATIONS:
              CHECK_FALSE(failed_over);
              failed_over = true;
              break;
            case A::RECONCILE:
              CHECK_FALSE(reconciled);
              reconciled = true;
              break;
            case A::QUERY_RUNNING_TASKS:
              CHECK_FALSE(reconciled);
              break;
            case A::REQUEST_SUICIDE:
              CHECK(state != S::MUST_DIE);
              break;
          }
        }
        state = t->to;
        CHECK(offered == HealthMachine::accepts_tasks(state));
        if (failed_over) {
          // The worker actor ends once it holds no invocation.
          CHECK(state == S::MUST_DIE);
          CHECK_FALSE(timer);
          break;
        }
        // Until its invocations fail over, a dying worker's timer counts down to its lease.
        if (state == S::MUST_DIE) CHECK(timer);
        if (state == S::HEALTHY || state == S::UNHEALTHY) {
          CHECK(reconciled);
          CHECK(timer);
        }
        if (state == S::STOPPING) CHECK(timer);
      }
    }
  }

  TEST_CASE("health_after switches exactly at the thresholds") {
    const HealthTimeouts t;  // 1s, 2s, 3s
    REQUIRE(t.validate());
    const Duration us = 1us;
    struct Case {
      S current;
      Duration since;
      S want;
    };
    const std::vector<Case> cases = {
        {S::HEALTHY, 0s, S::HEALTHY},
        {S::HEALTHY, -5s, S::HEALTHY},
        {S::HEALTHY, 2s - us, S::HEALTHY},
        {S::HEALTHY, 2s, S::UNHEALTHY},
        {S::HEALTHY, 3s - us, S::UNHEALTHY},
        {S::HEALTHY, 3s, S::MUST_DIE},
        {S::HEALTHY, 1h, S::MUST_DIE},
        {S::UNHEALTHY, 0s, S::HEALTHY},
        {S::UNHEALTHY, 2s - us, S::HEALTHY},
        {S::UNHEALTHY, 2s, S::UNHEALTHY},
        {S::UNHEALTHY, 3s - us, S::UNHEALTHY},
        {S::UNHEALTHY, 3s, S::MUST_DIE},
        {S::NEW, 0s, S::NEW},
        {S::NEW, 2s, S::NEW},
        {S::NEW, 3s - us, S::NEW},
        {S::NEW, 3s, S::MUST_DIE},
        {S::MUST_DIE, 0s, S::MUST_DIE},
        {S::MUST_DIE, -1s, S::MUST_DIE},
    };
    for (const auto& c : cases) {
      CAPTURE(HealthMachineTraits::name(c.current));
      CAPTURE(c.since.count());
      CHECK(health_after(c.current, c.since, t) == c.want);
    }

    SUBCASE("custom timeouts move the thresholds") {
      const HealthTimeouts slow{5s, 12s, 30s};
      REQUIRE(slow.validate());
      CHECK(health_after(S::HEALTHY, 12s - us, slow) == S::HEALTHY);
      CHECK(health_after(S::HEALTHY, 12s, slow) == S::UNHEALTHY);
      CHECK(health_after(S::UNHEALTHY, 30s - us, slow) == S::UNHEALTHY);
      CHECK(health_after(S::NEW, 30s, slow) == S::MUST_DIE);
    }
  }

  TEST_CASE("the health timer's events and delays follow health_after") {
    const HealthTimeouts t;
    using Opt = std::optional<E>;
    CHECK(health_timeout_event(S::HEALTHY, 2s - 1us, t) == std::nullopt);
    CHECK(health_timeout_event(S::HEALTHY, 2s, t) == Opt(E::HEARTBEAT_LATE));
    CHECK(health_timeout_event(S::HEALTHY, 3s, t) == Opt(E::HEARTBEAT_LOST));
    CHECK(health_timeout_event(S::UNHEALTHY, 2s, t) == std::nullopt);
    CHECK(health_timeout_event(S::UNHEALTHY, 1s, t) == std::nullopt);  // only a heartbeat heals
    CHECK(health_timeout_event(S::UNHEALTHY, 3s, t) == Opt(E::HEARTBEAT_LOST));
    CHECK(health_timeout_event(S::NEW, 2s, t) == std::nullopt);
    CHECK(health_timeout_event(S::NEW, 3s, t) == Opt(E::HEARTBEAT_LOST));
    CHECK(health_timeout_event(S::MUST_DIE, 30s - 1us, t) == std::nullopt);
    CHECK(health_timeout_event(S::MUST_DIE, 30s, t) == Opt(E::LEASE_EXPIRED));

    CHECK(until_health_timeout(S::HEALTHY, 0s, t) == Duration(2s));
    CHECK(until_health_timeout(S::HEALTHY, 1500ms, t) == Duration(500ms));
    CHECK(until_health_timeout(S::HEALTHY, 2s, t) == Duration(0));
    CHECK(until_health_timeout(S::HEALTHY, 10s, t) == Duration(0));
    CHECK(until_health_timeout(S::UNHEALTHY, 2s, t) == Duration(1s));
    CHECK(until_health_timeout(S::NEW, 0s, t) == Duration(3s));
    CHECK(until_health_timeout(S::NEW, -1s, t) == Duration(3s));
    CHECK(until_health_timeout(S::MUST_DIE, 3s, t) == Duration(27s));
    CHECK(until_health_timeout(S::MUST_DIE, 31s, t) == Duration(0));
  }

  TEST_CASE("a worker that stops heartbeating is detected within three intervals") {
    // Drive the scheduler's side the way its actor would: heartbeats every interval, then none;
    // the one health timer is armed from until_health_timeout and feeds health_timeout_event.
    const HealthTimeouts t;
    S state = S::NEW;
    Duration now{0}, last_heartbeat{0}, timer_at{-1};
    auto apply = [&](E event) {
      auto tr = HealthMachine::transition(state, event);
      REQUIRE(tr);
      state = tr->to;
      if (tr->actions.contains(A::ARM_HEALTH_TIMER)) {
        timer_at = now + *until_health_timeout(state, now - last_heartbeat, t);
      }
      if (tr->actions.contains(A::STOP_HEALTH_TIMER)) timer_at = Duration(-1);
    };
    apply(E::HEARTBEAT);  // registration
    apply(E::ASSOCIATED);
    CHECK(state == S::HEALTHY);
    for (int beat = 1; beat <= 10; ++beat) {
      now = beat * t.heartbeat_interval;
      last_heartbeat = now;
      apply(E::HEARTBEAT);
      CHECK(state == S::HEALTHY);
    }
    std::vector<std::pair<Duration, S>> seen;
    while (timer_at >= Duration(0)) {
      now = timer_at;
      timer_at = Duration(-1);
      if (auto event = health_timeout_event(state, now - last_heartbeat, t)) {
        apply(*event);
        seen.emplace_back(now - last_heartbeat, state);
      }
    }
    // Declared dead within three intervals; its invocations fail over when its lease runs out.
    REQUIRE(seen.size() == 3);
    CHECK(seen[0] == std::pair<Duration, S>(2s, S::UNHEALTHY));
    CHECK(seen[1] == std::pair<Duration, S>(3s, S::MUST_DIE));
    CHECK(seen[1].first <= 3 * t.heartbeat_interval);
    CHECK(seen[2] == std::pair<Duration, S>(t.lease, S::MUST_DIE));
  }

  TEST_CASE("inconsistent timeouts are rejected with the values and an example") {
    for (HealthTimeouts bad : {HealthTimeouts{0s, 2s, 3s}, HealthTimeouts{2s, 2s, 3s},
                               HealthTimeouts{1s, 3s, 3s}, HealthTimeouts{1s, 4s, 3s},
                               HealthTimeouts{1s, 2s, 3s, 2s}}) {
      auto checked = bad.validate();
      REQUIRE_FALSE(checked);
      CHECK(checked.error().code == Errc::INVALID_ARGUMENT);
      CHECK(checked.error().message.find("e.g. 1s, 2s, 3s, 30s") != std::string::npos);
    }
    auto bad = HealthTimeouts{1s, 4s, 3s}.validate();
    CHECK(bad.error().message.find("unhealthy after (4s)") != std::string::npos);
  }

  TEST_CASE("the health table prints as Markdown and Graphviz") {
    auto md = HealthMachine::table().markdown("Worker health");
    CHECK(md.find("### Worker health") == 0);
    CHECK(md.find("| NEW | ASSOCIATED | HEALTHY | reconcile invocations, accept tasks, arm health "
                  "timer |") != std::string::npos);
    CHECK(md.find("(ignored: already unhealthy)") != std::string::npos);
    auto dot = HealthMachine::table().dot("worker_health");
    CHECK(dot.find("digraph worker_health {") == 0);
    CHECK(dot.find("HEALTHY -> UNHEALTHY [label=\"HEARTBEAT_LATE\"];") != std::string::npos);
    // Ignored pairs draw no edge; the end of a dead instance's lease does.
    CHECK(dot.find("MUST_DIE -> MUST_DIE [label=\"HEARTBEAT\"]") == std::string::npos);
    CHECK(dot.find("MUST_DIE -> MUST_DIE [label=\"LEASE_EXPIRED\"]") != std::string::npos);
  }
}
