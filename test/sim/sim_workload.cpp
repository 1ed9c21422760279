// Random workflow designs and the run plans they give invocations.
#include "test/sim/sim_workload.hpp"

#include <sstream>

namespace troupe::sim {
namespace {

std::string ms(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

TaskDesign random_task(World& world, std::string name, const std::vector<std::string>& task_lists) {
  TaskDesign t;
  t.name = std::move(name);
  t.task_list = task_lists[static_cast<size_t>(world.integer(0, static_cast<int64_t>(task_lists.size()) - 1))];
  if (!world.chance(0.3)) {
    t.max_attempts = static_cast<uint32_t>(world.integer(3, 8));
    t.initial_interval = world.between(100ms, 1s);
  }
  t.duration = world.chance(0.25) ? Duration::zero() : world.between(20ms, 3s);
  if (world.chance(0.12)) t.fail_first = static_cast<uint32_t>(world.integer(1, 2));
  if (world.chance(0.03)) t.doomed = true;
  if (world.chance(0.08)) {
    t.start_to_close = world.between(1s, 3s);
    t.slow_first = true;
    if (t.duration >= *t.start_to_close) t.duration = *t.start_to_close / 2;
  } else if (world.chance(0.1)) {
    t.start_to_close = t.duration + world.between(5s, 20s);  // generous: it times out only under faults
  }
  if (t.duration > Duration::zero() && world.chance(0.15)) {
    t.heartbeat_timeout = world.between(1s, 3s);
    if (t.start_to_close && *t.heartbeat_timeout > *t.start_to_close) t.heartbeat_timeout = t.start_to_close;
    t.heartbeat_every = *t.heartbeat_timeout / 4;
  }
  return t;
}

}  // namespace

bool TaskDesign::fails_by_design() const {
  if (doomed) return true;
  if (fail_first >= max_attempts) return true;
  return slow_first && max_attempts == 1;
}

std::string WorkflowDesign::expected() const {
  for (const auto& t : tasks) {
    if (t.fails_by_design()) return "FAILED";
  }
  return "SUCCESS";
}

const TaskDesign* WorkflowDesign::task(const std::string& name) const {
  for (const auto& t : tasks) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string WorkflowDesign::json() const {
  std::ostringstream out;
  out << R"({"name": ")" << shape << R"(", "tasks": [)";
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    if (i > 0) out << ", ";
    out << R"({"name": ")" << t.name << R"(", "handler": "noop", "taskList": ")" << t.task_list << '"';
    if (!t.depends_on.empty()) {
      out << R"(, "dependsOn": [)";
      for (size_t d = 0; d < t.depends_on.size(); ++d) out << (d > 0 ? ", " : "") << '"' << t.depends_on[d] << '"';
      out << "]";
    }
    if (t.max_attempts > 1) {
      out << R"(, "retry": {"initialInterval": ")" << ms(t.initial_interval)
          << R"(", "backoffCoefficient": 2.0, "maximumInterval": "2s", "maximumAttempts": )" << t.max_attempts << "}";
    } else {
      out << R"(, "retry": {"maximumAttempts": 1})";
    }
    if (t.start_to_close || t.heartbeat_timeout) {
      // Every attempt must be bounded: a scheduleToStart that never fires in a schedule, and a
      // startToClose that fires only as designed or under faults.
      const Duration start_to_close = t.start_to_close.value_or(t.duration + 30s);
      out << R"(, "timeouts": {"scheduleToStart": "1h", "startToClose": ")" << ms(start_to_close) << '"';
      if (t.heartbeat_timeout) out << R"(, "heartbeat": ")" << ms(*t.heartbeat_timeout) << '"';
      out << "}";
    }
    out << "}";
  }
  out << "]}";
  return out.str();
}

std::string WorkflowDesign::describe() const {
  std::ostringstream out;
  out << id << " (" << shape << ", expected " << expected() << "):";
  for (const auto& t : tasks) {
    out << "\n    " << t.name << " on " << t.task_list << ": attempts " << t.max_attempts << ", runs "
        << show(t.duration);
    if (t.fail_first > 0) out << ", fails its first " << t.fail_first;
    if (t.doomed) out << ", fails for good";
    if (t.start_to_close) out << ", startToClose " << show(*t.start_to_close);
    if (t.slow_first) out << " (attempt 1 outlasts it)";
    if (t.heartbeat_timeout) out << ", heartbeat " << show(*t.heartbeat_timeout);
  }
  return out.str();
}

const WorkflowDesign* Workload::workflow(const std::string& id) const {
  for (const auto& w : workflows) {
    if (w.id == id) return &w;
  }
  return nullptr;
}

RunPlan Workload::plan(const actors::Invocation& invocation) const {
  RunPlan plan;
  const WorkflowDesign* w = workflow(invocation.workflow_id);
  const TaskDesign* t = w ? w->task(invocation.task_name) : nullptr;
  if (t == nullptr) return plan;  // not ours: ends at once
  plan.duration = t->duration;
  plan.heartbeat_every = t->heartbeat_every;
  if (t->slow_first && invocation.attempt == 1) plan.duration = *t->start_to_close + 2s;
  if (t->doomed) {
    plan.outcome = actors::TaskReport::FAILED;
    plan.reason = "SimDoomed";
    plan.non_retryable = true;
  } else if (invocation.attempt <= t->fail_first) {
    plan.outcome = actors::TaskReport::FAILED;
    plan.reason = "SimFlaky";
  }
  return plan;
}

Workload random_workload(World& world, int count, const std::vector<std::string>& task_lists) {
  Workload load;
  for (int i = 0; i < count; ++i) {
    WorkflowDesign w;
    w.id = "wf" + std::to_string(i);
    const auto shape = world.integer(0, 2);
    if (shape == 0) {
      w.shape = "chain";
      const auto n = world.integer(2, 4);
      for (int64_t k = 0; k < n; ++k) {
        auto t = random_task(world, "t" + std::to_string(k), task_lists);
        if (k > 0) t.depends_on.push_back("t" + std::to_string(k - 1));
        w.tasks.push_back(std::move(t));
      }
    } else if (shape == 1) {
      w.shape = "fanout";
      w.tasks.push_back(random_task(world, "root", task_lists));
      const auto n = world.integer(2, 4);
      auto join = random_task(world, "join", task_lists);
      for (int64_t k = 0; k < n; ++k) {
        auto t = random_task(world, "b" + std::to_string(k), task_lists);
        t.depends_on.push_back("root");
        join.depends_on.push_back(t.name);
        w.tasks.push_back(std::move(t));
      }
      w.tasks.push_back(std::move(join));
    } else {
      w.shape = "single";
      w.tasks.push_back(random_task(world, "t0", task_lists));
    }
    load.workflows.push_back(std::move(w));
  }
  return load;
}

}  // namespace troupe::sim
