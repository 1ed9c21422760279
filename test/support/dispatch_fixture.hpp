// The scheduler's dispatch actors on CAF's test coordinator, for tests: the real dispatcher,
// matching, worker, workflow and task actors, with only the RPC boundary (WorkerLink) replaced
// by a double whose calls the test answers by hand. Time moves only when the test advances it.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/system/directory.hpp"
#include "actors/system/dispatcher.hpp"
#include "actors/system/replay.hpp"
#include "actors/worker/worker_book.hpp"
#include "actors/workflow/workflow_actor.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/history.hpp"
#include "test/support/why.hpp"

namespace troupe::test::dispatch {

using namespace troupe::actors;

template <class T>
using Done = std::function<void(Result<T>)>;

/// The worker process as the scheduler's worker actor sees it through the RPC link: every call
/// is recorded with its callback, and nothing is answered until the test says so.
class FakeWorkerLink final : public WorkerLink {
 public:
  struct RunCall {
    Invocation invocation;
    Done<RunAnswer> answer;
    /// Answers that the invocation runs (false) or ended already, its outcome to follow as a
    /// report of its own (true); or that the call failed.
    void done(Result<bool> ended) {
      if (!ended) {
        answer(ended.error());
      } else {
        answer(RunAnswer{*ended, nullptr});
      }
    }
    /// Answers that the invocation ended already, with how in the answer.
    void ended_with(TaskReport outcome) { answer(RunAnswer{true, std::make_shared<const TaskReport>(std::move(outcome))}); }
  };
  struct NotifyCall {
    std::vector<std::string> ids;
    Fence fence;
    Done<std::vector<std::string>> done;
  };

  /// getRunningTasks calls not answered yet; `running_queries_asked` counts all of them.
  std::vector<Done<RunningTasks>> running_queries;
  size_t running_queries_asked = 0;
  std::vector<RunCall> runs;
  std::vector<NotifyCall> notifies;
  std::vector<std::string> cancels;
  std::vector<std::string> suicides;
  std::vector<std::string> interrupts;
  std::vector<std::string> stop_requests;
  std::vector<std::string> acknowledged;  ///< outcomes from answers, acknowledged as durable
  size_t acknowledge_calls = 0;

  void get_running_tasks(Done<RunningTasks> done) override {
    ++running_queries_asked;
    running_queries.push_back(std::move(done));
  }
  void run_task(const Invocation& invocation, Done<RunAnswer> done) override {
    runs.push_back(RunCall{invocation, std::move(done)});
  }
  void acknowledge(std::vector<std::string> ids) override {
    ++acknowledge_calls;
    acknowledged.insert(acknowledged.end(), ids.begin(), ids.end());
  }
  void notify_if_not_running(std::vector<std::string> ids, Fence fence,
                             Done<std::vector<std::string>> done) override {
    notifies.push_back(NotifyCall{std::move(ids), fence, std::move(done)});
  }
  void cancel_task(const std::string& invocation_id, Duration) override { cancels.push_back(invocation_id); }
  void request_suicide(const std::string& reason) override { suicides.push_back(reason); }
  void interrupt_task(const std::string& invocation_id, Duration, const std::string&) override {
    interrupts.push_back(invocation_id);
  }
  void request_stop(const std::string& reason) override { stop_requests.push_back(reason); }
  struct OpenCall {
    SessionOpen session;
    Done<TaskReport> done;
  };
  struct CloseCall {
    std::string id;
    Done<std::optional<TaskReport>> done;
  };
  std::vector<OpenCall> session_opens;
  std::vector<CloseCall> session_closes;
  void open_session(const SessionOpen& session, Done<TaskReport> done) override {
    session_opens.push_back(OpenCall{session, std::move(done)});
  }
  void close_session(const std::string& id, Done<std::optional<TaskReport>> done) override {
    session_closes.push_back(CloseCall{id, std::move(done)});
  }

