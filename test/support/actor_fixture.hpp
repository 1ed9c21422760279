// Deterministic actor tests: CAF's test coordinator runs every actor on the test's thread, time
// moves only when the test advances it, the history lives in a MemoryHistoryStore, and
// handlers are programmable.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/executor/local_executor.hpp"
#include "actors/system/history_writer.hpp"
#include "actors/task/task_model.hpp"
#include "actors/wiring.hpp"
#include "actors/workflow/workflow_model.hpp"
#include "storage/memory_history_store.hpp"

namespace troupe::test {

inline caf::actor_system_config& testing_config(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("testing"));
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  return cfg;
}

struct ActorFixture {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  caf::scoped_actor self;
  std::shared_ptr<storage::MemoryHistoryStore> store = std::make_shared<storage::MemoryHistoryStore>();
  std::shared_ptr<actors::HandlerRegistry> handlers =
      std::make_shared<actors::HandlerRegistry>(actors::HandlerRegistry::with_builtins());
  actors::Wiring wiring;
  /// What ended actors reported. Shared with the hooks: actors still running while the
  /// actor system shuts down may report after the fixture's own members are gone.
  struct Ends {
    std::vector<std::string> tasks;
    std::map<std::string, std::string> workflows;
    std::vector<std::string> sessions;
  };
  std::shared_ptr<Ends> ends = std::make_shared<Ends>();
  /// Canonical states of task actors that ended, in the order they ended.
  std::vector<std::string>& ended_tasks = ends->tasks;
  /// Canonical states of sessions that ended (CLOSED or FAILED), in the order they ended.
  std::vector<std::string>& ended_sessions = ends->sessions;
  /// Canonical states of workflow actors that ended, by workflow id.
  std::map<std::string, std::string>& ended_workflows = ends->workflows;
  /// Microseconds since the epoch at the test clock's start.
  static constexpr int64_t epoch_us = 1'700'000'000'000'000;

  explicit ActorFixture(actors::LocalExecutorOptions executor = {},
                        std::shared_ptr<storage::MemoryHistoryStore> shared_store = nullptr)
      : sys(testing_config(cfg)),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())),
        self(sys, true) {
    if (shared_store) store = std::move(shared_store);
    const auto start = sched.clock().now();
    wiring.now_us = [clock = &sched.clock(), start] {
      return epoch_us +
             std::chrono::duration_cast<std::chrono::microseconds>(clock->now() - start).count();
    };
    wiring.definitions = std::make_shared<DefinitionCache>();
    wiring.writer = actors::HistoryWriter(store);
    wiring.executor = actors::spawn_local_executor(sys, handlers, std::move(executor));
    wiring.on_task_end = [ends = ends](const std::string&, const std::string& canonical) {
      ends->tasks.push_back(canonical);
    };
    wiring.on_session_end = [ends = ends](const std::string&, const std::string& canonical) {
      ends->sessions.push_back(canonical);
    };
    wiring.on_workflow_end = [ends = ends](const std::string& id, const std::string& canonical) {
      ends->workflows[id] = canonical;
    };
  }

  /// Ends every actor the fixture or the test owns (see own()), so nothing outlives the test.
  ~ActorFixture() {
    sched.run();
    owned.push_back(caf::actor_cast<caf::actor>(wiring.executor));
    for (auto& actor : owned) self->send_exit(actor, caf::exit_reason::user_shutdown);
    sched.run();
  }

  /// The wiring as actors take it: shared, fixed at the time of the call.
  std::shared_ptr<const actors::Wiring> shared_wiring() const {
    return std::make_shared<const actors::Wiring>(wiring);
  }

  /// Makes the fixture end `actor` when the test is over; returns it.
  template <class Handle>
  Handle own(Handle actor) {
    owned.push_back(caf::actor_cast<caf::actor>(actor));
    return actor;
  }
  std::vector<caf::actor> owned;

  /// Runs every actor until no message is left.
  void run() { sched.run(); }

  /// Moves the clock forward by `d`, firing what falls due, and runs.
  void advance(Duration d) {
    sched.advance_time(std::chrono::duration_cast<caf::timespan>(d));
    sched.run();
  }

  /// advance(d) while the store holds its commits, as a slow sync would: actors go on with what
  /// need not wait for durability and hear of their appends afterwards, together and in order,
  /// as from one group commit.
  void advance_holding_commits(Duration d) {
    store->hold();
    advance(d);
    store->release();
    run();
  }

  /// Microseconds elapsed on the test clock.
  int64_t elapsed_us() { return wiring.now_us() - epoch_us; }

  /// Sends `xs` to `to`, runs, and returns the reply (an error reply as an Error); TIMED_OUT
  /// if there is no reply once every actor is idle.
  template <class T, class Handle, class... Ts>
  Result<T> ask(const Handle& to, Ts... xs) {
    self->send(to, xs...);
    sched.run();
    Result<T> out = fail(Errc::TIMED_OUT, "no reply");
    self->receive([&](T& value) { out = std::move(value); },
                  [&](caf::error& error) { out = actors::from_caf(error); },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }
};

}  // namespace troupe::test
