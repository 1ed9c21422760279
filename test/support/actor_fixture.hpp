// Deterministic actor tests: CAF's test coordinator runs every actor on the test's thread, time
// moves only when the test advances it, the history lives in a MemoryHistoryStore, and
// handlers are programmable.
#pragma once

#include <caf/actor_system.hpp>
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
  /// Canonical states of task actors that ended, in the order they ended.
  std::vector<std::string> ended_tasks;
  /// Canonical states of workflow actors that ended, by workflow id.
  std::map<std::string, std::string> ended_workflows;
  /// Microseconds since the epoch at the test clock's start.
  static constexpr int64_t epoch_us = 1'700'000'000'000'000;

  explicit ActorFixture(actors::LocalExecutorOptions executor = {})
      : sys(testing_config(cfg)),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())),
        self(sys, true) {
    const auto start = sched.clock().now();
    wiring.now_us = [this, start] {
      return epoch_us +
             std::chrono::duration_cast<std::chrono::microseconds>(sched.clock().now() - start).count();
    };
    wiring.writer = actors::spawn_history_writer(sys, store);
    wiring.executor = actors::spawn_local_executor(sys, handlers, std::move(executor));
    wiring.on_task_end = [this](const std::string&, const std::string& canonical) {
      ended_tasks.push_back(canonical);
    };
    wiring.on_workflow_end = [this](const std::string& id, const std::string& canonical) {
      ended_workflows[id] = canonical;
    };
  }

  /// The executor and writer live as long as the system, and a test may leave a workflow
  /// paused: the fixture owns them all, so the system does not wait for them to end.
  ~ActorFixture() {
    sched.run();
    sys.await_actors_before_shutdown(false);
  }

  /// Runs every actor until no message is left.
  void run() { sched.run(); }

  /// Moves the clock forward by `d`, firing what falls due, and runs.
  void advance(Duration d) {
    sched.advance_time(std::chrono::duration_cast<caf::timespan>(d));
    sched.run();
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
