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
  order.kind = WorkerOrderKind::DRAIN;
  order.immediate = immediate;
  order.deadline_us = deadline_us;
  return order;
}

WorkerOrder undrain(const std::string& shard) {
  WorkerOrder order;
  order.shard_id = shard;
  order.kind = WorkerOrderKind::UNDRAIN;
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

/// The scheduler of `before` restarted on its history and clock. Its revival is played by hand:
/// revive() brings workflow `id` back (its task then waits for w1 to take its invocation back),
/// and the worker may register before or after that.
struct AfterRestart {
  BookedScheduler b;
  std::optional<Flow> revived;

  explicit AfterRestart(BookedScheduler& before) : b(before.store, before.now_us, true, 2) {}

  /// Revives workflow `id` and ends the revival.
  void revive(const std::string& id) {
    revived.emplace(b.s, id);
    b.s.recovered(1);
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

    AfterRestart after(before);
    after.revive("wf-drained");  // the revived task waits for w1 to take its invocation back
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
    AfterRestart after(before);
    after.revive("wf-overdue");
    auto back = after.reconnect({first});
    CHECK(back.link->interrupts == std::vector<std::string>{first});
  }

  TEST_CASE("after a scheduler restart, a draining worker whose last invocation ended meanwhile is DRAINED once its outcome lands") {
    BookedScheduler before;
    auto w1 = before.s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(before.s, w1, "wf-ended");
    obey(before.s, drain("w1"));

    AfterRestart after(before);
    after.revive("wf-ended");
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
    CHECK(offline->status == "NOT_RESPONDING");  // no process holds it: not DRAINED, not STARTED
    CHECK(after.record("w1").standing == "ACTIVE");
  }

  TEST_CASE("after a scheduler restart, a draining worker back before its task was revived is not DRAINED while it runs it") {
    BookedScheduler before;
    auto w1 = before.s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(before.s, w1, "wf-early");
    obey(before.s, drain("w1"));

    AfterRestart after(before);
    auto back = after.reconnect({first});  // nobody has claimed it yet: it may still be taken back
    CHECK(status_of(after.b.s, "w1") == "DRAINING");
    after.revive("wf-early");
    CHECK(status_of(after.b.s, "w1") == "DRAINING");
    CHECK(back.link->interrupts.empty());  // an eventual drain lets it finish
    CHECK(after.b.s.update(back, report_of(first, TaskReport::SUCCEEDED, "done")).is(true));
    CHECK(status_of(after.b.s, "w1") == "DRAINED");
  }

  TEST_CASE("after a scheduler restart, an immediate drain interrupts what its worker runs before any task has claimed it") {
    BookedScheduler before;
    auto w1 = before.s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(before.s, w1, "wf-unclaimed");
    obey(before.s, drain("w1", true));

    AfterRestart after(before);
    auto back = after.reconnect({first});
    CHECK(back.link->interrupts == std::vector<std::string>{first});
    after.revive("wf-unclaimed");
    CHECK(after.b.s.update(back, report_of(first, TaskReport::INTERRUPTED)).is(true));
    CHECK(status_of(after.b.s, "w1") == "DRAINED");
    CHECK(after.revived->task("t0").attempt == 1);
  }

  TEST_CASE("draining a draining worker again replaces its deadline: without one, the earlier deadline is void") {
    BookedScheduler b;
    auto& s = b.s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    run_one(s, w1, "wf-redrained");
    obey(s, drain("w1", false, *b.now_us + 5'000'000));
    obey(s, drain("w1"));
    s.advance(10s, {&w1});
    *b.now_us += 10'000'000;
    CHECK(w1.link->interrupts.empty());
    CHECK(status_of(s, "w1") == "DRAINING");
  }

  TEST_CASE("an undrain ends the drain: a later drain without --exit does not stop the worker") {
    BookedScheduler b;
    auto& s = b.s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    auto leaving = drain("w1");
    leaving.exit_when_drained = true;
    CHECK(obey(s, leaving).status == "DRAINED");
    CHECK(w1.link->stop_requests.size() == 1);
    CHECK(obey(s, undrain("w1")).status == "STARTED");
    CHECK(obey(s, drain("w1")).status == "DRAINED");
    CHECK(w1.link->stop_requests.size() == 1);
  }

  TEST_CASE("a draining worker that dies is DRAINED once what it ran has failed over") {
    BookedScheduler b;
    auto& s = b.s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    run_one(s, w1, "wf-orphaned");
    obey(s, drain("w1"));
    s.advance(60s);  // silent: MUST_DIE, then its lease runs out and the invocation fails over
    CHECK(b.record("w1").standing == "DRAINED");
    CHECK(status_of(s, "w1") == "NOT_RESPONDING");
  }

  TEST_CASE("a quarantine outlasts a scheduler restart until its backoff runs out; an undrain does not end it") {
    const QuarantinePolicy one_failure{1, std::chrono::minutes(1), std::chrono::hours(1)};
    BookedScheduler before(std::make_shared<storage::MemoryHistoryStore>(), std::make_shared<int64_t>(1'000), false, 1,
                           one_failure);
    auto w1 = before.s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(before.s, w1, "wf-bad");
    CHECK(before.s.update(w1, report_of(first, TaskReport::FAILED)).is(true));
    CHECK(status_of(before.s, "w1") == "QUARANTINED");
    auto refused = before.s.fx.ask<WorkerView>(before.s.dispatcher, operate_atom::value, undrain("w1"));
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Errc::NOT_ALLOWED_IN_STATE);
    CHECK(refused.error().message.find("`troupe worker forgive w1` ends a quarantine") != std::string::npos);

    *before.now_us += 30'000'000;  // half its backoff later, the scheduler restarts
    BookedScheduler after(before.store, before.now_us, false, 2, one_failure);
    auto back = after.s.connect("w1", {{"jobs", 1}});
    CHECK(status_of(after.s, "w1") == "QUARANTINED");
    after.s.advance(29s, {&back});
    CHECK(status_of(after.s, "w1") == "QUARANTINED");
    after.s.advance(2s, {&back});
    CHECK(status_of(after.s, "w1") == "STARTED");
    CHECK(after.record("w1").quarantined_until_us == 0);
  }

  TEST_CASE("right after a scheduler restart, a drain of a worker that has not come back waits for it, and interrupts what it runs then") {
    BookedScheduler before;
    auto w1 = before.s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(before.s, w1, "wf-away");

    AfterRestart after(before);
    after.revive("wf-away");  // its task waits to take the invocation back from w1
    auto view = obey(after.b.s, drain("w1", true));
    CHECK(view.record.standing == "DRAINING");  // not DRAINED: w1 may come back running it
    auto back = after.reconnect({first});
    CHECK(back.link->interrupts == std::vector<std::string>{first});
    CHECK(after.b.s.update(back, report_of(first, TaskReport::INTERRUPTED)).is(true));
    CHECK(status_of(after.b.s, "w1") == "DRAINED");
  }

  TEST_CASE("the same worker reconnecting hears an immediate drain's interrupt again, and its record says DRAINED") {
    BookedScheduler b;
    auto& s = b.s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    const std::string first = run_one(s, w1, "wf-reconnected");
    obey(s, drain("w1", true));
    REQUIRE(w1.link->interrupts == std::vector<std::string>{first});  // lost with the connection

    auto link = std::make_shared<FakeWorkerLink>();
    auto again = s.register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), link);
    REQUIRE_MESSAGE(again, test::why(again));
    link->answer_running({first});
    s.fx.run();
    CHECK(link->interrupts == std::vector<std::string>{first});
    Worker w1_again{"w1", link, again->worker};
    CHECK(s.update(w1_again, report_of(first, TaskReport::INTERRUPTED)).is(true));
    CHECK(status_of(s, "w1") == "DRAINED");

    // A reconnection writes STARTED to the record; the worker's actor writes what it is.
    REQUIRE(s.register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), std::make_shared<FakeWorkerLink>()));
    CHECK(b.record("w1").status == "DRAINED");
  }

  TEST_CASE("a replaced instance cannot write over its successor's record") {
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    WorkerBook book(store, [] { return int64_t{1'000}; });
    book.registered(worker_info("w1", "instance-1", {{"jobs", 1}}));
    book.registered(worker_info("w1", "instance-2", {{"jobs", 1}}));
    CHECK_FALSE(book.update("w1", "instance-1", [](storage::WorkerRecord& r) { r.standing = "DRAINED"; }));
    book.set_status("w1", "instance-1", "NOT_RESPONDING");
    auto record = book.find("w1");
    REQUIRE(record);
    CHECK(record->standing != "DRAINED");
    CHECK(record->status == "STARTED");
    CHECK(book.update("w1", "instance-2", [](storage::WorkerRecord& r) { r.standing = "DRAINED"; }));
    CHECK(book.update("w1", "", [](storage::WorkerRecord& r) { r.standing = "ACTIVE"; }));  // the dispatcher's, offline
    CHECK(book.find("w1")->standing == "ACTIVE");
  }
}

namespace {

/// A worker of one session slot and one slot of list "default", HEALTHY when this returns.
Worker session_worker(Scheduler& s, const std::string& shard) {
  auto info = worker_info(shard, "instance-1", {{"default", 1}});
  info.max_concurrent_sessions = 1;
  auto link = std::make_shared<FakeWorkerLink>();
  auto registered = s.register_worker(info, link);
  REQUIRE_MESSAGE(registered, test::why(registered));
  link->answer_running();
  s.fx.run();
  return Worker{shard, link, registered->worker};
}

/// Tasks a then b in session "s" with envEnter and envExit; a worker it loses fails it (no
/// recreation), so only a move can take it elsewhere.
const std::string session_of_two = R"({"name": "pair", "tasks": [
    {"name": "a", "handler": "noop"}, {"name": "b", "handler": "noop", "dependsOn": ["a"]}],
  "sessions": [{"name": "s", "tasks": ["a", "b"], "envEnter": {"handler": "noop"}, "envExit": {"handler": "noop"}}]})";

