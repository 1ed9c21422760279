// Dispatch through the scheduler's real actors (test/support/dispatch_fixture.hpp): slots,
// health, the worker protocol's races, registrations, and scheduler restarts with workers
// still running.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/codec.hpp"
#include "test/support/dispatch_fixture.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace troupe::test::dispatch;
using namespace std::chrono_literals;

/// The journal of `shard` as lines: "registered <instance> <worker id>" or "health FROM->TO".
std::vector<std::string> journal_lines(storage::HistoryStore& store, const std::string& shard) {
  auto entries = store.read_worker_journal(shard, 1, 1000);
  REQUIRE_MESSAGE(entries, test::why(entries));
  static const char* names[] = {"NEW", "HEALTHY", "UNHEALTHY", "MUST_DIE", "STOPPING"};
  std::vector<std::string> out;
  for (const auto& entry : *entries) {
    auto event = storage::DecodedEvent::decode(entry.packed);
    REQUIRE(event);
    auto body = event->get().getBody();
    if (body.isWorkerRegistered()) {
      auto r = body.getWorkerRegistered();
      out.push_back(std::string("registered ") + r.getInstanceId().cStr() + " " + r.getWorkerId().cStr());
    } else if (body.isWorkerHealthChanged()) {
      auto h = body.getWorkerHealthChanged();
      out.push_back(std::string("health ") + names[static_cast<int>(h.getFrom())] + "->" +
                    names[static_cast<int>(h.getTo())]);
    } else {
      out.push_back("?");
    }
  }
  return out;
}

