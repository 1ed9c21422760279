// The workflows of one schedule, drawn from its seed: chains, fan-outs and single tasks, with
// and without retries, some failing their first attempts, a few failing for good, a timeout
// now and then, some heartbeating. Each task's behaviour on every attempt is fixed by the
// design, so how a workflow should end does not depend on the faults.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test/sim/sim_worker.hpp"
#include "test/sim/sim_world.hpp"

namespace troupe::sim {

struct TaskDesign {
  std::string name;
  std::vector<std::string> depends_on;
  std::string task_list = "jobs";
  uint32_t max_attempts = 1;  ///< 1: no retries
  Duration initial_interval = 500ms;
  Duration duration{0};       ///< of an attempt that is not slowed down; 0: ends within runTask
  uint32_t fail_first = 0;    ///< attempts 1..fail_first fail (retryable, reason SimFlaky)
  bool doomed = false;        ///< every attempt fails non-retryably (reason SimDoomed)
  std::optional<Duration> start_to_close;
  bool slow_first = false;    ///< attempt 1 outlasts start_to_close
  std::optional<Duration> heartbeat_timeout;
  Duration heartbeat_every{0};

  /// Whether the task fails whatever the faults: its design runs out of attempts.
  bool fails_by_design() const;
};

struct WorkflowDesign {
  std::string id;
  std::string shape;  ///< chain, fanout, single: for reports
  std::vector<TaskDesign> tasks;

  /// SUCCESS, or FAILED when a task fails by design.
  std::string expected() const;
  std::string json() const;
  const TaskDesign* task(const std::string& name) const;
  std::string describe() const;
};

struct Workload {
  std::vector<WorkflowDesign> workflows;
  const WorkflowDesign* workflow(const std::string& id) const;
  /// How invocation `invocation` behaves on a worker.
  RunPlan plan(const actors::Invocation& invocation) const;
};

/// `count` workflows whose tasks use `task_lists`.
Workload random_workload(World& world, int count, const std::vector<std::string>& task_lists);

}  // namespace troupe::sim
