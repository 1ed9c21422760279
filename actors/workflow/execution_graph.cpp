// Execution graph bookkeeping.
#include "actors/workflow/execution_graph.hpp"

namespace troupe::actors {

ExecutionGraph::ExecutionGraph(const WorkflowSpec& spec, std::optional<uint32_t> run_from)
    : spec_(&spec), nodes_(spec.tasks.size(), NodeState::WAITING), dependents_(spec.tasks.size()) {
  for (uint32_t t = 0; t < spec.tasks.size(); ++t) {
    for (uint32_t d : spec.tasks[t].depends_on) dependents_[d].push_back(t);
  }
  if (run_from) {
    // Everything not reachable from run_from is outside this run.
    const auto inside = descendants_of(*run_from);
    for (uint32_t t = 0; t < nodes_.size(); ++t) {
      if (!inside[t]) nodes_[t] = NodeState::OUTSIDE;
    }
  }
  for (uint32_t t = 0; t < nodes_.size(); ++t) {
    if (nodes_[t] == NodeState::WAITING && dependencies_succeeded(t)) nodes_[t] = NodeState::READY;
  }
}

std::vector<bool> ExecutionGraph::descendants_of(uint32_t task) const {
  std::vector<bool> inside(nodes_.size(), false);
  std::vector<uint32_t> stack = {task};
  inside[task] = true;
  while (!stack.empty()) {
    uint32_t t = stack.back();
    stack.pop_back();
    for (uint32_t d : dependents_[t]) {
      if (!inside[d]) {
        inside[d] = true;
        stack.push_back(d);
      }
    }
  }
  return inside;
}

bool ExecutionGraph::dependencies_succeeded(uint32_t task) const {
  for (uint32_t d : spec_->tasks[task].depends_on) {
    if (nodes_[d] != NodeState::SUCCEEDED && nodes_[d] != NodeState::OUTSIDE) return false;
  }
  return true;
}

std::vector<uint32_t> ExecutionGraph::ready() const {
  std::vector<uint32_t> out;
  for (uint32_t t : spec_->topological_order) {
    if (nodes_[t] == NodeState::READY) out.push_back(t);
  }
  return out;
}

std::vector<uint32_t> ExecutionGraph::active() const {
  std::vector<uint32_t> out;
  for (uint32_t t = 0; t < nodes_.size(); ++t) {
    if (nodes_[t] == NodeState::ACTIVE) out.push_back(t);
  }
  return out;
}

std::vector<uint32_t> ExecutionGraph::paused() const {
  std::vector<uint32_t> out;
  for (uint32_t t = 0; t < nodes_.size(); ++t) {
    if (nodes_[t] == NodeState::PAUSED) out.push_back(t);
  }
  return out;
}

bool ExecutionGraph::start(uint32_t task) {
  if (nodes_[task] != NodeState::READY && nodes_[task] != NodeState::PAUSED) return false;
  nodes_[task] = NodeState::ACTIVE;
  return true;
}

bool ExecutionGraph::finish(uint32_t task, TaskOutcome outcome) {
  // A paused task may be forced to succeed (skipTask), or killed because its session failed or
  // reruns; nothing else ends it.
  const bool ended_while_paused =
      nodes_[task] == NodeState::PAUSED && (outcome == TaskOutcome::SUCCEEDED || outcome == TaskOutcome::KILLED);
  if (nodes_[task] != NodeState::ACTIVE && !ended_while_paused) return false;
  switch (outcome) {
    case TaskOutcome::SUCCEEDED:
      nodes_[task] = NodeState::SUCCEEDED;
      promote_dependents(task);
      break;
    case TaskOutcome::PAUSED:
      nodes_[task] = NodeState::PAUSED;
      break;
    case TaskOutcome::FAILED:
    case TaskOutcome::KILLED:
      nodes_[task] = outcome == TaskOutcome::FAILED ? NodeState::FAILED : NodeState::KILLED;
      block_descendants(task);
      break;
  }
  return true;
}

void ExecutionGraph::promote_dependents(uint32_t task) {
  for (uint32_t d : dependents_[task]) {
    if (nodes_[d] == NodeState::WAITING && dependencies_succeeded(d)) nodes_[d] = NodeState::READY;
  }
}

void ExecutionGraph::block_descendants(uint32_t task) {
  std::vector<uint32_t> stack = {task};
  while (!stack.empty()) {
    uint32_t t = stack.back();
    stack.pop_back();
    for (uint32_t d : dependents_[t]) {
      if (nodes_[d] == NodeState::WAITING || nodes_[d] == NodeState::READY) {
        nodes_[d] = NodeState::BLOCKED;
        stack.push_back(d);
      }
    }
  }
}

bool ExecutionGraph::retry(uint32_t task) {
  if (nodes_[task] != NodeState::FAILED && nodes_[task] != NodeState::KILLED) return false;
  nodes_[task] = dependencies_succeeded(task) ? NodeState::READY : NodeState::WAITING;
  unblock_descendants(task);
  return true;
}

bool ExecutionGraph::force(uint32_t task) {
  if (nodes_[task] != NodeState::FAILED && nodes_[task] != NodeState::KILLED) return false;
  nodes_[task] = NodeState::SUCCEEDED;
  unblock_descendants(task);
  return true;
}

void ExecutionGraph::unblock_descendants(uint32_t task) {
  const auto below = descendants_of(task);
  // In topological order, so a task is looked at after every dependency it has below `task`.
  for (uint32_t t : spec_->topological_order) {
    if (t == task || !below[t] || nodes_[t] != NodeState::BLOCKED) continue;
    bool held = false;
    for (uint32_t d : spec_->tasks[t].depends_on) {
      const NodeState dep = nodes_[d];
      held = held || dep == NodeState::FAILED || dep == NodeState::KILLED || dep == NodeState::BLOCKED;
    }
    if (!held) nodes_[t] = dependencies_succeeded(t) ? NodeState::READY : NodeState::WAITING;
  }
}

GraphVerdict ExecutionGraph::verdict() const {
  bool any_failed = false, any_paused = false;
  for (NodeState s : nodes_) {
    switch (s) {
      case NodeState::ACTIVE:
      case NodeState::READY:
        return GraphVerdict::IN_PROGRESS;
      case NodeState::FAILED:
      case NodeState::KILLED:
      case NodeState::BLOCKED:  // within one run only behind a failure; in a rerun, left out
        any_failed = true;
        break;
      case NodeState::PAUSED:
        any_paused = true;
        break;
      default:
        break;
    }
  }
  // WAITING tasks can only remain behind a paused one: failures block their descendants.
  if (any_paused) return GraphVerdict::QUIESCENT;
  return any_failed ? GraphVerdict::FAILED : GraphVerdict::SUCCEEDED;
}

std::vector<bool> ExecutionGraph::rerun_set(std::optional<uint32_t> from) const {
  if (from) return descendants_of(*from);
  std::vector<bool> reset(nodes_.size(), false);
  for (uint32_t t = 0; t < nodes_.size(); ++t) {
    reset[t] = nodes_[t] != NodeState::SUCCEEDED && nodes_[t] != NodeState::OUTSIDE;
  }
  return reset;
}

std::optional<std::pair<uint32_t, uint32_t>> ExecutionGraph::unmet_dependency(const std::vector<bool>& reset) const {
  for (uint32_t t : spec_->topological_order) {
    if (!reset[t]) continue;
    for (uint32_t d : spec_->tasks[t].depends_on) {
      if (!reset[d] && nodes_[d] != NodeState::SUCCEEDED && nodes_[d] != NodeState::OUTSIDE) {
        return std::make_pair(t, d);
      }
    }
  }
  return std::nullopt;
}

void ExecutionGraph::restart(const std::vector<uint32_t>& tasks) {
  for (uint32_t t : tasks) nodes_[t] = NodeState::WAITING;
  for (uint32_t t : tasks) unblock_descendants(t);
  for (uint32_t t = 0; t < nodes_.size(); ++t) {
    const bool met = dependencies_succeeded(t);
    if (nodes_[t] == NodeState::READY && !met) nodes_[t] = NodeState::WAITING;
    if (nodes_[t] == NodeState::WAITING && met) nodes_[t] = NodeState::READY;
  }
}

void ExecutionGraph::rerun(const std::vector<bool>& reset) {
  for (uint32_t t = 0; t < nodes_.size(); ++t) {
    if (reset[t]) {
      nodes_[t] = NodeState::WAITING;
    } else if (nodes_[t] == NodeState::WAITING || nodes_[t] == NodeState::READY ||
               nodes_[t] == NodeState::PAUSED || nodes_[t] == NodeState::ACTIVE) {
      nodes_[t] = NodeState::BLOCKED;
    }
  }
  for (uint32_t t = 0; t < nodes_.size(); ++t) {
    if (nodes_[t] == NodeState::WAITING && dependencies_succeeded(t)) nodes_[t] = NodeState::READY;
  }
}

}  // namespace troupe::actors