TaskReport succeeded(const std::string& invocation_id = {}) {
  TaskReport report;
  report.invocation_id = invocation_id;
  report.kind = TaskReport::SUCCEEDED;
  return report;
}

/// The session's pair of workers: `held` took it first, `other` did not.
struct SessionPair {
  Worker held;
  Worker other;
};

SessionPair placed_session(Scheduler& s, Flow& flow) {
  auto w1 = session_worker(s, "w1");
  auto w2 = session_worker(s, "w2");
  flow.start();
  REQUIRE(w1.link->session_opens.size() + w2.link->session_opens.size() == 1);
  return w1.link->session_opens.size() == 1 ? SessionPair{w1, w2} : SessionPair{w2, w1};
}

}  // namespace

TEST_SUITE("actors.drain") {
  TEST_CASE("an eventual drain moves a session: its running task finishes, envExit runs there, then the session opens on another worker") {
    BookedScheduler b;
    auto& s = b.s;
    Flow flow(s, "wf-drain-session", session_of_two);
    auto [held, other] = placed_session(s, flow);
    held.link->session_opens[0].done(succeeded());  // envEnter
    s.fx.run();
    REQUIRE(held.link->runs.size() == 1);
    const Invocation a = held.link->runs[0].invocation;
    held.link->runs[0].done(false);
    s.fx.run();

    obey(s, drain(held.shard));
    // The session closes there at once; envExit waits on the worker for the running task.
    REQUIRE(held.link->session_closes.size() == 1);
    CHECK(held.link->interrupts.empty());
    REQUIRE(s.update(held, report_of(a.invocation_id, TaskReport::SUCCEEDED)).is(true));
    CHECK(held.link->runs.size() == 1);  // b waits for the session's next worker
    CHECK(status_of(s, held.shard) == "DRAINING");  // the session holds its slot until envExit ended
    CHECK(other.link->session_opens.empty());

    held.link->session_closes[0].done(std::optional<TaskReport>(succeeded()));  // envExit
    s.fx.run();
    CHECK(status_of(s, held.shard) == "DRAINED");
    REQUIRE(other.link->session_opens.size() == 1);
    CHECK(other.link->session_opens[0].session.env_enter.attempt == 2);
    other.link->session_opens[0].done(succeeded());
    s.fx.run();
    REQUIRE(other.link->runs.size() == 1);
    CHECK(other.link->runs[0].invocation.task_name == "b");
    other.link->runs[0].done(false);
    s.fx.run();
    REQUIRE(s.update(other, report_of(other.link->runs[0].invocation.invocation_id, TaskReport::SUCCEEDED)).is(true));
    REQUIRE(other.link->session_closes.size() == 1);
    other.link->session_closes[0].done(std::optional<TaskReport>(succeeded()));
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
    CHECK(flow.count("sessionWorkerDrained:s") == 1);
    CHECK(flow.count("sessionWorkerLost:s") == 0);
    CHECK(flow.task("a").attempt == 1);
    CHECK(flow.task("b").attempt == 1);
  }

  TEST_CASE("an immediate drain moves a session at once: its running task is interrupted and runs again in the moved session under the same attempt") {
    BookedScheduler b;
    auto& s = b.s;
    Flow flow(s, "wf-drain-session-now", session_of_two);
    auto [held, other] = placed_session(s, flow);
    held.link->session_opens[0].done(succeeded());
    s.fx.run();
    REQUIRE(held.link->runs.size() == 1);
    const Invocation a = held.link->runs[0].invocation;
    held.link->runs[0].done(false);
    s.fx.run();

    obey(s, drain(held.shard, true));
    CHECK(held.link->interrupts == std::vector<std::string>{a.invocation_id});
    REQUIRE(held.link->session_closes.size() == 1);
    TaskReport interrupted = report_of(a.invocation_id, TaskReport::INTERRUPTED);
    REQUIRE(s.update(held, interrupted).is(true));
    held.link->session_closes[0].done(std::optional<TaskReport>(succeeded()));
    s.fx.run();
    CHECK(status_of(s, held.shard) == "DRAINED");
    REQUIRE(other.link->session_opens.size() == 1);
    other.link->session_opens[0].done(succeeded());
    s.fx.run();
    REQUIRE(other.link->runs.size() == 1);
    CHECK(other.link->runs[0].invocation.task_name == "a");
    CHECK(other.link->runs[0].invocation.attempt == 1);
  }

  TEST_CASE("an immediate drain while envEnter runs cancels it; envExit still runs before the session moves") {
    BookedScheduler b;
    auto& s = b.s;
    Flow flow(s, "wf-drain-entering", session_of_two);
    auto [held, other] = placed_session(s, flow);
    const std::string enter = held.link->session_opens[0].session.env_enter.invocation_id;
    obey(s, drain(held.shard, true));
    CHECK(held.link->cancels == std::vector<std::string>{enter});
    REQUIRE(held.link->session_closes.size() == 1);
    TaskReport cancelled;
    cancelled.kind = TaskReport::CANCELLED;
    held.link->session_opens[0].done(cancelled);
    held.link->session_closes[0].done(std::optional<TaskReport>(succeeded()));
    s.fx.run();
    REQUIRE(other.link->session_opens.size() == 1);  // moved, not failed: envEnter's cancel was the drain's
    CHECK(flow.count("sessionEnterFailed:s") == 1);
    CHECK(flow.count("sessionFailed:s") == 0);
  }
}

