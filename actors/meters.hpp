// What the actors count for the node's metrics: plain meters (schema/meters.hpp) that the
// actors update where things happen, and that runtime/metrics reads when it is scraped. Held
// through a nullable std::shared_ptr: with none (tests, a node without `metrics`) nothing is
// counted and the cost is a null check. Gauges that the actors' state already answers (live
// workflows, worker health) are not here: the scrape asks the actors for them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actors/task/task_machine.hpp"
#include "actors/workflow/workflow_machine.hpp"
#include "schema/meters.hpp"

namespace troupe::actors {

/// The number of tasks waiting in each task list's queue, one gauge per list. Thread-safe.
class QueueDepths {
 public:
  /// The gauge of `task_list`, made on first use; the dispatcher hands it to the list's
  /// matching actor when it spawns it, which sets it whenever its queue changes.
  std::shared_ptr<meters::Gauge> gauge(const std::string& task_list);
  /// Every list's depth now, by name.
  std::map<std::string, int64_t> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<meters::Gauge>> gauges_;
};

/// The scheduler's meters. Counted only for what happens live, never for what a revival or a
/// wake-up replays from a history.
struct SchedulerMeters {
  /// Runs started: submissions acknowledged, and reruns of finished workflows.
  meters::Counter workflows_started;
  /// Runs closed (their close durable), by the state they closed in, indexed by WorkflowState:
  /// only SUCCESS, FAILED and STOPPED are ever counted.
  std::array<meters::Counter, WorkflowMachineTraits::states> workflows_closed;
  /// Task instances that reached a terminal state, indexed by TaskState: SUCCESS, FAILURE,
  /// KILLED and FORCED_SUCCESS.
  std::array<meters::Counter, TaskMachineTraits::states> tasks_ended;
  /// From the moment an attempt's invocation could be dispatched (it joined its task list) to
  /// its dispatch to a worker, in µs: the span the scheduleToStart timeout limits.
  meters::Histogram schedule_to_start_us{meters::latency_bounds_us()};
  /// From an invocation's dispatch to its end (whatever the outcome), in µs: the span the
  /// startToClose timeout limits.
  meters::Histogram start_to_close_us{meters::latency_bounds_us()};
  QueueDepths queue_depths;

  void workflow_closed(WorkflowState state) { workflows_closed[static_cast<size_t>(state)].add(); }
  void task_ended(TaskState state) { tasks_ended[static_cast<size_t>(state)].add(); }
};

/// A worker node's meters.
struct WorkerMeters {
  /// Invocations its executor runs now (tasks and sessions' env actions).
  meters::Gauge running_invocations;
  /// Sessions open on it now.
  meters::Gauge open_sessions;
};

}  // namespace troupe::actors
