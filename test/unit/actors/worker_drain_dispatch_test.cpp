// Drains through the scheduler's real actors (test/support/dispatch_fixture.hpp): what an
// eventual and an immediate drain do to the invocations a worker holds, an undrain's leftover
// deadline, and drains that outlive a scheduler restart while their worker still runs tasks.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "test/support/dispatch_fixture.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace troupe::test::dispatch;
using namespace std::chrono_literals;

namespace {

WorkerOrder drain(const std::string& shard, bool immediate = false, int64_t deadline_us = 0) {
  WorkerOrder order;
  order.shard_id = shard;
  order.kind = WorkerOrder::DRAIN;
  order.immediate = immediate;
  order.deadline_us = deadline_us;
  return order;
}

WorkerOrder undrain(const std::string& shard) {
  WorkerOrder order;
  order.shard_id = shard;
  order.kind = WorkerOrder::UNDRAIN;
  return order;
}

/// The operator's order as the dispatcher answers it: the worker after it.
WorkerView obey(Scheduler& s, const WorkerOrder& order) {
  auto view = s.fx.ask<WorkerView>(s.dispatcher, operate_atom::value, order);
  REQUIRE_MESSAGE(view, test::why(view));
  return *view;
}

/// The worker's status as `troupe workers` shows it.
std::string status_of(Scheduler& s, const std::string& shard) {
  auto views = s.fx.ask<std::vector<WorkerView>>(s.dispatcher, view_atom::value, shard);
  REQUIRE_MESSAGE(views, test::why(views));
  REQUIRE(views->size() == 1);
  return views->front().status;
}

/// Sends `order` while the store holds its writes back: whether it was answered before they were
/// durable, and then its answer once they are.
std::optional<WorkerView> answered_once_durable(BookedScheduler& b, const WorkerOrder& order, bool& early) {
  auto& fx = b.s.fx;
  b.store->hold();
  fx.self->send(b.s.dispatcher, operate_atom::value, order);
  fx.run();
  std::optional<WorkerView> answer;
  auto receive = [&] {
    fx.self->receive([&](WorkerView& view) { answer = std::move(view); }, [&](const caf::error& e) { FAIL(to_string(e)); },
                     caf::after(std::chrono::seconds(0)) >> [] {});
  };
  receive();
  early = answer.has_value();
  b.store->release();
  fx.run();
  if (!answer) receive();
  return answer;
}

/// w1 (one slot on "jobs") runs the one task of workflow `id`: its invocation, RUNNING.
std::string run_one(Scheduler& s, Worker& w1, const std::string& id) {
  Flow flow(s, id, independent_tasks(1, "jobs", retry_twice));
  flow.start();
  REQUIRE(w1.link->runs.size() == 1);
  w1.link->runs[0].done(false);
  s.fx.run();
  REQUIRE(flow.count("taskRunning:t0") == 1);
  return w1.link->runs[0].invocation.invocation_id;
}

/// The scheduler of `before` restarted on its history and clock: workflow `id` revived.
struct AfterRestart {
  BookedScheduler b;
  std::optional<Flow> revived;

  AfterRestart(BookedScheduler& before, const std::string& id)
      : b(before.store, before.now_us, true, 2) {
    revived.emplace(b.s, id);
  }

  /// w1's process, still running `running`, registering again.
  Worker reconnect(const std::vector<std::string>& running, const std::vector<std::string>& ended = {}) {
    auto link = std::make_shared<FakeWorkerLink>();
    auto registered = b.s.register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), link);
    REQUIRE_MESSAGE(registered, test::why(registered));
    link->answer_running(running, ended);
    b.s.fx.run();
    return Worker{"w1", link, registered->worker};
  }
};

}  // namespace