TEST_SUITE("actors.drain") {
  TEST_CASE("a drained worker that holds a session from before a restart is DRAINED only once that session is closed there") {
    // Drained before the scheduler restarted, while it held the session.
    auto store = std::make_shared<storage::MemoryHistoryStore>();
    auto info = worker_info("w1", "instance-1", {{"default", 1}});
    info.max_concurrent_sessions = 1;
    {
      WorkerBook book(store, [] { return int64_t{1'000}; });
      book.registered(info);
      REQUIRE(book.update("w1", "instance-1", [](storage::WorkerRecord& r) { r.standing = "DRAINING"; }));
    }
    BookedScheduler b(store, std::make_shared<int64_t>(2'000), true);
    auto& s = b.s;
    auto link = std::make_shared<FakeWorkerLink>();
    REQUIRE(s.register_worker(info, link));
    link->answer_running({}, {}, {"wf-old/s"});
    s.fx.run();
    CHECK(status_of(s, "w1") == "DRAINING");  // it runs no task, but holds a session
    s.recovered(0);  // no workflow claims it: it is closed there
    REQUIRE(link->session_closes.size() == 1);
    CHECK(status_of(s, "w1") == "DRAINING");
    link->session_closes[0].done(std::optional<TaskReport>());
    s.fx.run();
    CHECK(status_of(s, "w1") == "DRAINED");
  }
}
