#include "actors/workflow/workflow_probe.hpp"

#include "actors/system/probe_text.hpp"
#include "actors/workflow/workflow_machine.hpp"

namespace troupe::actors {
namespace {

/// "a, b and 3 more": a few names of tasks, for one line.
std::string some_tasks(const WorkflowModel& model, const std::vector<uint32_t>& tasks) {
  constexpr size_t shown = 3;
  std::string out;
  for (size_t i = 0; i < tasks.size() && i < shown; ++i) {
    if (i > 0) out += ", ";
    out += "'" + model.spec->tasks[tasks[i]].name + "'";
  }
  if (tasks.size() > shown) out += " and " + std::to_string(tasks.size() - shown) + " more";
  return out;
}

std::string waits_for(const WorkflowModel& model, const WorkflowActorFacts& facts) {
  if (auto unwritten = waiting_for_durability(facts.unwritten); !unwritten.empty()) return unwritten;
  if (facts.passivating) return "its tasks to agree to passivate";
  const auto active = model.graph ? model.graph->active() : std::vector<uint32_t>{};
  switch (model.state) {
    case WorkflowState::SUBMITTED: return "its start";
    case WorkflowState::PAUSED: return "an operator to resume it (troupe resume " + model.id + ")";
    case WorkflowState::READY_PAUSE:
      return "its active tasks to finish before it is PAUSED: " + some_tasks(model, active);
    case WorkflowState::READY_STOP:
      return "its active tasks to end after the stop: " + some_tasks(model, active);
    case WorkflowState::RUNNING:
      if (active.empty()) return facts.session_actors ? "its sessions to close" : "";
      return "its active tasks: " + some_tasks(model, active);
    default: return {};
  }
}

}  // namespace

ActorProbe probe_workflow(const WorkflowModel& model, const WorkflowActorFacts& facts) {
  ActorProbe p;
  p.kind = "workflow";
  p.state = std::string(WorkflowMachineTraits::name(model.state));
  if (model.spec) {
    p.field("definition", model.spec->name);
    p.field("tasks", std::to_string(model.spec->tasks.size()));
  }
  p.field("task actors", std::to_string(facts.task_actors));
  if (facts.session_actors) p.field("session actors", std::to_string(facts.session_actors));
  p.field("submitted", probe_time(model.submitted_us));
  if (model.reruns) p.field("reruns", std::to_string(model.reruns));
  if (!model.run_from.empty()) p.field("run from", model.run_from);
  if (!model.first_task_failure.empty()) p.field("first failure", model.first_task_failure);
  if (facts.result_waiters) p.field("waiting for its result", std::to_string(facts.result_waiters));
  if (facts.unwritten) p.field("unwritten effects", std::to_string(facts.unwritten));
  p.field("events applied", std::to_string(model.applied));
  p.waits_for = waits_for(model, facts);
  return p;
}

}  // namespace troupe::actors
