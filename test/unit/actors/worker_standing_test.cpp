// The worker standing machine walked pair by pair against a specification written out here, the
// status a worker shows for each health and standing, the failure streak that quarantines a
// worker (distinct tasks in a row, probation after a quarantine, the doubling backoff), and
// operators' orders as the table takes them, for live workers and on an offline one's record.
#include <doctest/doctest.h>

#include <iterator>
#include <string>
#include <vector>

#include "actors/worker/failure_streak.hpp"
#include "actors/worker/standing_machine.hpp"
#include "actors/worker/worker_orders.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using S = Standing;
using E = StandingEvent;

namespace {

struct SpecRow {
  std::string state;
  std::string event;
  std::string to;       ///< "=" for ignored with a note
  std::string actions;  ///< the actions' printed names, in order
};

const std::string start_drain = "stop assigning, arm drain deadline, check idle";
const std::string drain_now = "stop assigning, interrupt running, check idle";

/// Every pair: the table defines all 28 and rejects none.
const std::vector<SpecRow> spec = {
    {"ACTIVE", "DRAIN", "DRAINING", start_drain},
    {"ACTIVE", "DRAIN_NOW", "DRAINING", drain_now},
    {"ACTIVE", "UNDRAIN", "=", ""},
    {"ACTIVE", "IDLE", "=", ""},
    {"ACTIVE", "FAILURE_STREAK", "QUARANTINED", "stop assigning, arm quarantine timer"},
    {"ACTIVE", "QUARANTINE_OVER", "=", ""},
    {"ACTIVE", "FORGIVEN", "ACTIVE", "clear failures"},
    {"DRAINING", "DRAIN", "DRAINING", "arm drain deadline, check idle"},
    {"DRAINING", "DRAIN_NOW", "DRAINING", "interrupt running, check idle"},
    {"DRAINING", "UNDRAIN", "ACTIVE", "accept tasks"},
    {"DRAINING", "IDLE", "DRAINED", "end drain"},
    {"DRAINING", "FAILURE_STREAK", "=", ""},
    {"DRAINING", "QUARANTINE_OVER", "=", ""},
    {"DRAINING", "FORGIVEN", "DRAINING", "clear failures"},
    {"DRAINED", "DRAIN", "DRAINED", "end drain"},
    {"DRAINED", "DRAIN_NOW", "DRAINED", "end drain"},
    {"DRAINED", "UNDRAIN", "ACTIVE", "accept tasks"},
    {"DRAINED", "IDLE", "=", ""},
    {"DRAINED", "FAILURE_STREAK", "=", ""},
    {"DRAINED", "QUARANTINE_OVER", "=", ""},
    {"DRAINED", "FORGIVEN", "DRAINED", "clear failures"},
    {"QUARANTINED", "DRAIN", "DRAINING", "arm drain deadline, check idle"},
    {"QUARANTINED", "DRAIN_NOW", "DRAINING", "interrupt running, check idle"},
    {"QUARANTINED", "UNDRAIN", "=", ""},
    {"QUARANTINED", "IDLE", "=", ""},
    {"QUARANTINED", "FAILURE_STREAK", "=", ""},
    {"QUARANTINED", "QUARANTINE_OVER", "ACTIVE", "accept tasks"},
    {"QUARANTINED", "FORGIVEN", "ACTIVE", "clear failures, accept tasks"},
};

constexpr S all_states[] = {S::ACTIVE, S::DRAINING, S::DRAINED, S::QUARANTINED};
constexpr E all_events[] = {E::DRAIN, E::DRAIN_NOW, E::UNDRAIN, E::IDLE, E::FAILURE_STREAK, E::QUARANTINE_OVER,
                            E::FORGIVEN};

FailureNote failure(const std::string& task) { return {task, "ExitCode:1", 0}; }

}  // namespace