TEST_SUITE("actors.drain") {
  TEST_CASE("an eventual drain lets what runs finish and gives the worker nothing new; undrain gives it tasks again") {
    BookedScheduler b;
    auto& s = b.s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(s, w1, "wf-first");
    CHECK(obey(s, drain("w1")).status == "DRAINING");
    CHECK(w1.link->interrupts.empty());

    Flow waiting(s, "wf-waiting", independent_tasks(1, "jobs"));
    waiting.start();
    CHECK(s.update(w1, report_of(first, TaskReport::SUCCEEDED, "done")).is(true));
    CHECK(status_of(s, "w1") == "DRAINED");
    CHECK(w1.link->runs.size() == 1);  // the slot came back, but not to a draining worker
    CHECK(waiting.task("t0").state == TaskState::DISPATCHING);

    CHECK(obey(s, undrain("w1")).status == "STARTED");
    REQUIRE(w1.link->runs.size() == 2);
    CHECK(w1.link->runs[1].invocation.workflow_id == "wf-waiting");
  }

  TEST_CASE("an immediate drain interrupts what runs, and its task runs on another worker under the same attempt") {
    BookedScheduler b;
    auto& s = b.s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(s, w1, "wf-moved");
    CHECK(obey(s, drain("w1", true)).status == "DRAINING");
    CHECK(w1.link->interrupts == std::vector<std::string>{first});

    auto w2 = s.connect("w2", {{"jobs", 1}});
    CHECK(w2.link->runs.empty());  // the invocation is w1's until w1 says how it ended
    CHECK(s.update(w1, report_of(first, TaskReport::INTERRUPTED)).is(true));
    CHECK(status_of(s, "w1") == "DRAINED");
    REQUIRE(w2.link->runs.size() == 1);
    CHECK(w2.link->runs[0].invocation.attempt == 1);
    CHECK(w2.link->runs[0].invocation.invocation_id != first);
  }

  TEST_CASE("an undrain before a drain's deadline leaves the deadline without effect") {
    BookedScheduler b;
    auto& s = b.s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    run_one(s, w1, "wf-kept");
    CHECK(obey(s, drain("w1", false, *b.now_us + 5'000'000)).status == "DRAINING");
    s.advance(1s, {&w1});
    *b.now_us += 1'000'000;
    CHECK(obey(s, undrain("w1")).status == "STARTED");
    s.advance(10s, {&w1});
    *b.now_us += 10'000'000;
    CHECK(w1.link->interrupts.empty());
    CHECK(status_of(s, "w1") == "STARTED");
  }

  TEST_CASE("a drain's deadline interrupts what still runs when it passes") {
    BookedScheduler b;
    auto& s = b.s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(s, w1, "wf-late");
    CHECK(obey(s, drain("w1", false, *b.now_us + 5'000'000)).status == "DRAINING");
    s.advance(4s, {&w1});
    CHECK(w1.link->interrupts.empty());
    *b.now_us += 5'000'000;
    s.advance(1s, {&w1});
    CHECK(w1.link->interrupts == std::vector<std::string>{first});
  }

  TEST_CASE("after a scheduler restart, an immediate drain interrupts what its worker still runs once a revived task takes it back") {
    // The interrupt the drain sent may have died with the scheduler: the worker comes back
    // still running the invocation, and an immediate drain must not turn into an eventual one.
    BookedScheduler before;
    auto w1 = before.s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(before.s, w1, "wf-drained");
    obey(before.s, drain("w1", true));

    AfterRestart after(before, "wf-drained");  // the revived task waits for w1 to adopt
    after.b.s.recovered(1);
    auto back = after.reconnect({first});
    CHECK(back.link->interrupts == std::vector<std::string>{first});
    CHECK(after.b.s.update(back, report_of(first, TaskReport::INTERRUPTED)).is(true));
    CHECK(status_of(after.b.s, "w1") == "DRAINED");
    CHECK(after.revived->task("t0").attempt == 1);
    CHECK(after.revived->task("t0").state == TaskState::DISPATCHING);
  }

  TEST_CASE("after a scheduler restart, a drain whose deadline passed meanwhile interrupts what its worker runs on its return") {
    BookedScheduler before;
    auto w1 = before.s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(before.s, w1, "wf-overdue");
    obey(before.s, drain("w1", false, *before.now_us + 2'000'000));

    *before.now_us += 5'000'000;  // the scheduler was down past the deadline
    AfterRestart after(before, "wf-overdue");
    auto back = after.reconnect({first});  // before the revival is over: the task adopts it later
    after.b.s.recovered(1);
    CHECK(back.link->interrupts == std::vector<std::string>{first});
  }

  TEST_CASE("after a scheduler restart, a draining worker whose last invocation ended meanwhile is DRAINED once its outcome lands") {
    BookedScheduler before;
    auto w1 = before.s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(before.s, w1, "wf-ended");
    obey(before.s, drain("w1"));

    AfterRestart after(before, "wf-ended");
    after.b.s.recovered(1);
    auto back = after.reconnect({}, {first});  // it ended; its outcome follows
    CHECK(status_of(after.b.s, "w1") == "DRAINING");
    CHECK(after.b.s.update(back, report_of(first, TaskReport::SUCCEEDED, "done")).is(true));
    CHECK(status_of(after.b.s, "w1") == "DRAINED");
    CHECK(back.link->interrupts.empty());
  }

  TEST_CASE("an order is answered only once the worker's record that keeps it is durable, live worker or not") {
    // A drain acknowledged and then lost with a crash is one the operator believes in and the
    // restarted scheduler does not know.
    BookedScheduler before;
    before.s.connect("w1", {{"jobs", 1}});
    bool early = true;
    auto live = answered_once_durable(before, drain("w1"), early);
    CHECK_FALSE(early);
    REQUIRE(live);
    CHECK(live->status == "DRAINED");

    BookedScheduler after(before.store, before.now_us, false, 2);  // w1 has not come back
    early = true;
    auto offline = answered_once_durable(after, undrain("w1"), early);
    CHECK_FALSE(early);
    REQUIRE(offline);
    CHECK(offline->record.standing == "ACTIVE");
    CHECK(after.record("w1").standing == "ACTIVE");
  }
}