TEST_SUITE("actors.dispatch") {
  TEST_CASE("a worker with 2 slots never holds more than 2 invocations; each completion lets one more through") {
    Scheduler s;
    Flow flow(s, "wf-credit", independent_tasks(10, "batch"));
    flow.start();  // the ten tasks wait in their list: no worker serves it yet
    auto w = s.connect("w1", {{"batch", 2}});
    REQUIRE(w.link->runs.size() == 2);

    size_t completed = 0;
    while (completed < 10) {
      // A copy: answering lets more runs in, which may move the vector's elements.
      const Invocation invocation = w.link->runs[completed].invocation;
      CAPTURE(invocation.invocation_id);
      CHECK(invocation.task_list == "batch");
      CHECK(invocation.executor == "w1");
      w.link->runs[completed].done(false);
      s.fx.run();
      auto acked = s.update(w, report_of(invocation.invocation_id, TaskReport::SUCCEEDED, "done"));
      REQUIRE(acked.is(true));
      ++completed;
      // Exactly one slot came back, so exactly one more invocation went out (while any wait).
      CHECK(w.link->runs.size() == std::min<size_t>(10, completed + 2));
      CHECK(w.link->runs.size() - completed <= 2);
    }
    auto ids = w.link->run_ids();
    std::sort(ids.begin(), ids.end());
    CHECK(std::unique(ids.begin(), ids.end()) == ids.end());
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("the waiting tasks stay queued while both slots are taken") {
    Scheduler s;
    Flow flow(s, "wf-credit-waiting", independent_tasks(10, "batch"));
    flow.start();
    auto w = s.connect("w1", {{"batch", 2}});
    REQUIRE(w.link->runs.size() == 2);
    size_t dispatching = 0;
    for (int i = 0; i < 10; ++i) {
      if (flow.task("t" + std::to_string(i)).state == TaskState::DISPATCHING) ++dispatching;
    }
    CHECK(dispatching == 8);
    // Time passing and heartbeats free no slot.
    s.advance(5s, {&w});
    CHECK(w.link->runs.size() == 2);
  }

  TEST_CASE("an UNHEALTHY worker gets no new tasks until a heartbeat makes it HEALTHY again") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    s.advance(2s);
    REQUIRE(s.health(w) == HealthState::UNHEALTHY);
    Flow flow(s, "wf-unhealthy", independent_tasks(1, "jobs"));
    flow.start();
    CHECK(w.link->runs.empty());
    CHECK(flow.task("t0").state == TaskState::DISPATCHING);
    REQUIRE(s.heartbeat(w).is(HealthState::HEALTHY));
    CHECK(w.link->runs.size() == 1);
  }

  TEST_CASE("a worker that stops heartbeating must die; its invocation fails over to another worker once its lease runs out") {
    Scheduler s;
    auto a = s.connect("a", {{"jobs", 1}});
    Flow flow(s, "wf-lost", independent_tasks(1, "jobs", retry_twice));
    flow.start();
    REQUIRE(a.link->runs.size() == 1);
    const std::string lost = a.link->runs[0].invocation.invocation_id;
    a.link->runs[0].done(false);
    REQUIRE(s.report(a, report_of(lost, TaskReport::STARTED)).is(false));
    REQUIRE(flow.task("t0").state == TaskState::RUNNING);
    auto b = s.connect("b", {{"jobs", 1}});
    CHECK(b.link->runs.empty());  // nothing waits for it yet

    s.advance(2s, {&b});
    CHECK(s.health(a) == HealthState::UNHEALTHY);
    CHECK(a.link->suicides.empty());
    CHECK(flow.task("t0").state == TaskState::RUNNING);  // UNHEALTHY keeps its tasks

    s.advance(1s, {&b});  // must_die_after without a heartbeat
    CHECK(a.link->suicides.size() == 1);
    CHECK(s.health(a) == HealthState::MUST_DIE);
    // It may still run the task until its lease runs out: nothing runs it elsewhere before.
    s.advance(HealthTimeouts{}.lease - 3s - 1ms, {&b});
    CHECK(flow.task("t0").state == TaskState::RUNNING);
    CHECK(flow.count("taskFailover:t0") == 0);
    CHECK(b.link->runs.empty());
    s.advance(1ms, {&b});
    CHECK_FALSE(s.health(a));  // the actor of the dead instance is gone
    auto t = flow.task("t0");
    CHECK(t.state == TaskState::DELAY_EXECUTION);
    CHECK(t.attempt == 2);
    CHECK(t.failure_reason == "Failover");
    CHECK(t.failover == Loss::WHILE_RUNNING);
    CHECK(flow.count("taskFailover:t0") == 1);
    CHECK(b.link->runs.empty());  // the retry waits out its backoff

    s.advance(1s, {&b});
    REQUIRE(b.link->runs.size() == 1);
    const Invocation retry = b.link->runs[0].invocation;
    CHECK(retry.executor == "b");
    CHECK(retry.attempt == 2);
    CHECK(retry.invocation_id != lost);
    CHECK(a.link->runs.size() == 1);

    const auto history = flow.events();
    // The lost worker's late completion: its session is gone, and another worker's session
    // refuses an invocation it was not given. Neither touches the history.
    auto late = s.update(a, report_of(lost, TaskReport::SUCCEEDED, "from-a"));
    CHECK_FALSE(late.is(true));
    auto elsewhere = s.update(b, report_of(lost, TaskReport::SUCCEEDED, "from-a"));
    REQUIRE_FALSE(elsewhere.get());
    CHECK(elsewhere.get().error().code == Errc::NOT_FOUND);
    CHECK(flow.events() == history);

    b.link->runs[0].done(false);
    REQUIRE(s.update(b, report_of(retry.invocation_id, TaskReport::SUCCEEDED, "from-b")).is(true));
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
    CHECK(flow.task("t0").result == "from-b");
    CHECK(flow.count("taskSucceeded:t0") == 1);
  }

  TEST_CASE("a retry goes to another worker than the one its attempt failed on, though that one has more free slots") {
    Scheduler s;
    auto a = s.connect("a", {{"jobs", 3}});
    auto b = s.connect("b", {{"jobs", 1}});
    Flow flow(s, "wf-elsewhere",
              independent_tasks(1, "jobs", R"("timeouts": {"startToClose": "2s", "scheduleToClose": "5m"}, )" +
                                               std::string(retry_twice)));
    flow.start();
    REQUIRE(a.link->runs.size() == 1);  // the most free slots
    const std::string first = a.link->runs[0].invocation.invocation_id;
    a.link->runs[0].done(false);
    REQUIRE(s.report(a, report_of(first, TaskReport::STARTED)).is(false));

    SUBCASE("it failed there") {
      REQUIRE(s.update(a, report_of(first, TaskReport::FAILED)).is(true));
    }
    SUBCASE("it timed out there") {
      s.advance(2s, {&a, &b});
      REQUIRE(a.link->cancels == std::vector<std::string>{first});
      REQUIRE(s.update(a, report_of(first, TaskReport::CANCELLED)).is(true));  // it is over there
    }
    CHECK(flow.task("t0").failed_on == "a");
    s.advance(1s, {&a, &b});  // the backoff
    REQUIRE(b.link->runs.size() == 1);
    CHECK(b.link->runs[0].invocation.attempt == 2);
    CHECK(a.link->runs.size() == 1);
    b.link->runs[0].done(false);
    REQUIRE(s.update(b, report_of(b.link->runs[0].invocation.invocation_id, TaskReport::SUCCEEDED, "ok")).is(true));
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("a retry goes back to the worker its attempt failed on when no other can take it now") {
    Scheduler s;
    auto a = s.connect("a", {{"jobs", 1}});
    auto b = s.connect("b", {{"jobs", 1}});
    Flow busy(s, "wf-busy", independent_tasks(1, "jobs"));
    busy.start();
    Flow flow(s, "wf-back", independent_tasks(1, "jobs", retry_twice));
    flow.start();
    REQUIRE(a.link->runs.size() + b.link->runs.size() == 2);
    // Whichever worker the retried task ran on, the other one stays busy with wf-busy.
    Worker& failed = a.link->runs[0].invocation.workflow_id == "wf-back" ? a : b;
    const std::string first = failed.link->runs[0].invocation.invocation_id;
    failed.link->runs[0].done(false);
    REQUIRE(s.update(failed, report_of(first, TaskReport::FAILED)).is(true));
    s.advance(1s, {&a, &b});
    REQUIRE(failed.link->runs.size() == 2);
    CHECK(failed.link->runs[1].invocation.attempt == 2);
    CHECK(a.link->runs.size() + b.link->runs.size() == 3);
  }

  TEST_CASE("describe says why a task waits in its task list, as its matching actor posts it") {
    auto board = std::make_shared<WaitBoard>();
    DispatcherOptions options;
    options.waits = board;
    Scheduler s(options);
    Flow flow(s, "wf-why", independent_tasks(2, "gpu"));
    flow.start();
    auto described = [&] {
      auto replayed = actors::replay(*s.fx.store, flow.id);
      REQUIRE_MESSAGE(replayed, test::why(replayed));
      return snapshot(*replayed, board.get());
    };
    for (const auto& task : described().tasks) {
      CHECK(task.state_code == TaskStateCode::DISPATCHING);
      CHECK(task.wait_reason == "no live worker serves task list 'gpu'");
    }
    auto w = s.connect("w1", {{"gpu", 1}});
    REQUIRE(w.link->runs.size() == 1);
    const std::string running = w.link->runs[0].invocation.task_name;
    for (const auto& task : described().tasks) {
      CAPTURE(task.name);
      if (task.name == running) {
        CHECK(task.wait_reason.empty());  // it has a worker
      } else {
        CHECK(task.wait_reason == "the only worker of 'gpu' is busy");
      }
    }
  }

  TEST_CASE("a retry after a timeout waits until the timed-out invocation is over: confirmed, or its silent worker's lease ran out") {
    Scheduler s;
    auto a = s.connect("a", {{"jobs", 1}});
    Flow flow(s, "wf-frozen", independent_tasks(1, "jobs",
        R"("timeouts": {"startToClose": "2s", "scheduleToClose": "5m"}, )" + std::string(retry_twice)));
    flow.start();
    REQUIRE(a.link->runs.size() == 1);
    const std::string first = a.link->runs[0].invocation.invocation_id;
    a.link->runs[0].done(false);
    auto b = s.connect("b", {{"jobs", 1}});

    SUBCASE("the worker confirms the cancellation") {
      s.advance(2s, {&a, &b});
      CHECK(flow.task("t0").state == TaskState::DELAY_EXECUTION);
      CHECK(a.link->cancels == std::vector<std::string>{first});
      s.advance(2s, {&a, &b});  // past the backoff: still running on a, so nothing new
      CHECK(a.link->runs.size() + b.link->runs.size() == 1);
      REQUIRE(s.update(a, report_of(first, TaskReport::CANCELLED)).is(true));
      CHECK(a.link->runs.size() + b.link->runs.size() == 2);
    }
    SUBCASE("the worker froze: its lease must run out first") {
      s.advance(2s, {&b});  // a falls silent as the attempt times out
      CHECK(flow.task("t0").state == TaskState::DELAY_EXECUTION);
      s.advance(HealthTimeouts{}.lease - 2s - 1ms, {&b});
      CHECK(s.health(a) == HealthState::MUST_DIE);
      CHECK(b.link->runs.empty());
      s.advance(1ms, {&b});
      REQUIRE(b.link->runs.size() == 1);
      CHECK(b.link->runs[0].invocation.attempt == 2);
    }
  }

  TEST_CASE("a task paused after a timeout and resumed still waits until the timed-out invocation is over") {
    Scheduler s;
    auto a = s.connect("a", {{"jobs", 1}});
    Flow flow(s, "wf-paused-retry", independent_tasks(1, "jobs",
        R"("timeouts": {"startToClose": "2s", "scheduleToClose": "5m"}, )" + std::string(retry_twice)));
    flow.start();
    REQUIRE(a.link->runs.size() == 1);
    a.link->runs[0].done(false);
    auto b = s.connect("b", {{"jobs", 1}});
    s.advance(2s, {&b});  // a falls silent as the attempt times out
    REQUIRE(flow.task("t0").state == TaskState::DELAY_EXECUTION);
    auto paused = s.fx.ask<std::string>(flow.wf, pause_atom::value);
    REQUIRE_MESSAGE(paused, test::why(paused));
    REQUIRE(flow.task("t0").state == TaskState::PAUSED);
    auto resumed = s.fx.ask<std::string>(flow.wf, resume_atom::value);
    REQUIRE_MESSAGE(resumed, test::why(resumed));
    s.advance(2s, {&b});
    CHECK(b.link->runs.empty());  // the attempt on a may still run: a's lease has not run out
    s.advance(HealthTimeouts{}.lease, {&b});
    REQUIRE(b.link->runs.size() == 1);
    CHECK(b.link->runs[0].invocation.attempt == 2);
  }

  TEST_CASE("an update is acknowledged once durable; a repeat is a duplicate that changes nothing") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    Flow flow(s, "wf-dup", independent_tasks(4, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 2);
    const std::string first = w.link->runs[0].invocation.invocation_id;
    const std::string task = w.link->runs[0].invocation.task_name;
    for (auto& run : w.link->runs) run.done(false);

    // The acknowledgement must find the outcome already in the history.
    bool durable_at_ack = false;
    const std::string kind = "taskSucceeded:" + task;
    Answer<bool> ack;
    Reply<bool> checked{[&, box = ack.box](Result<bool> r) {
      durable_at_ack = flow.count(kind) == 1;
      *box = std::move(r);
    }};
    s.fx.self->send(w.actor, update_atom::value, report_of(first, TaskReport::SUCCEEDED, "r1"), checked);
    s.fx.run();
    CHECK(ack.is(true));
    CHECK(durable_at_ack);
    CHECK(w.link->runs.size() == 3);  // its slot went to the next task

    const auto history = flow.events();
    SUBCASE("after the acknowledgement") {
      auto again = s.update(w, report_of(first, TaskReport::SUCCEEDED, "r1"));
      CHECK(again.is(true));
    }
    SUBCASE("with a different outcome") {
      auto again = s.update(w, report_of(first, TaskReport::FAILED));
      CHECK(again.is(true));
    }
    CHECK(flow.events() == history);
    CHECK(flow.count(kind) == 1);
    CHECK(flow.task(task).result == "r1");
    // The duplicate gave back no second slot: still two outstanding, no fourth run.
    CHECK(w.link->runs.size() == 3);
  }

  TEST_CASE("a passivated task's invocation stays on its worker; its reports wake the workflow through the directory") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    s.fx.wiring.workflow_cache = 1;
    auto dir = s.fx.own(spawn_directory(s.fx.sys, s.fx.store, s.fx.wiring));
    const std::string one_task = independent_tasks(1, "jobs", R"("timeouts": {"scheduleToStart": "1m", "startToClose": "1h", "heartbeat": "10m"})");
    auto submit = [&](const std::string& id) {
      auto state = s.fx.ask<std::string>(dir, submit_atom::value, id, one_task, std::string("{}"), std::string());
      REQUIRE_MESSAGE(state, test::why(state));
    };
    submit("wf-a");
    REQUIRE(w.link->runs.size() == 1);
    w.link->runs[0].done(false);  // the worker started it
    s.fx.run();
    const std::string invocation = w.link->runs[0].invocation.invocation_id;
    submit("wf-b");  // the cache holds one: wf-a, idle, passivates
    s.fx.self->send(dir, describe_atom::value);
    s.fx.run();
    uint64_t passivated = 0;
    s.fx.self->receive([&](uint64_t, uint64_t p) { passivated = p; });
    REQUIRE(passivated == 1);

    // A heartbeat wakes wf-a, which records it; the worker is told its task is not cancelled.
    CHECK(s.report(w, report_of(invocation, TaskReport::HEARTBEAT, "half")).is(false));
    auto task = [&] { return actors::replay(*s.fx.store, "wf-a")->tasks.at("t0"); };
    auto count = [&](const std::string& kind) {
      size_t n = 0;
      for (const auto& e : test::decoded_history(*s.fx.store, "wf-a")) n += test::body_kind(e) == kind;
      return n;
    };
    CHECK(task().progress == "half");
    // The outcome is acknowledged once durable, as without passivation.
    CHECK(s.update(w, report_of(invocation, TaskReport::SUCCEEDED, "done")).is(true));
    CHECK(task().state == TaskState::SUCCESS);
    CHECK(count("workflowSucceeded") == 1);
    CHECK(count("workflowFailover") == 0);
    CHECK(count("taskDispatched") == 1);
  }

  TEST_CASE("a task with a slot free at once is dispatched without a record of waiting; one that waits has one") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-wait", independent_tasks(2, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 1);
    const Invocation first = w.link->runs[0].invocation;
    const std::string second = first.task_name == "t0" ? "t1" : "t0";
    CHECK(first.attempt == 1);
    CHECK(flow.events_of(first.task_name) ==
          std::vector<std::string>{"taskScheduled:" + first.task_name, "taskDispatched:" + first.task_name});
    CHECK(flow.events_of(second) == std::vector<std::string>{"taskScheduled:" + second, "taskDispatching:" + second});
    CHECK(flow.task(second).state == TaskState::DISPATCHING);
    w.link->runs[0].ended_with(report_of(first.invocation_id, TaskReport::SUCCEEDED, "one"));
    s.fx.run();
    // The slot came back and went to the waiting task by a grant.
    REQUIRE(w.link->runs.size() == 2);
    CHECK(flow.events_of(second) == std::vector<std::string>{"taskScheduled:" + second, "taskDispatching:" + second,
                                                              "taskDispatched:" + second});
    // Replayed, both are where the actors left them.
    CHECK(flow.task(first.task_name).state == TaskState::SUCCESS);
    CHECK(flow.task(first.task_name).attempt == 1);
    CHECK(flow.task(second).state == TaskState::DISPATCHED);
  }

  TEST_CASE("an invocation that ended before its runTask was answered records its outcome and no start") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    Flow flow(s, "wf-ended", independent_tasks(2, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 2);
    const Invocation quick = w.link->runs[0].invocation;
    const Invocation slow = w.link->runs[1].invocation;
    w.link->runs[0].done(true);   // ended already: its outcome follows
    w.link->runs[1].done(false);  // started and runs
    s.fx.run();
    CHECK(flow.count("taskRunning:" + quick.task_name) == 0);
    CHECK(flow.count("taskRunning:" + slow.task_name) == 1);
    CHECK(flow.task(quick.task_name).state == TaskState::DISPATCHED);
    REQUIRE(s.update(w, report_of(quick.invocation_id, TaskReport::SUCCEEDED, "fast")).is(true));
    REQUIRE(s.update(w, report_of(slow.invocation_id, TaskReport::SUCCEEDED, "slow")).is(true));
    CHECK(flow.events_of(quick.task_name) ==
          std::vector<std::string>{"taskScheduled:" + quick.task_name, "taskDispatched:" + quick.task_name,
                                   "taskSucceeded:" + quick.task_name});
    CHECK(flow.task(quick.task_name).result == "fast");
    CHECK(flow.count("taskRunning:" + quick.task_name) == 0);
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("a task its worker says it never started, though the scheduler did not cancel it, runs again under the same attempt") {
    // A session task that reaches its worker after the session closed there (a drain or a
    // shutdown closed it) ends there without running: that is no failure of the task.
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-never-started", independent_tasks(1, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 1);
    const Invocation first = w.link->runs[0].invocation;
    w.link->runs[0].done(true);
    s.fx.run();
    TaskReport never = report_of(first.invocation_id, TaskReport::CANCELLED);
    never.loss = Loss::NEVER_STARTED;
    REQUIRE(s.update(w, never).is(true));
    CHECK(flow.count("taskFailed:t0") == 0);
    CHECK(flow.task("t0").failover == Loss::NEVER_STARTED);
    REQUIRE(w.link->runs.size() == 2);
    CHECK(w.link->runs[1].invocation.attempt == 1);
    w.link->runs[1].done(false);
    s.fx.run();
    REQUIRE(s.update(w, report_of(w.link->runs[1].invocation.invocation_id, TaskReport::SUCCEEDED)).is(true));
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("an outcome in runTask's answer is recorded with no start and acknowledged once durable, together") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 3}});
    Flow flow(s, "wf-answered", independent_tasks(3, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 3);
    const Invocation ok = w.link->runs[0].invocation;
    const Invocation bad = w.link->runs[1].invocation;
    const Invocation slow = w.link->runs[2].invocation;
    // The store holds its commits, as a slow sync would: nothing may be acknowledged yet.
    s.fx.store->hold();
    w.link->runs[0].ended_with(report_of(ok.invocation_id, TaskReport::SUCCEEDED, "fast"));
    TaskReport failure = report_of(bad.invocation_id, TaskReport::FAILED);
    failure.non_retryable = true;
    w.link->runs[1].ended_with(failure);
    w.link->runs[2].done(false);
    s.fx.run();
    CHECK(w.link->acknowledged.empty());
    s.fx.store->release();
    s.fx.run();
    // Both outcomes became durable in one commit and are acknowledged in one call.
    CHECK(w.link->acknowledged == std::vector<std::string>{ok.invocation_id, bad.invocation_id});
    CHECK(w.link->acknowledge_calls == 1);
    CHECK(flow.events_of(ok.task_name) ==
          std::vector<std::string>{"taskScheduled:" + ok.task_name, "taskDispatched:" + ok.task_name,
                                   "taskSucceeded:" + ok.task_name});
    CHECK(flow.task(ok.task_name).result == "fast");
    CHECK(flow.task(bad.task_name).state == TaskState::FAILURE);
    CHECK(flow.count("taskRunning:" + slow.task_name) == 1);
    // Its slot came back: a fourth run could go out, and a duplicate report of the outcome, as a
    // worker sends after a lost connection, changes nothing.
    REQUIRE(s.update(w, report_of(ok.invocation_id, TaskReport::SUCCEEDED, "fast")).is(true));
    CHECK(flow.count("taskSucceeded:" + ok.task_name) == 1);
  }

  TEST_CASE("two copies of an update in flight together make one event and two acknowledgements") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    Flow flow(s, "wf-dup-race", independent_tasks(4, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 2);
    const std::string first = w.link->runs[0].invocation.invocation_id;
    Answer<bool> one;
    Answer<bool> two;
    s.fx.self->send(w.actor, update_atom::value, report_of(first, TaskReport::SUCCEEDED, "r1"), one.reply());
    s.fx.self->send(w.actor, update_atom::value, report_of(first, TaskReport::SUCCEEDED, "r1"), two.reply());
    s.fx.run();
    CHECK(one.is(true));
    CHECK(two.is(true));
    CHECK(flow.count("taskSucceeded:" + w.link->runs[0].invocation.task_name) == 1);
    CHECK(w.link->runs.size() == 3);  // one slot back, not two
  }

  TEST_CASE("reports on an invocation the worker was not given are refused") {
    Scheduler s;
    auto w1 = s.connect("w1", {{"jobs", 1}});
    auto w2 = s.connect("w2", {{"jobs", 1}});
    Flow flow(s, "wf-not-given", independent_tasks(2, "jobs"));
    flow.start();
    REQUIRE(w1.link->runs.size() == 1);
    REQUIRE(w2.link->runs.size() == 1);
    SUBCASE("an id nobody was given") {
      const auto history = flow.events();
      auto refused = s.update(w1, report_of("wf-not-given/t9/1.1", TaskReport::SUCCEEDED));
      REQUIRE_FALSE(refused.get());
      CHECK(refused.get().error().code == Errc::NOT_FOUND);
      CHECK(refused.get().error().message.find("w1") != std::string::npos);
      auto beat = s.report(w1, report_of("wf-not-given/t9/1.1", TaskReport::HEARTBEAT));
      REQUIRE_FALSE(beat.get());
      CHECK(beat.get().error().code == Errc::NOT_FOUND);
      CHECK(flow.events() == history);
    }
    SUBCASE("another worker's invocation") {
      const Invocation theirs = w2.link->runs[0].invocation;
      auto refused = s.update(w1, report_of(theirs.invocation_id, TaskReport::SUCCEEDED));
      REQUIRE_FALSE(refused.get());
      CHECK(refused.get().error().code == Errc::NOT_FOUND);
      // The rightful worker still can.
      CHECK(s.update(w2, report_of(theirs.invocation_id, TaskReport::SUCCEEDED)).is(true));
      CHECK(flow.count("taskSucceeded:" + theirs.task_name) == 1);
    }
  }

  TEST_CASE("an invocation whose runTask outcome is unknown is asked about, and dispatched again under the same attempt when it never arrived") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    // No retries: a lost runTask must not use up the only attempt.
    Flow flow(s, "wf-unsure", independent_tasks(1, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 1);
    const Fence sent = w.link->runs[0].invocation.fence;
    CHECK(sent.epoch == 1);
    CHECK(flow.task("t0").dispatch_fence == sent);  // recorded with taskDispatched
    const std::string id = w.link->runs[0].invocation.invocation_id;
    w.link->runs[0].done(fail(Errc::UNAVAILABLE, "connection reset"));
    s.fx.run();
    REQUIRE(w.link->notifies.size() == 1);
    CHECK(w.link->notifies[0].ids == std::vector<std::string>{id});
    CHECK(sent < w.link->notifies[0].fence);  // newer than the runTask it asks about
    CHECK(flow.task("t0").state == TaskState::DISPATCHED);

    // The worker does not have it: it keeps every invocation it was given until acknowledged,
    // so the runTask never arrived.
    w.link->notifies[0].done(std::vector<std::string>{id});
    s.fx.run();
    CHECK(flow.count("taskFailover:t0") == 1);
    CHECK(flow.task("t0").failover == Loss::NEVER_STARTED);
    REQUIRE(w.link->runs.size() == 2);  // again at once, no backoff the first time
    CHECK(w.link->runs[1].invocation.attempt == 1);
    CHECK(w.link->runs[1].invocation.invocation_id != id);
    // Sent after the notify: the worker must not refuse it as older than the notify.
    CHECK_FALSE(w.link->runs[1].invocation.fence < w.link->notifies[0].fence);
    w.link->runs[1].done(true);
    REQUIRE(s.update(w, report_of(w.link->runs[1].invocation.invocation_id, TaskReport::SUCCEEDED)).is(true));
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("an unsure invocation the worker says is running stays, and is not asked about again") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-unsure-runs", independent_tasks(1, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 1);
    const std::string id = w.link->runs[0].invocation.invocation_id;
    w.link->runs[0].done(fail(Errc::UNAVAILABLE, "connection reset"));
    s.fx.run();
    REQUIRE(w.link->notifies.size() == 1);
    w.link->notifies[0].done(std::vector<std::string>{});
    s.fx.run();
    s.advance(2s, {&w});
    CHECK(w.link->notifies.size() == 1);
    CHECK(flow.count("taskFailover:t0") == 0);
    REQUIRE(s.update(w, report_of(id, TaskReport::SUCCEEDED, "ran")).is(true));
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("a notify that fails is sent again on the next heartbeat with a higher sequence") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-unsure-retry", independent_tasks(1, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 1);
    const std::string id = w.link->runs[0].invocation.invocation_id;
    w.link->runs[0].done(fail(Errc::UNAVAILABLE, "connection reset"));
    s.fx.run();
    REQUIRE(w.link->notifies.size() == 1);
    w.link->notifies[0].done(fail(Errc::UNAVAILABLE, "connection reset"));
    s.fx.run();
    REQUIRE(s.heartbeat(w).is(HealthState::HEALTHY));
    REQUIRE(w.link->notifies.size() == 2);
    CHECK(w.link->notifies[1].ids == std::vector<std::string>{id});
    CHECK(w.link->notifies[0].fence < w.link->notifies[1].fence);
  }

  TEST_CASE("an invocation that became unsure after a notify went out is not settled by that notify's answer") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    Flow flow(s, "wf-unsure-later", independent_tasks(2, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 2);
    const std::string first = w.link->runs[0].invocation.invocation_id;
    const std::string second = w.link->runs[1].invocation.invocation_id;
    w.link->runs[0].done(fail(Errc::UNAVAILABLE, "connection reset"));
    s.fx.run();
    REQUIRE(w.link->notifies.size() == 1);
    w.link->runs[1].done(fail(Errc::UNAVAILABLE, "connection reset"));
    s.fx.run();
    REQUIRE(w.link->notifies.size() == 2);
    // The first notify asked about the first invocation only, so its answer says nothing of
    // the second; the second notify, which asked about both, is lost.
    w.link->notifies[0].done(std::vector<std::string>{});
    w.link->notifies[1].done(fail(Errc::UNAVAILABLE, "connection reset"));
    s.fx.run();
    REQUIRE(s.heartbeat(w).is(HealthState::HEALTHY));
    REQUIRE(w.link->notifies.size() == 3);
    CHECK(w.link->notifies[2].ids == std::vector<std::string>{second});
    w.link->notifies[2].done(std::vector<std::string>{second});
    s.fx.run();
    CHECK(flow.count("taskFailover:t1") == 1);
    CHECK(flow.count("taskFailover:t0") == 0);
    CHECK(flow.task("t0").invocation_id == first);  // confirmed running by the first answer
  }

  TEST_CASE("a runTask the worker refuses as older than its last notify is dispatched again under the same attempt") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    Flow flow(s, "wf-stale", independent_tasks(2, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 2);
    auto unsure = std::move(w.link->runs[0]);
    auto stale = std::move(w.link->runs[1]);
    // The first runTask's answer is lost; the scheduler asks with a newer fence, and the
    // worker, not running it, answers. From then on it refuses any runTask with an older fence,
    // such as the second one, still on its way.
    unsure.done(fail(Errc::UNAVAILABLE, "connection reset"));
    s.fx.run();
    REQUIRE(w.link->notifies.size() == 1);
    const Fence notified = w.link->notifies[0].fence;
    REQUIRE(stale.invocation.fence < notified);
    w.link->notifies[0].done(std::vector<std::string>{unsure.invocation.invocation_id});
    stale.done(fail(Errc::NOT_ALLOWED_IN_STATE, "runTask of " + stale.invocation.invocation_id +
                                                    " is older than the last notify"));
    s.fx.run();
    CHECK(flow.count("taskFailover:t0") == 1);
    CHECK(flow.count("taskFailover:t1") == 1);
    // Neither started, so neither used up its only attempt: both go again at once.
    REQUIRE(w.link->runs.size() == 4);
    for (size_t i = 2; i < 4; ++i) {
      CAPTURE(w.link->runs[i].invocation.invocation_id);
      CHECK(w.link->runs[i].invocation.attempt == 1);
      CHECK_FALSE(w.link->runs[i].invocation.fence < notified);
      w.link->runs[i].done(true);
      REQUIRE(s.update(w, report_of(w.link->runs[i].invocation.invocation_id, TaskReport::SUCCEEDED)).is(true));
    }
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
  }

  TEST_CASE("a worker that keeps refusing an invocation is asked again after a growing backoff") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-refused", independent_tasks(1, "jobs"));
    flow.start();
    for (size_t refusal = 0; refusal < 4; ++refusal) {
      REQUIRE(w.link->runs.size() == refusal + 1);
      w.link->runs.back().done(fail(Errc::NOT_ALLOWED_IN_STATE, "worker w1 is not HEALTHY"));
      s.fx.run();
      // At once after the first refusal, then after 100 ms, 200 ms, 400 ms.
      const Duration backoff = refusal == 0 ? Duration(0) : std::chrono::milliseconds(100) * (1 << (refusal - 1));
      if (backoff > Duration(0)) {
        s.fx.advance(backoff - std::chrono::milliseconds(1));
        CHECK(w.link->runs.size() == refusal + 1);
        s.fx.advance(std::chrono::milliseconds(1));
      }
    }
    REQUIRE(w.link->runs.size() == 5);
    CHECK(w.link->runs.back().invocation.attempt == 1);
    CHECK(flow.task("t0").never_started == 4);
  }

  TEST_CASE("the same instance registering again is a reconnect of the same worker") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 2}});
    Flow flow(s, "wf-reconnect", independent_tasks(2, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 2);
    const std::string kept = w.link->runs[0].invocation.invocation_id;
    const std::string dropped = w.link->runs[1].invocation.invocation_id;
    for (auto& run : w.link->runs) run.done(false);

    auto link = std::make_shared<FakeWorkerLink>();
    auto again = s.register_worker(worker_info("w1", "instance-1", {{"jobs", 2}}), link);
    REQUIRE_MESSAGE(again, test::why(again));
    CHECK(again->worker == w.actor);
    CHECK_FALSE(again->start_clean);
    CHECK(w.link->suicides.empty());
    REQUIRE(link->running_queries_asked == 1);
    // It still runs one of the two: the other is asked about over the new link, and fails
    // over when it is not running either.
    link->answer_running({kept});
    s.fx.run();
    REQUIRE(link->notifies.size() == 1);
    CHECK(link->notifies[0].ids == std::vector<std::string>{dropped});
    link->notifies[0].done(std::vector<std::string>{dropped});
    s.fx.run();
    CHECK(flow.count("taskFailover:t1") == 1);
    CHECK(flow.count("taskFailover:t0") == 0);
    Worker reconnected{"w1", link, again->worker};
    REQUIRE(s.update(reconnected, report_of(kept, TaskReport::SUCCEEDED)).is(true));
    CHECK(w.link->notifies.empty());  // the old link is no longer used
  }

  TEST_CASE("another instance of a shard is refused while the old one is alive") {
    Scheduler s;
    auto old = s.connect("w1", {{"jobs", 1}});
    SUBCASE("HEALTHY") {
      auto refused = s.register_worker(worker_info("w1", "instance-2", {{"jobs", 1}}),
                                       std::make_shared<FakeWorkerLink>());
      REQUIRE_FALSE(refused);
      CHECK(refused.error().code == Errc::ALREADY_EXISTS);
      CHECK(refused.error().message.find("'w1'") != std::string::npos);
      CHECK(refused.error().message.find("HEALTHY") != std::string::npos);
    }
    SUBCASE("UNHEALTHY, unless replace_unhealthy is set") {
      s.advance(2s);
      REQUIRE(s.health(old) == HealthState::UNHEALTHY);
      auto refused = s.register_worker(worker_info("w1", "instance-2", {{"jobs", 1}}),
                                       std::make_shared<FakeWorkerLink>());
      REQUIRE_FALSE(refused);
      CHECK(refused.error().code == Errc::ALREADY_EXISTS);
      CHECK(refused.error().message.find("UNHEALTHY") != std::string::npos);
    }
    CHECK(old.link->suicides.empty());
    CHECK(s.health(old));
    // The old instance keeps serving its list.
    REQUIRE(s.heartbeat(old).is(HealthState::HEALTHY));
    Flow flow(s, "wf-refused", independent_tasks(1, "jobs"));
    flow.start();
    CHECK(old.link->runs.size() == 1);
  }

  TEST_CASE("an UNHEALTHY instance is replaced when replace_unhealthy is set; it is told to die") {
    DispatcherOptions options;
    options.replace_unhealthy = true;
    Scheduler s(options);
    auto old = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-replaced", independent_tasks(1, "jobs", retry_twice));
    flow.start();
    REQUIRE(old.link->runs.size() == 1);
    old.link->runs[0].done(false);
    s.advance(2s);
    REQUIRE(s.health(old) == HealthState::UNHEALTHY);

    auto link = std::make_shared<FakeWorkerLink>();
    auto replaced = s.register_worker(worker_info("w1", "instance-2", {{"jobs", 1}}), link);
    REQUIRE_MESSAGE(replaced, test::why(replaced));
    CHECK(replaced->start_clean);
    CHECK_FALSE(replaced->worker == old.actor);
    CHECK(old.link->suicides.size() == 1);
    CHECK_FALSE(s.health(old));
    CHECK(flow.count("taskFailover:t0") == 1);

    Worker fresh{"w1", link, replaced->worker};
    link->answer_running();
    s.fx.run();
    REQUIRE(s.health(fresh) == HealthState::HEALTHY);
    s.advance(1s, {&fresh});  // the retry's backoff
    REQUIRE(link->runs.size() == 1);
    CHECK(link->runs[0].invocation.attempt == 2);
  }

  TEST_CASE("a replaced instance going away late does not take the new instance's slots with it") {
    DispatcherOptions options;
    options.replace_unhealthy = true;
    Scheduler s(options);
    auto& sched = s.fx.sched;
    auto old = s.connect("w1", {{"jobs", 1}});
    s.advance(2s);
    REQUIRE(s.health(old) == HealthState::UNHEALTHY);

    // Steps the registration one message at a time so that the new instance associates and
    // offers its slots before the old instance has handled being replaced: on a busy
    // multi-threaded scheduler nothing orders the two.
    auto link = std::make_shared<FakeWorkerLink>();
    Answer<RegistrationOutcome> replaced;
    s.fx.self->send(s.dispatcher, register_atom::value, worker_info("w1", "instance-2", {{"jobs", 1}}),
                    std::shared_ptr<WorkerLink>(link), replaced.reply());
    auto step = [&](const auto& actor) {
      REQUIRE(sched.prioritize(actor));
      sched.run_once();
    };
    step(s.dispatcher);  // asks the old instance for its health
    step(old.actor);     // answers UNHEALTHY
    step(s.dispatcher);  // replaces it: the old one is told, the new one spawned
    REQUIRE(replaced.arrived());
    REQUIRE_MESSAGE(replaced.get(), test::why(replaced.get()));
    const worker_actor fresh_actor = replaced.get()->worker;
    if (link->running_queries.empty()) step(fresh_actor);  // its first turn asks getRunningTasks
    link->answer_running();
    step(fresh_actor);  // associated: HEALTHY, offers its slot
    s.fx.run();         // the old instance, replaced, goes
    Worker fresh{"w1", link, fresh_actor};
    REQUIRE(s.health(fresh) == HealthState::HEALTHY);
    CHECK_FALSE(s.health(old));

    Flow flow(s, "wf-replaced-late", independent_tasks(1, "jobs"));
    flow.start();
    CHECK(link->runs.size() == 1);
    CHECK(old.link->runs.empty());
  }

  TEST_CASE("a new instance takes over a shard whose old instance was declared MUST_DIE") {
    Scheduler s;
    auto old = s.connect("w1", {{"jobs", 1}});
    s.advance(3s);
    REQUIRE(old.link->suicides.size() == 1);
    auto link = std::make_shared<FakeWorkerLink>();
    auto taken = s.register_worker(worker_info("w1", "instance-2", {{"jobs", 1}}), link);
    REQUIRE_MESSAGE(taken, test::why(taken));
    CHECK(taken->start_clean);
    Worker fresh{"w1", link, taken->worker};
    link->answer_running();
    s.fx.run();
    REQUIRE(s.health(fresh) == HealthState::HEALTHY);
    Flow flow(s, "wf-after-death", independent_tasks(1, "jobs"));
    flow.start();
    CHECK(link->runs.size() == 1);
    CHECK(old.link->runs.empty());
  }

  TEST_CASE("an instance declared MUST_DIE that comes back within its lease is told to die, and its invocation fails over once a new instance replaces it") {
    Scheduler s;
    auto old = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-comeback", independent_tasks(1, "jobs", retry_twice));
    flow.start();
    REQUIRE(old.link->runs.size() == 1);
    const std::string lost = old.link->runs[0].invocation.invocation_id;
    old.link->runs[0].done(false);
    s.advance(3s);
    REQUIRE(old.link->suicides.size() == 1);
    REQUIRE(flow.count("taskFailover:t0") == 0);  // its lease has not run out

    // The same process reconnects before it noticed: it is still the dead instance, and its
    // first heartbeat's reply tells it to die. It is not asked what it runs.
    auto link = std::make_shared<FakeWorkerLink>();
    auto back = s.register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), link);
    REQUIRE_MESSAGE(back, test::why(back));
    CHECK(back->worker == old.actor);
    Worker same{"w1", link, back->worker};
    CHECK(s.heartbeat(same).is(HealthState::MUST_DIE));
    CHECK(link->running_queries_asked == 0);
    CHECK(flow.count("taskFailover:t0") == 0);

    // Its restart replaces it: the new instance killed what the old one left before it
    // registered, so the invocation fails over now, not at the end of the lease.
    auto fresh_link = std::make_shared<FakeWorkerLink>();
    auto taken = s.register_worker(worker_info("w1", "instance-2", {{"jobs", 1}}), fresh_link);
    REQUIRE_MESSAGE(taken, test::why(taken));
    CHECK(taken->start_clean);
    CHECK(flow.count("taskFailover:t0") == 1);
    CHECK(flow.task("t0").failover == Loss::WHILE_RUNNING);
    CHECK_FALSE(s.health(old));
    fresh_link->answer_running();
    s.fx.run();
    Worker fresh{"w1", fresh_link, taken->worker};
    REQUIRE(s.health(fresh) == HealthState::HEALTHY);
    s.advance(1s, {&fresh});  // the retry's backoff
    REQUIRE(fresh_link->runs.size() == 1);
    CHECK(fresh_link->runs[0].invocation.attempt == 2);
  }

  TEST_CASE("an instance declared MUST_DIE that registers again keeps its invocations for a lease from that registration") {
    // The worker counts an accepted registration as an acknowledged heartbeat: its tasks may run
    // until a lease after it. Failing them over at the lease from its last heartbeat would let
    // a retry run beside them (found by sim.worker_protocol, seed 3283).
    Scheduler s;
    auto old = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-must-die-again", independent_tasks(1, "jobs", retry_twice));
    flow.start();
    REQUIRE(old.link->runs.size() == 1);
    old.link->runs[0].done(false);
    s.advance(5s);
    REQUIRE(s.health(old) == HealthState::MUST_DIE);
    auto link = std::make_shared<FakeWorkerLink>();
    REQUIRE(s.register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), link));
    const Duration lease = HealthTimeouts{}.lease;
    s.advance(lease - 1ms);
    CHECK(flow.count("taskFailover:t0") == 0);
    s.advance(1ms);
    CHECK(flow.count("taskFailover:t0") == 1);
  }

  TEST_CASE("a worker declared MUST_DIE that reports an outcome before its lease runs out settles its task") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-late-outcome", independent_tasks(1, "jobs"));
    flow.start();
    REQUIRE(w.link->runs.size() == 1);
    const std::string id = w.link->runs[0].invocation.invocation_id;
    w.link->runs[0].done(false);
    s.advance(3s);
    REQUIRE(s.health(w) == HealthState::MUST_DIE);
    REQUIRE(s.update(w, report_of(id, TaskReport::SUCCEEDED, "done")).is(true));
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "SUCCESS");
    CHECK(flow.count("taskFailover:t0") == 0);
    CHECK_FALSE(s.health(w));  // it held nothing more: its actor ended
  }

  TEST_CASE("a timed-out invocation is cancelled on its worker and keeps its slot until the worker reports") {
    Scheduler s;
    auto w = s.connect("w1", {{"jobs", 1}});
    Flow flow(s, "wf-cancel", independent_tasks(2, "jobs", std::string(retry_twice) +
                                                 R"(, "timeouts": {"scheduleToStart": "1m", "startToClose": "5s"})"));
    flow.start();
    REQUIRE(w.link->runs.size() == 1);
    const auto first = w.link->runs[0].invocation;
    w.link->runs[0].done(false);
    REQUIRE(s.report(w, report_of(first.invocation_id, TaskReport::STARTED)).is(false));
    s.advance(5s, {&w});  // startToClose: the attempt is abandoned and will be retried
    CHECK(flow.task(first.task_name).failure_reason == "Timeout:startToClose");
    CHECK(w.link->cancels == std::vector<std::string>{first.invocation_id});
    // The worker learns of the cancellation on its next heartbeat of the invocation.
    CHECK(s.report(w, report_of(first.invocation_id, TaskReport::HEARTBEAT)).is(true));
    CHECK(w.link->runs.size() == 1);  // it still runs there, so its slot stays taken

    const auto history = flow.events_of(first.task_name);
    CHECK(s.update(w, report_of(first.invocation_id, TaskReport::CANCELLED)).is(true));
    CHECK(flow.events_of(first.task_name) == history);  // the task had already moved on
    REQUIRE(w.link->runs.size() == 2);  // the slot came back: the other task, waiting longest
    CHECK(w.link->runs[1].invocation.task_name != first.task_name);
  }

  TEST_CASE("a task whose list no worker serves waits, and its scheduleToStart timeout fails it") {
    Scheduler s;
    auto other = s.connect("w1", {{"other", 4}});
    Flow flow(s, "wf-lonely", independent_tasks(1, "lonely",
                                                 R"("timeouts": {"scheduleToStart": "5s", "startToClose": "1m"})"));
    flow.start();
    s.advance(4s, {&other});
    CHECK(flow.task("t0").state == TaskState::DISPATCHING);
    CHECK(other.link->runs.empty());
    s.advance(1s, {&other});
    auto result = flow.outcome();
    REQUIRE(result);
    CHECK(result->state == "FAILED");
    auto t = flow.task("t0");
    CHECK(t.state == TaskState::FAILURE);
    CHECK(t.failure_reason == "Timeout:scheduleToStart");
    // The task left its list: a worker serving it later gets nothing.
    auto late = s.connect("w2", {{"lonely", 1}});
    CHECK(late.link->runs.empty());
    CHECK(other.link->runs.empty());
  }

  // --- a scheduler restart with its workers still running ------------------------------------

  /// Runs a one-task workflow on worker w1 (one slot on "jobs") until its invocation is
  /// RUNNING (or, if `sent` is false, until its runTask is about to leave: the scheduler dies
  /// before it does), then plays a scheduler restart: a second scheduler, the next incarnation,
  /// on the same history revives the workflow.
  struct Restarted {
    Scheduler before;
    std::string invocation;
    Fence registered_at;  ///< w1's registration with the first incarnation
    std::optional<Scheduler> after;
    std::optional<Flow> revived;

    explicit Restarted(const std::string& workflow_id, bool ask_result = true, bool sent = true,
                       const std::string& task_fields = retry_twice) {
      auto link = std::make_shared<FakeWorkerLink>();
      auto registered = before.register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), link);
      REQUIRE_MESSAGE(registered, test::why(registered));
      registered_at = registered->fence;
      link->answer_running();
      before.fx.run();
      Worker w{"w1", link, registered->worker};
      Flow flow(before, workflow_id, independent_tasks(1, "jobs", task_fields));
      flow.start();
      REQUIRE(w.link->runs.size() == 1);
      invocation = w.link->runs[0].invocation.invocation_id;
      if (sent) {
        w.link->runs[0].done(false);
        before.fx.run();
        REQUIRE(flow.count("taskRunning:t0") == 1);
      } else {
        REQUIRE(flow.task("t0").state == TaskState::DISPATCHED);
      }
      after.emplace(DispatcherOptions{}, before.fx.store, true, before_epoch + 1);
      revived.emplace(*after, workflow_id, ask_result);
      after->recovered(1);
    }
    static constexpr uint64_t before_epoch = 1;

    /// w1 registering again with the restarted scheduler, running `running`; `registrations`
    /// as it presents them (empty: a new instance).
    Worker reconnect(const std::vector<std::string>& running, std::vector<Fence> registrations = {}) {
      auto link = std::make_shared<FakeWorkerLink>();
      auto info = worker_info("w1", "instance-1", {{"jobs", 1}});
      info.registrations = std::move(registrations);
      auto registered = after->register_worker(std::move(info), link);
      REQUIRE_MESSAGE(registered, test::why(registered));
      link->answer_running(running);
      after->fx.run();
      return Worker{"w1", link, registered->worker};
    }
  };

  TEST_CASE("after a scheduler restart, an invocation its worker still runs is taken back, not run again") {
    Restarted r("wf-adopted");
    auto w = r.reconnect({r.invocation});
    REQUIRE(r.after->health(w) == HealthState::HEALTHY);
    CHECK(w.link->runs.empty());      // not sent again
    CHECK(w.link->notifies.empty());  // nothing unsure: the worker said it runs it
    CHECK(w.link->cancels.empty());

    // It holds w1's only slot: another workflow's task waits for it.
    Flow other(*r.after, "wf-waits", independent_tasks(1, "jobs"));
    other.start();
    CHECK(w.link->runs.empty());

    // Its outcome reaches the revived task through the session and is acknowledged once durable.
    auto acked = r.after->update(w, report_of(r.invocation, TaskReport::SUCCEEDED, "done"));
    CHECK(acked.is(true));
    auto outcome = r.revived->outcome();
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(r.revived->count("taskDispatched:t0") == 1);
    CHECK(r.revived->count("taskFailover:t0") == 0);
    CHECK(r.revived->count("taskSucceeded:t0") == 1);
    // The slot came back: the waiting task runs.
    REQUIRE(w.link->runs.size() == 1);
    CHECK(w.link->runs[0].invocation.workflow_id == "wf-waits");
  }

  TEST_CASE("a task taken back after a restart passivates only once it has recorded news of its own") {
    // Its timers run from the revival, not from the times its history shows: passivating
    // before it records an event would wake it to timeouts measured from before the restart.
    Restarted r("wf-taken", false);  // no client waits for its result, which would keep it
    auto w = r.reconnect({r.invocation});
    REQUIRE(r.after->health(w) == HealthState::HEALTHY);
    const auto router = caf::actor_cast<task_port>(r.after->fx.self);
    auto early = r.after->fx.ask<int64_t>(r.revived->wf, passivate_atom::value, router);
    REQUIRE_FALSE(early);
    CHECK(early.error().code == Errc::NOT_ALLOWED_IN_STATE);

    CHECK(r.after->report(w, report_of(r.invocation, TaskReport::HEARTBEAT, "later")).is(false));
    auto passivated = r.after->fx.ask<int64_t>(r.revived->wf, passivate_atom::value, router);
    REQUIRE_MESSAGE(passivated, test::why(passivated));
    CHECK(*passivated == 0);  // no timer of its own to wake it for
  }

  TEST_CASE("after a scheduler restart, an invocation its worker no longer runs fails over") {
    Restarted r("wf-gone");
    auto w = r.reconnect({});
    // Not among the running ones: unsure until the worker confirms it is not running.
    REQUIRE(w.link->notifies.size() == 1);
    CHECK(w.link->notifies[0].ids == std::vector<std::string>{r.invocation});
    w.link->notifies[0].done(std::vector<std::string>{r.invocation});
    r.after->fx.run();
    CHECK(r.revived->count("taskFailover:t0") == 1);
    CHECK(r.revived->task("t0").failover == Loss::WHILE_RUNNING);  // it had started
    // Retried per its policy, on the same worker now that it is back.
    r.after->advance(1s, {&w});
    REQUIRE(w.link->runs.size() == 1);
    CHECK(w.link->runs[0].invocation.attempt == 2);
  }

  TEST_CASE("after a scheduler restart, an invocation that never reached its worker is dispatched again under the same attempt") {
    // The scheduler died between recording taskDispatched and sending runTask. The worker that
    // held the shard then comes back and does not have it: it never started. A task without
    // retries still runs.
    Restarted r("wf-never-sent", true, false, "");
    CHECK(r.registered_at.epoch == Restarted::before_epoch);
    auto w = r.reconnect({}, {r.registered_at});
    REQUIRE(w.link->notifies.size() == 1);
    CHECK(w.link->notifies[0].fence.epoch == Restarted::before_epoch + 1);
    w.link->notifies[0].done(std::vector<std::string>{r.invocation});
    r.after->fx.run();
    CHECK(r.revived->count("taskFailover:t0") == 1);
    CHECK(r.revived->task("t0").failover == Loss::NEVER_STARTED);
    REQUIRE(w.link->runs.size() == 1);
    CHECK(w.link->runs[0].invocation.attempt == 1);
    CHECK(w.link->runs[0].invocation.fence.epoch == Restarted::before_epoch + 1);
    w.link->runs[0].done(true);
    REQUIRE(r.after->update(w, report_of(w.link->runs[0].invocation.invocation_id, TaskReport::SUCCEEDED)).is(true));
    auto outcome = r.revived->outcome();
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
  }

  TEST_CASE("after a scheduler restart, a new instance of the worker cannot vouch that an invocation never started") {
    // A restarted worker never saw what its predecessor ran: the attempt may have run, and
    // counts.
    Restarted r("wf-new-instance", true, false);
    auto w = r.reconnect({});
    REQUIRE(w.link->notifies.size() == 1);
    w.link->notifies[0].done(std::vector<std::string>{r.invocation});
    r.after->fx.run();
    CHECK(r.revived->task("t0").failover == Loss::MAY_HAVE_STARTED);
    r.after->advance(1s, {&w});
    REQUIRE(w.link->runs.size() == 1);
    CHECK(w.link->runs[0].invocation.attempt == 2);
  }

  TEST_CASE("after a scheduler restart, a cancellation decided before the worker came back reaches it when it does") {
    Restarted r("wf-stopped-early");
    // A kill right after the revival, while w1 has not registered again: nothing to send it to.
    auto killed = r.after->fx.ask<std::string>(r.revived->wf, kill_atom::value);
    REQUIRE_MESSAGE(killed, test::why(killed));
    auto w = r.reconnect({r.invocation});
    // Passed on at its registration, not when the recovery window closes.
    CHECK(w.link->cancels == std::vector<std::string>{r.invocation});
  }

  TEST_CASE("after a scheduler restart, a running task's heartbeat timeout counts from its worker's return") {
    Scheduler before;
    auto w1 = before.connect("w1", {{"jobs", 1}});
    Flow flow(before, "wf-beating", independent_tasks(1, "jobs",
        R"("timeouts": {"heartbeat": "2s", "scheduleToClose": "5m"}, )" + std::string(retry_twice)));
    flow.start();
    REQUIRE(w1.link->runs.size() == 1);
    const std::string id = w1.link->runs[0].invocation.invocation_id;
    w1.link->runs[0].done(false);
    before.fx.run();
    Scheduler after(DispatcherOptions{}, before.fx.store, true, 2);
    Flow revived(after, "wf-beating");
    after.recovered(1);
    // The worker takes longer than the heartbeat timeout to find the new incarnation.
    after.advance(3s);
    CHECK(revived.count("taskRetryScheduled:t0") == 0);
    auto link = std::make_shared<FakeWorkerLink>();
    auto registered = after.register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), link);
    REQUIRE_MESSAGE(registered, test::why(registered));
    link->answer_running({id});
    after.fx.run();
    Worker w{"w1", link, registered->worker};
    // From its return on, the timeout applies as usual.
    after.advance(2s, {&w});
    CHECK(revived.count("taskRetryScheduled:t0") == 1);
    CHECK(revived.task("t0").failure_reason == "Timeout:heartbeat");
  }

  /// A task with a startToClose of 5s RUNNING on w1 (dispatched at the fixtures' epoch) when
  /// the scheduler restarts; the restarted one has revived it and waits for w1.
  struct RestartedNearDeadline {
    Scheduler before;
    std::string invocation;
    int64_t dispatched_us = 0;
    std::optional<Scheduler> after;
    std::optional<Flow> revived;

    explicit RestartedNearDeadline(const std::string& workflow_id) {
      auto w1 = before.connect("w1", {{"jobs", 1}});
      Flow flow(before, workflow_id, independent_tasks(1, "jobs",
          R"("timeouts": {"startToClose": "5s", "scheduleToClose": "5m"}, )" + std::string(retry_twice)));
      flow.start();
      REQUIRE(w1.link->runs.size() == 1);
      invocation = w1.link->runs[0].invocation.invocation_id;
      w1.link->runs[0].done(false);
      before.fx.run();
      REQUIRE(flow.count("taskRunning:t0") == 1);
      dispatched_us = before.fx.wiring.now_us();
      after.emplace(DispatcherOptions{}, before.fx.store, true, 2);
      revived.emplace(*after, workflow_id);
      after->recovered(1);
    }

    /// w1 comes back holding the invocation; `ended`: it ended and its outcome is on its way.
    Worker reconnect(bool ended) {
      auto link = std::make_shared<FakeWorkerLink>();
      auto registered = after->register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), link);
      REQUIRE_MESSAGE(registered, test::why(registered));
      link->answer_running({invocation}, ended ? std::vector<std::string>{invocation} : std::vector<std::string>{});
      after->fx.run();
      return Worker{"w1", link, registered->worker};
    }

    /// The outcome the worker holds, dated `ended_after` past the dispatch.
    TaskReport success(Duration ended_after) const {
      TaskReport report = report_of(invocation, TaskReport::SUCCEEDED, "in time");
      report.ended_at_us = dispatched_us + ended_after.count();
      return report;
    }
  };

  TEST_CASE("after a scheduler restart, an outcome from before the startToClose deadline counts, though the deadline passed while nobody could hear it") {
    RestartedNearDeadline r("wf-ended-in-time");
    // The worker ended the attempt 2s in and holds the outcome; it finds the new scheduler only
    // after the deadline.
    r.after->advance(6s);
    CHECK(r.revived->count("taskRetryScheduled:t0") == 0);
    auto w = r.reconnect(true);
    CHECK(w.link->cancels.empty());  // not taken as running: its outcome is on the way
    CHECK(r.revived->count("taskRunning:t0") == 1);  // the first incarnation's only
    REQUIRE(r.after->update(w, r.success(2s)).is(true));
    auto outcome = r.revived->outcome();
    REQUIRE(outcome);
    CHECK(outcome->state == "SUCCESS");
    CHECK(r.revived->count("taskTimedOut:t0") == 0);
    CHECK(r.revived->count("taskRetryScheduled:t0") == 0);
  }

  TEST_CASE("after a scheduler restart, an outcome from after the startToClose deadline times the attempt out") {
    RestartedNearDeadline r("wf-ended-late");
    r.after->advance(7s);
    auto w = r.reconnect(true);
    CHECK(r.after->update(w, r.success(6s)).is(true));  // settled: the task has decided
    CHECK(r.revived->count("taskSucceeded:t0") == 0);
    CHECK(r.revived->count("taskRetryScheduled:t0") == 1);
    CHECK(r.revived->task("t0").failure_reason == "Timeout:startToClose");
  }

  TEST_CASE("after a scheduler restart, a worker that still runs the invocation past its startToClose deadline times it out on its return") {
    RestartedNearDeadline r("wf-overran");
    r.after->advance(6s);
    auto w = r.reconnect(false);
    CHECK(r.revived->count("taskRetryScheduled:t0") == 1);
    CHECK(r.revived->task("t0").failure_reason == "Timeout:startToClose");
    CHECK(w.link->cancels == std::vector<std::string>{r.invocation});
  }

  TEST_CASE("after a scheduler restart, a worker back before the startToClose deadline has the timeout at the deadline") {
    RestartedNearDeadline r("wf-back-early");
    r.after->advance(2s);
    auto w = r.reconnect(false);
    r.after->advance(2500ms, {&w});
    CHECK(r.revived->count("taskRetryScheduled:t0") == 0);
    r.after->advance(1s, {&w});
    CHECK(r.revived->count("taskRetryScheduled:t0") == 1);
    CHECK(r.revived->task("t0").failure_reason == "Timeout:startToClose");
  }

  TEST_CASE("after a scheduler restart, what a worker runs of a closed workflow is cancelled at once, not when the window closes") {
    // Its task ended (timed out, stopped) while the scheduler restarted, and the cancellation
    // went with the crash: nobody will take it back.
    DispatcherOptions options;
    options.workflow_closed = [](const std::string& id) { return id.rfind("wf-closed/", 0) == 0; };
    Scheduler s(std::move(options), nullptr, true);
    auto link = std::make_shared<FakeWorkerLink>();
    auto registered = s.register_worker(worker_info("w1", "instance-1", {{"jobs", 2}}), link);
    REQUIRE_MESSAGE(registered, test::why(registered));
    link->answer_running({"wf-closed/t0/1.1", "wf-open/t0/1.1"});
    s.fx.run();
    CHECK(link->cancels == std::vector<std::string>{"wf-closed/t0/1.1"});
  }

  TEST_CASE("after a scheduler restart, an invocation whose worker does not come back fails over when the window closes") {
    Restarted r("wf-abandoned");
    r.after->advance(9s);
    CHECK(r.revived->count("taskFailover:t0") == 0);  // still waiting for w1
    r.after->advance(1s);
    CHECK(r.revived->count("taskFailover:t0") == 1);
    auto w2 = r.after->connect("w2", {{"jobs", 1}});
    r.after->advance(1s, {&w2});
    REQUIRE(w2.link->runs.size() == 1);
    CHECK(w2.link->runs[0].invocation.attempt == 2);
  }

  TEST_CASE("after a scheduler restart, what a worker runs that no revived task claims is cancelled when the window closes") {
    Scheduler s({}, nullptr, true);
    auto link = std::make_shared<FakeWorkerLink>();
    auto registered = s.register_worker(worker_info("w1", "instance-1", {{"jobs", 1}}), link);
    REQUIRE_MESSAGE(registered, test::why(registered));
    link->answer_running({"wf-unknown/t0/1.1"});
    s.fx.run();
    Worker w{"w1", link, registered->worker};
    s.advance(9s, {&w});
    CHECK(link->cancels.empty());  // a task revived late may still adopt it
    s.advance(1s, {&w});
    CHECK(link->cancels == std::vector<std::string>{"wf-unknown/t0/1.1"});
  }

  TEST_CASE("after a scheduler restart, an outcome that arrives before its task is revived is retried, not refused") {
    Scheduler s({}, nullptr, true);
    auto w = s.connect("w1", {{"jobs", 1}});
    auto early = s.update(w, report_of("wf-late/t0/1.1", TaskReport::SUCCEEDED, "done"));
    REQUIRE(early.arrived());
    REQUIRE_FALSE(early.get());
    CHECK(early.get().error().code == Errc::UNAVAILABLE);
    // A revival that found nothing closes the window: the same report is now foreign.
    s.recovered(0);
    auto late = s.update(w, report_of("wf-late/t0/1.1", TaskReport::SUCCEEDED, "done"));
    REQUIRE(late.arrived());
    REQUIRE_FALSE(late.get());
    CHECK(late.get().error().code == Errc::NOT_FOUND);
  }

  TEST_CASE("every accepted registration is recorded durably with the worker's identity; a refused one is not") {
    BookedScheduler b;
    auto& s = b.s;
    const std::string id = "wkr-00000000000000a1";
    auto link = std::make_shared<FakeWorkerLink>();
    auto first = s.register_worker(identified("w1", "instance-1", id), link);
    REQUIRE_MESSAGE(first, test::why(first));
    auto record = b.record("w1");
    CHECK(record.worker_id == id);
    CHECK(record.hostname == "host-w1");
    CHECK(record.pid == 4242);
    CHECK(record.instance_id == "instance-1");
    CHECK(record.resource_id == "gpu0");
    CHECK(record.task_lists == std::map<std::string, uint32_t>{{"jobs", 2}});
    CHECK(record.registrations == 1);
    CHECK(record.first_registered_us == 1'000);
    CHECK(record.last_registered_us == 1'000);
    CHECK(record.last_seen_us == 1'000);
    CHECK(record.status == "STARTED");
    link->answer_running();
    s.fx.run();
    Worker w{"w1", link, first->worker};
    REQUIRE(s.health(w) == HealthState::HEALTHY);

    // Refused: another instance while this one is HEALTHY. Nothing recorded.
    *b.now_us = 2'000;
    REQUIRE_FALSE(s.register_worker(identified("w1", "instance-2", "wkr-00000000000000b2"),
                                    std::make_shared<FakeWorkerLink>()));
    CHECK(b.record("w1").registrations == 1);
    CHECK(b.record("w1").worker_id == id);

    // A reconnect of the same process counts.
    *b.now_us = 3'000;
    REQUIRE(s.register_worker(identified("w1", "instance-1", id), std::make_shared<FakeWorkerLink>()));
    CHECK(b.record("w1").registrations == 2);
    CHECK(b.record("w1").last_registered_us == 3'000);
    CHECK(b.record("w1").first_registered_us == 1'000);

    CHECK(journal_lines(*b.store, "w1") ==
          std::vector<std::string>{"registered instance-1 " + id, "health NEW->HEALTHY", "registered instance-1 " + id});
  }

  TEST_CASE("a restarted worker taking over its dead instance's shard is counted, and its health changes are journaled") {
    BookedScheduler b;
    auto& s = b.s;
    const std::string id = "wkr-00000000000000a1";
    auto link = std::make_shared<FakeWorkerLink>();
    auto first = s.register_worker(identified("w1", "instance-1", id), link);
    REQUIRE(first);
    link->answer_running();
    s.fx.run();
    Worker old{"w1", link, first->worker};
    s.advance(3s);  // silent: UNHEALTHY, then MUST_DIE
    REQUIRE(old.link->suicides.size() == 1);

    *b.now_us = 9'000;
    auto fresh_link = std::make_shared<FakeWorkerLink>();
    auto taken = s.register_worker(identified("w1", "instance-2", id), fresh_link);
    REQUIRE_MESSAGE(taken, test::why(taken));
    auto record = b.record("w1");
    CHECK(record.registrations == 2);
    CHECK(record.instance_id == "instance-2");
    CHECK(record.worker_id == id);
    CHECK(record.first_registered_us == 1'000);
    CHECK(record.last_registered_us == 9'000);
    CHECK(journal_lines(*b.store, "w1") ==
          std::vector<std::string>{"registered instance-1 " + id, "health NEW->HEALTHY", "health HEALTHY->UNHEALTHY",
                                   "health UNHEALTHY->MUST_DIE", "registered instance-2 " + id});
  }

  TEST_CASE("a restarted scheduler counts on from the stored record") {
    std::shared_ptr<storage::MemoryHistoryStore> kept;
    {
      BookedScheduler before;
      REQUIRE(before.s.register_worker(identified("w1", "instance-1", "wkr-00000000000000a1"),
                                       std::make_shared<FakeWorkerLink>()));
      kept = before.store->snapshot();
    }
    BookedScheduler after(kept);
    *after.now_us = 5'000;
    REQUIRE(after.s.register_worker(identified("w1", "instance-2", "wkr-00000000000000a1"),
                                    std::make_shared<FakeWorkerLink>()));
    auto record = after.record("w1");
    CHECK(record.registrations == 2);
    CHECK(record.first_registered_us == 1'000);
    CHECK(record.last_registered_us == 5'000);
    CHECK(journal_lines(*after.store, "w1").size() == 2);
  }
}

TEST_SUITE("actors.dispatch") {
  TEST_CASE("a placement a session turned down after it was placed again gives its worker's slot back") {
    Scheduler s;
    std::vector<std::shared_ptr<FakeWorkerLink>> links;
    for (const std::string shard : {"w1", "w2"}) {
      auto info = worker_info(shard, "instance-1", {{"default", 1}});
      info.max_concurrent_sessions = 1;
      links.push_back(std::make_shared<FakeWorkerLink>());
      REQUIRE(s.register_worker(info, links.back()));
      links.back()->answer_running();
      s.fx.run();
    }
    auto first = s.fx.ask<SessionPlace>(s.dispatcher, place_atom::value, SessionAsk{"wf/s", "", {"default"}, "", ""});
    REQUIRE_MESSAGE(first, test::why(first));
    // Asked again (recreated once its window ended) before it gave the first placement back, as
    // when that answer crossed its withdrawal: it goes to the other worker.
    auto second =
        s.fx.ask<SessionPlace>(s.dispatcher, place_atom::value, SessionAsk{"wf/s", "", {"default"}, first->shard, ""});
    REQUIRE_MESSAGE(second, test::why(second));
    CHECK(second->shard != first->shard);
    s.fx.self->send(s.dispatcher, free_atom::value, std::string("wf/s"), first->id);  // the one it turned down
    s.fx.run();
    auto third = s.fx.ask<SessionPlace>(s.dispatcher, place_atom::value, SessionAsk{"wf/t", "", {"default"}, "", ""});
    REQUIRE_MESSAGE(third, test::why(third));
    CHECK(third->shard == first->shard);
  }

  TEST_CASE("after a scheduler restart, a session its worker holds keeps its slot until claimed; one nobody claims in the recovery window is closed there") {
    DispatcherOptions options;
    options.recovery_window = 10s;
    Scheduler s(options, nullptr, true);
    auto info = worker_info("w1", "instance-1", {{"default", 1}});
    info.max_concurrent_sessions = 2;
    auto link = std::make_shared<FakeWorkerLink>();
    auto registered = s.register_worker(info, link);
    REQUIRE_MESSAGE(registered, test::why(registered));
    const Worker w{"w1", link, registered->worker};
    // It still holds two sessions from before the restart; only one will be claimed.
    link->answer_running({}, {}, {"wf-old/kept", "wf-old/orphan"});
    s.fx.run();
    s.recovered(1);
    auto kept = s.fx.ask<SessionPlace>(s.dispatcher, claim_atom::value, std::string("wf-old/kept"), std::string("w1"));
    REQUIRE_MESSAGE(kept, test::why(kept));
    // Both slots are taken: a new session waits, though the worker registered and is healthy.
    s.fx.self->send(s.dispatcher, place_atom::value, SessionAsk{"wf-new/s", "", {"default"}, "", ""});
    s.fx.run();
    std::optional<SessionPlace> placed;
    auto receive = [&] {
      s.fx.self->receive([&](SessionPlace& p) { placed = p; }, [&](caf::error& e) { FAIL(to_string(e)); },
                         caf::after(std::chrono::seconds(0)) >> [] {});
    };
    receive();
    CHECK_FALSE(placed);
    CHECK(link->session_closes.empty());
    // The window closes: the session nobody claimed is closed on its worker, its slot taken back.
    s.advance(11s, {&w});
    REQUIRE(link->session_closes.size() == 1);
    CHECK(link->session_closes[0].id == "wf-old/orphan");
    receive();
    CHECK_FALSE(placed);  // its slot is taken back once the worker closed it
    link->session_closes[0].done(std::optional<TaskReport>());
    s.fx.run();
    receive();
    REQUIRE(placed);
    CHECK(placed->shard == "w1");
    // A claim that comes too late is refused: the worker holds the session no more.
    auto late = s.fx.ask<SessionPlace>(s.dispatcher, claim_atom::value, std::string("wf-old/orphan"), std::string("w1"));
    REQUIRE_FALSE(late);
    CHECK(late.error().code == Errc::UNAVAILABLE);
  }

  TEST_CASE("a worker that holds a session no session actor has placed there closes it at once when no restart is under way") {
    Scheduler s;
    auto info = worker_info("w1", "instance-1", {{"default", 1}});
    info.max_concurrent_sessions = 1;
    auto link = std::make_shared<FakeWorkerLink>();
    REQUIRE(s.register_worker(info, link));
    link->answer_running({}, {}, {"wf-gone/s"});
    s.fx.run();
    REQUIRE(link->session_closes.size() == 1);
    CHECK(link->session_closes[0].id == "wf-gone/s");
    auto waits = s.fx.ask<SessionPlace>(s.dispatcher, place_atom::value, SessionAsk{"wf-new/s", "", {"default"}, "", ""});
    CHECK_FALSE(waits);  // the worker holds it until its close is over
    link->session_closes[0].done(std::optional<TaskReport>());
    s.fx.run();
    std::optional<SessionPlace> fresh;
    s.fx.self->receive([&](SessionPlace& p) { fresh = p; }, caf::after(std::chrono::seconds(0)) >> [] {});
    REQUIRE(fresh);
    CHECK(fresh->shard == "w1");
  }
}