TEST_SUITE("actors.worker_standing") {
  TEST_CASE("the standing table matches its specification pair by pair, and defines every pair") {
    static_assert(std::size(all_states) == StandingMachineTraits::states);
    static_assert(std::size(all_events) == StandingMachineTraits::events);
    size_t checked = 0;
    for (S state : all_states) {
      for (E event : all_events) {
        const std::string state_name(StandingMachineTraits::name(state));
        const std::string event_name(StandingMachineTraits::name(event));
        CAPTURE(state_name);
        CAPTURE(event_name);
        const SpecRow* want = nullptr;
        for (const auto& row : spec) {
          if (row.state == state_name && row.event == event_name) want = &row;
        }
        REQUIRE(want != nullptr);
        auto t = StandingMachine::table().transition(state, event);
        REQUIRE(t);
        if (want->to == "=") {
          CHECK(t->ignored);
          CHECK(t->to == state);
          CHECK_FALSE(t->note.empty());
        } else {
          CHECK_FALSE(t->ignored);
          CHECK(std::string(StandingMachineTraits::name(t->to)) == want->to);
        }
        CHECK(StateTable<StandingMachineTraits>::action_text(t->actions) == want->actions);
        ++checked;
      }
    }
    CHECK(checked == spec.size());
    CHECK(StandingMachine::table().rows().size() == spec.size());
  }

  TEST_CASE("only an ACTIVE worker takes tasks, and a state leaves assignment only by withdrawing its slots") {
    for (S s : all_states) CHECK(StandingMachine::accepts_tasks(s) == (s == S::ACTIVE));
    for (const auto& row : StandingMachine::table().rows()) {
      if (row.ignored) continue;
      CAPTURE(StandingMachineTraits::name(row.from));
      CAPTURE(StandingMachineTraits::name(row.event));
      const bool leaves = StandingMachine::accepts_tasks(row.from) && !StandingMachine::accepts_tasks(row.to);
      const bool returns = !StandingMachine::accepts_tasks(row.from) && StandingMachine::accepts_tasks(row.to);
      CHECK(leaves == row.actions.contains(StandingAction::STOP_ASSIGNING));
      CHECK(returns == row.actions.contains(StandingAction::ACCEPT_TASKS));
    }
  }

  TEST_CASE("names parse back to their standing") {
    for (S s : all_states) CHECK(StandingMachine::parse(StandingMachineTraits::name(s)) == s);
    CHECK_FALSE(StandingMachine::parse("PAUSED").has_value());
  }

  TEST_CASE("a worker's status joins Deadline's names with its health and standing") {
    CHECK(worker_status(HealthState::HEALTHY, S::ACTIVE, false) == "STARTED");
    CHECK(worker_status(HealthState::NEW, S::ACTIVE, false) == "STARTED");
    CHECK(worker_status(HealthState::UNHEALTHY, S::ACTIVE, false) == "NOT_RESPONDING");
    CHECK(worker_status(HealthState::MUST_DIE, S::ACTIVE, false) == "NOT_RESPONDING");
    CHECK(worker_status(HealthState::MUST_DIE, S::DRAINED, true) == "STOPPED");
    CHECK(worker_status(HealthState::STOPPING, S::DRAINED, false) == "STOPPING");
    CHECK(worker_status(HealthState::HEALTHY, S::DRAINING, false) == "DRAINING");
    CHECK(worker_status(HealthState::HEALTHY, S::DRAINED, false) == "DRAINED");
    CHECK(worker_status(HealthState::HEALTHY, S::QUARANTINED, false) == "QUARANTINED");
  }

  TEST_CASE("the failure streak counts distinct tasks in a row; a success starts it over") {
    QuarantinePolicy policy;
    policy.failures = 3;
    FailureStreak streak;
    CHECK_FALSE(streak.failed(failure("wf/a"), policy));
    // One task failing again and again is that task's problem, not the worker's.
    CHECK_FALSE(streak.failed(failure("wf/a"), policy));
    CHECK_FALSE(streak.failed(failure("wf/a"), policy));
    CHECK_FALSE(streak.failed(failure("wf/b"), policy));
    CHECK(streak.distinct_tasks() == 2);
    streak.succeeded();
    CHECK(streak.failures().empty());
    CHECK_FALSE(streak.failed(failure("wf/b"), policy));
    CHECK_FALSE(streak.failed(failure("wf/c"), policy));
    CHECK(streak.failed(failure("wf/d"), policy));
    CHECK(streak.failures().size() == 3);
  }

  TEST_CASE("quarantines double up to the cap; after one, the next failure quarantines again") {
    QuarantinePolicy policy;
    policy.failures = 2;
    policy.backoff = 1min;
    policy.max_backoff = 5min;
    FailureStreak streak;
    CHECK_FALSE(streak.failed(failure("a"), policy));
    CHECK(streak.failed(failure("b"), policy));
    CHECK(streak.start_quarantine(policy) == Duration(1min));
    CHECK(streak.failed(failure("c"), policy));  // on probation
    CHECK(streak.start_quarantine(policy) == Duration(2min));
    CHECK(streak.start_quarantine(policy) == Duration(4min));
    CHECK(streak.start_quarantine(policy) == Duration(5min));
    CHECK(streak.quarantines() == 4);
    streak.clear();  // forgiven
    CHECK(streak.quarantines() == 0);
    CHECK_FALSE(streak.failed(failure("a"), policy));
    CHECK(streak.start_quarantine(policy) == Duration(1min));
  }

  TEST_CASE("a policy of 0 failures never quarantines, and the streak keeps at least its count") {
    QuarantinePolicy never;
    never.failures = 0;
    FailureStreak streak;
    for (int i = 0; i < 50; ++i) CHECK_FALSE(streak.failed(failure("t" + std::to_string(i)), never));
    CHECK(streak.failures().size() == FailureStreak::kept);
    QuarantinePolicy many;
    many.failures = 12;
    FailureStreak long_streak;
    for (int i = 0; i < 11; ++i) CHECK_FALSE(long_streak.failed(failure("t" + std::to_string(i)), many));
    CHECK(long_streak.failed(failure("t11"), many));
  }

  TEST_CASE("a streak loaded from a record keeps as many failures as its policy counts") {
    QuarantinePolicy many;
    many.failures = 12;
    std::vector<FailureNote> notes;
    for (int i = 0; i < 11; ++i) notes.push_back(failure("t" + std::to_string(i)));
    FailureStreak loaded(notes, 0, many);
    CHECK(loaded.failures().size() == 11);
    CHECK(loaded.failed(failure("t11"), many));  // the twelfth distinct task, as without a restart
  }

  TEST_CASE("orders: an unknown kind and an undrain of a quarantined worker are refused, saying what to do") {
    WorkerOrder unknown;
    unknown.shard_id = "w1";
    unknown.kind = static_cast<WorkerOrderKind>(7);
    auto event = event_of(unknown);
    REQUIRE_FALSE(event);
    CHECK(event.error().code == Errc::INVALID_ARGUMENT);

    WorkerOrder undrain{"w1", WorkerOrderKind::UNDRAIN};
    auto refused = admissible(S::QUARANTINED, undrain);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Errc::NOT_ALLOWED_IN_STATE);
    CHECK(refused.error().message == "worker 'w1' is QUARANTINED, not drained: `troupe worker forgive w1` ends a quarantine");
    CHECK(admissible(S::ACTIVE, undrain));  // done already: taken
    CHECK(admissible(S::DRAINED, undrain));
  }

  TEST_CASE("orders: a drain starts afresh, a re-drain replaces its terms, --exit holds until the drain ends") {
    storage::WorkerDrainRecord drain;
    WorkerOrder first{"w1", WorkerOrderKind::DRAIN, false, 5'000, true};
    apply_to_drain(drain, S::ACTIVE, first, 100);
    CHECK(drain == storage::WorkerDrainRecord{false, 5'000, true, 100});
    WorkerOrder again{"w1", WorkerOrderKind::DRAIN, true, 0, false};
    apply_to_drain(drain, S::DRAINING, again, 200);
    CHECK(drain == storage::WorkerDrainRecord{true, 0, true, 100});
    apply_to_drain(drain, S::DRAINING, WorkerOrder{"w1", WorkerOrderKind::UNDRAIN}, 300);
    CHECK(drain == storage::WorkerDrainRecord{});
    storage::WorkerDrainRecord old{false, 0, true, 50};  // an earlier drain's, left in a quarantined worker's memory
    apply_to_drain(old, S::QUARANTINED, WorkerOrder{"w1", WorkerOrderKind::DRAIN}, 400);
    CHECK(old == storage::WorkerDrainRecord{false, 0, false, 400});
  }

  TEST_CASE("orders on an offline worker's record: a drain is over at once unless the worker may still run tasks") {
    storage::WorkerRecord record;
    record.standing = "ACTIVE";
    WorkerOrder leave{"w1", WorkerOrderKind::DRAIN, false, 0, true};
    REQUIRE(apply_offline(record, leave, 10, false));
    CHECK(record.standing == "DRAINED");
    CHECK_FALSE(record.drain.exit_when_drained);  // no process to stop

    storage::WorkerRecord returning;
    returning.standing = "ACTIVE";
    REQUIRE(apply_offline(returning, leave, 10, true));
    CHECK(returning.standing == "DRAINING");  // it may come back running what a revived task takes back
    CHECK(returning.drain.exit_when_drained);

    REQUIRE(apply_offline(record, WorkerOrder{"w1", WorkerOrderKind::UNDRAIN}, 20, false));
    CHECK(record.standing == "ACTIVE");
    CHECK(record.drain == storage::WorkerDrainRecord{});

    storage::WorkerRecord quarantined;
    quarantined.standing = "QUARANTINED";
    quarantined.quarantined_until_us = 99;
    quarantined.failures = {failure("t1")};
    CHECK_FALSE(apply_offline(quarantined, WorkerOrder{"w1", WorkerOrderKind::UNDRAIN}, 30, false));
    CHECK(quarantined.standing == "QUARANTINED");
    REQUIRE(apply_offline(quarantined, WorkerOrder{"w1", WorkerOrderKind::FORGIVE}, 30, false));
    CHECK(quarantined.standing == "ACTIVE");
    CHECK(quarantined.failures.empty());
    CHECK(quarantined.quarantined_until_us == 0);
  }
}