  /// Answers every pending getRunningTasks: the worker holds `running`, of which `ended` ended,
  /// and holds `sessions` open.
  void answer_running(const std::vector<std::string>& running = {}, const std::vector<std::string>& ended = {},
                      const std::vector<std::string>& sessions = {}) {
    REQUIRE_MESSAGE(!running_queries.empty(), "the scheduler never asked for the running tasks");
    auto pending = std::move(running_queries);
    running_queries.clear();
    for (auto& done : pending) done(RunningTasks{running, ended, sessions});
  }

  /// The invocation ids of every runTask, in the order they were sent.
  std::vector<std::string> run_ids() const {
    std::vector<std::string> out;
    for (const auto& run : runs) out.push_back(run.invocation.invocation_id);
    return out;
  }
};

/// A reply that travels in a message (Reply<T>) and the box it lands in. Empty while the
/// actor has not answered: a message to an actor that has ended is never answered.
template <class T>
struct Answer {
  std::shared_ptr<std::optional<Result<T>>> box = std::make_shared<std::optional<Result<T>>>();
  Reply<T> reply() const {
    return Reply<T>{[box = box](Result<T> r) { *box = std::move(r); }};
  }
  bool arrived() const { return box->has_value(); }
  /// The actor answered `value` (not an error).
  bool is(const T& value) const { return arrived() && **box && ***box == value; }
  const Result<T>& get() const {
    REQUIRE_MESSAGE(arrived(), "no reply arrived");
    return **box;
  }
};

/// A registered worker instance: its side of the link and the scheduler's actor for it.
struct Worker {
  std::string shard;
  std::shared_ptr<FakeWorkerLink> link;
  worker_actor actor;
};

inline WorkerInfo worker_info(std::string shard, std::string instance, std::map<std::string, uint32_t> lists) {
  WorkerInfo info;
  info.shard_id = std::move(shard);
  info.hostname = "host-" + info.shard_id;
  info.pid = 4242;
  info.instance_id = std::move(instance);
  info.task_lists = std::move(lists);
  return info;
}

/// What a worker reports on `invocation_id`: started, a heartbeat, or how it ended.
inline TaskReport report_of(const std::string& invocation_id, TaskReport::Kind kind, std::string payload = {}) {
  TaskReport report;
  report.invocation_id = invocation_id;
  report.kind = kind;
  report.payload = std::move(payload);
  if (kind == TaskReport::FAILED) report.reason = "Oops";
  return report;
}

/// The scheduler's side of dispatch: the test fixture with the dispatcher as its executor.
struct Scheduler {
  test::ActorFixture fx;
  dispatcher_actor dispatcher;

  /// A scheduler on `store`'s history: a fresh one by default, or another scheduler's to play
  /// a restart (the earlier scheduler's actors stay idle: on the test coordinator they run only
  /// when their own fixture runs). Unless it `revives` workflows, it has nothing to recover and
  /// closes its recovery window at once, as a node does when its revival found nothing.
  explicit Scheduler(DispatcherOptions options = {}, std::shared_ptr<storage::MemoryHistoryStore> store = nullptr,
                     bool revives = false, uint64_t epoch = 1)
      : fx({}, std::move(store)) {
    // One incarnation's fence counter, shared by its dispatches and its worker actors, as a
    // node wires it.
    if (!options.fences) options.fences = std::make_shared<FenceCounter>(epoch);
    fx.wiring.fences = options.fences;
    fx.wiring.recovery_window = options.recovery_window;
    dispatcher = fx.own(spawn_dispatcher(fx.sys, std::move(options)));
    // Task actors send their invocations to the dispatcher instead of the local executor.
    fx.wiring.executor = caf::actor_cast<executor_actor>(dispatcher);
    fx.wiring.sessions = caf::actor_cast<session_host>(dispatcher);
    if (!revives) recovered(0);
  }

  /// What the node says once its revival is done.
  void recovered(uint64_t revived) {
    fx.self->send(dispatcher, recovered_atom::value, revived);
    fx.run();
  }

  /// Sends a registration, runs, and returns the dispatcher's answer (TIMED_OUT if none).
  Result<RegistrationOutcome> register_worker(WorkerInfo info, const std::shared_ptr<FakeWorkerLink>& link) {
    Answer<RegistrationOutcome> answer;
    fx.self->send(dispatcher, register_atom::value, std::move(info), std::shared_ptr<WorkerLink>(link),
                  answer.reply());
    fx.run();
    if (!answer.arrived()) return fail(Errc::TIMED_OUT, "the dispatcher did not answer the registration");
    return answer.get();
  }

  /// Registers a worker and answers its getRunningTasks with nothing running: it is HEALTHY
  /// and has offered its slots when this returns.
  Worker connect(const std::string& shard, std::map<std::string, uint32_t> lists,
                 const std::string& instance = "instance-1") {
    auto link = std::make_shared<FakeWorkerLink>();
    auto registered = register_worker(worker_info(shard, instance, std::move(lists)), link);
    REQUIRE_MESSAGE(registered, test::why(registered));
    CHECK_FALSE(registered->start_clean);  // the first instance this scheduler sees
    link->answer_running();
    fx.run();
    Worker worker{shard, link, registered->worker};
    REQUIRE(health(worker) == HealthState::HEALTHY);
    return worker;
  }

  /// The worker actor's health; empty once the actor has ended.
  std::optional<HealthState> health(const Worker& worker) {
    fx.self->send(worker.actor, describe_atom::value);
    fx.run();
    std::optional<HealthState> out;
    fx.self->receive([&](uint8_t health, const std::string&) { out = static_cast<HealthState>(health); },
                     caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }

  Answer<HealthState> heartbeat(const Worker& worker) {
    Answer<HealthState> answer;
    fx.self->send(worker.actor, heartbeat_atom::value, answer.reply());
    fx.run();
    return answer;
  }

  /// updateStatus: an invocation ended on the worker.
  Answer<bool> update(const Worker& worker, TaskReport report) {
    Answer<bool> answer;
    fx.self->send(worker.actor, update_atom::value, std::move(report), answer.reply());
    fx.run();
    return answer;
  }

  /// The reporter's started() or heartbeat().
  Answer<bool> report(const Worker& worker, TaskReport report) {
    Answer<bool> answer;
    fx.self->send(worker.actor, report_atom::value, std::move(report), answer.reply());
    fx.run();
    return answer;
  }

  /// Moves the clock by `d` in heartbeat-interval steps; after each step the workers in `alive`
  /// heartbeat and every other worker stays silent.
  void advance(Duration d, const std::vector<const Worker*>& alive = {}) {
    const Duration step = HealthTimeouts{}.heartbeat_interval;
    while (d > Duration::zero()) {
      const Duration slice = std::min(step, d);
      fx.advance(slice);
      d -= slice;
      for (const Worker* w : alive) REQUIRE(heartbeat(*w).is(HealthState::HEALTHY));
    }
  }
};

/// A workflow run by real workflow and task actors that dispatch through the scheduler.
struct Flow {
  test::ActorFixture& fx;
  std::string id;
  workflow_actor wf;

  Flow(Scheduler& scheduler, std::string workflow_id, const std::string& json)
      : fx(scheduler.fx), id(std::move(workflow_id)) {
    REQUIRE_MESSAGE(parse_definition(json), "the test's definition must be valid");
    wf = fx.own(spawn_workflow(fx.sys, WorkflowSetup{id, json, "{}", {}, fx.shared_wiring(), nullptr}));
  }

  /// The workflow revived from its history by a restarted scheduler; it recovers its live tasks
  /// at once. The result is asked for first, as in start(), unless `ask_result` is false.
  Flow(Scheduler& scheduler, std::string workflow_id, bool ask_result = true)
      : fx(scheduler.fx), id(std::move(workflow_id)) {
    auto replayed = actors::replay(*fx.store, id);
    REQUIRE_MESSAGE(replayed, test::why(replayed));
    WorkflowSetup setup;
    setup.id = id;
    setup.wiring = fx.shared_wiring();
    setup.replayed = std::make_shared<const ReplayedWorkflow>(std::move(*replayed));
    wf = fx.own(spawn_workflow(fx.sys, std::move(setup)));
    if (ask_result) fx.self->send(wf, result_atom::value);
    fx.run();
  }

  /// Starts the workflow and runs until every actor is idle. The result is asked for first:
  /// the workflow actor ends with its workflow.
  void start() {
    fx.self->send(wf, result_atom::value);
    auto started = fx.ask<std::string>(wf, start_atom::value);
    REQUIRE_MESSAGE(started, test::why(started));
  }

  /// How the workflow ended, once it has (after start()).
  std::optional<WorkflowOutcome> outcome() {
    fx.run();
    std::optional<WorkflowOutcome> out;
    fx.self->receive([&](WorkflowOutcome& o) { out = std::move(o); },
                     caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }

  TaskModel task(const std::string& name) {
    auto replayed = actors::replay(*fx.store, id);
    REQUIRE_MESSAGE(replayed, test::why(replayed));
    REQUIRE(replayed->tasks.count(name) == 1);
    return replayed->tasks.at(name);
  }

  /// The history's event kinds in order, e.g. "taskSucceeded:t0".
  std::vector<std::string> events() {
    std::vector<std::string> out;
    for (const auto& e : test::decoded_history(*fx.store, id)) {
      out.push_back(test::body_kind(e) + ":" + e.get().getActorId().cStr());
    }
    return out;
  }

  /// The event kinds of the actor called `name` only.
  std::vector<std::string> events_of(const std::string& name) {
    auto all = events();
    const std::string suffix = ":" + name;
    std::erase_if(all, [&](const std::string& e) { return !e.ends_with(suffix); });
    return all;
  }

  size_t count(const std::string& kind) {
    auto all = events();
    return static_cast<size_t>(std::count(all.begin(), all.end(), kind));
  }
};

/// A workflow of `n` independent tasks t0..t(n-1) on `list`, each with `fields` added.
inline std::string independent_tasks(int n, const std::string& list, const std::string& fields = "") {
  std::string json = R"({"name": "batch", "tasks": [)";
  for (int i = 0; i < n; ++i) {
    if (i > 0) json += ", ";
    json += R"({"name": "t)" + std::to_string(i) + R"(", "handler": "noop", "taskList": ")" + list + "\"";
    if (!fields.empty()) json += ", " + fields;
    json += "}";
  }
  return json + "]}";
}

inline const char* retry_twice = R"("retry": {"initialInterval": "1s", "backoffCoefficient": 1.0, "maximumAttempts": 3})";

/// A scheduler whose dispatcher keeps a WorkerBook on `store`, on a wall clock the test sets
/// (`now_us`, shared with the book and the worker actors). A second one on the same store and
/// clock, reviving, with the next epoch, plays the first's restart.
struct BookedScheduler {
  std::shared_ptr<storage::MemoryHistoryStore> store;
  std::shared_ptr<int64_t> now_us;
  Scheduler s;

  explicit BookedScheduler(std::shared_ptr<storage::MemoryHistoryStore> on = std::make_shared<storage::MemoryHistoryStore>(),
                           std::shared_ptr<int64_t> clock = std::make_shared<int64_t>(1'000), bool revives = false,
                           uint64_t epoch = 1, QuarantinePolicy quarantine = {})
      : store(on), now_us(clock), s(options(on, clock, quarantine), on, revives, epoch) {}

  static DispatcherOptions options(std::shared_ptr<storage::MemoryHistoryStore> store, std::shared_ptr<int64_t> now,
                                   QuarantinePolicy quarantine) {
    DispatcherOptions o;
    o.book = std::make_shared<WorkerBook>(std::move(store), [now] { return *now; });
    o.now_us = [now] { return *now; };
    o.quarantine = quarantine;
    return o;
  }

  storage::WorkerRecord record(const std::string& shard) {
    auto found = store->find_worker(shard);
    REQUIRE_MESSAGE(found, test::why(found));
    REQUIRE_MESSAGE(*found, "no record of worker " << shard);
    return **found;
  }
};

inline WorkerInfo identified(std::string shard, std::string instance, std::string worker_id) {
  auto info = worker_info(std::move(shard), std::move(instance), {{"jobs", 2}});
  info.worker_id = std::move(worker_id);
  info.resource_id = "gpu0";
  return info;
}

}  // namespace troupe::test::dispatch
