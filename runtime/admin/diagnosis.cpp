#include "runtime/admin/diagnosis.hpp"

#include <map>

namespace troupe::runtime {
namespace {

bool task_is_open(TaskStateCode code) {
  switch (code) {
    case TaskStateCode::SUBMITTED:
    case TaskStateCode::DELAY_EXECUTION:
    case TaskStateCode::DISPATCHING:
    case TaskStateCode::DISPATCHED:
    case TaskStateCode::RUNNING:
    case TaskStateCode::PAUSED:
    case TaskStateCode::FAILOVER: return true;
    default: return false;
  }
}

bool session_is_open(const std::string& state) {
  return state != "WAITING" && state != "CLOSED" && state != "FAILED" && !state.empty();
}

/// What a task waits for by its recorded state alone: for a task with no actor (its workflow
/// passivated), or one that did not answer.
std::string recorded_wait(const TaskStatus& task) {
  switch (task.state_code) {
    case TaskStateCode::DELAY_EXECUTION: return "its retry backoff to end";
    case TaskStateCode::DISPATCHING: return "a worker slot in its task list";
    case TaskStateCode::DISPATCHED: return "worker '" + task.worker + "' to start it";
    case TaskStateCode::RUNNING:
      if (task.awaiting_completion) return "completeTask or failTask with its token (asyncCompletion)";
      return "its attempt " + std::to_string(task.attempt) + " to end on worker '" + task.worker + "'";
    case TaskStateCode::PAUSED: return "its workflow to resume";
    default: return "its turn";
  }
}

/// The blocker most likely to explain the whole workflow: a task that cannot get anywhere
/// (no slot, a paused workflow) before one that merely runs.
int weight(const Blocker& b) {
  auto says = [&](const char* words) { return b.waits_for.find(words) != std::string::npos; };
  if (says("history store")) return 0;
  // Nothing will take it until an operator acts: no worker serves its list, or none takes tasks.
  if (says("no live worker serves") || says("takes tasks now")) return 1;
  if (b.state == "DISPATCHING" || b.state == "CREATING" || b.state == "REESTABLISHING") return 2;
  if (b.state == "PAUSED") return 3;
  if (b.state == "DELAY_EXECUTION") return 4;
  if (b.state == "DISPATCHED" || b.state == "FAILOVER") return 5;
  return 6;
}

}  // namespace

Diagnosis diagnose(const WorkflowStatus& status, const std::vector<actors::ProbedActor>& probes) {
  Diagnosis d;
  d.workflow_id = status.workflow_id;
  d.state = status.state;
  std::map<std::string, const actors::ProbedActor*> by_id;
  for (const auto& p : probes) by_id[p.entry.id] = &p;
  auto probe_of = [&](const std::string& id) -> const actors::ProbedActor* {
    auto it = by_id.find(id);
    return it == by_id.end() ? nullptr : it->second;
  };

  switch (status.state_code) {
    case WorkflowStateCode::SUCCESS:
    case WorkflowStateCode::FAILED:
    case WorkflowStateCode::STOPPED:
      d.summary = "it ended " + status.state + (status.detail.empty() ? "" : ": " + status.detail);
      return d;
    default: break;
  }

  const auto* workflow = probe_of(status.workflow_id);
  d.live = workflow && workflow->probe;
  std::vector<Blocker> tasks;
  for (const auto& task : status.tasks) {
    if (!task_is_open(task.state_code)) continue;
    Blocker b{"task '" + task.name + "'", task.state, {}};
    const auto* probe = probe_of(status.workflow_id + "/" + task.name);
    if (probe && probe->probe) {
      b.state = probe->probe->state;
      b.waits_for = probe->probe->waits_for;
    } else if (probe) {
      b.waits_for = "its actor did not answer: " + probe->error;
    } else {
      b.waits_for = recorded_wait(task);
    }
    // The task list's own account of why nothing takes it: posted by its matching actor.
    if (task.state_code == TaskStateCode::DISPATCHING && !task.wait_reason.empty()) {
      b.waits_for += ": " + task.wait_reason;
    }
    tasks.push_back(std::move(b));
  }
  for (const auto& session : status.sessions) {
    if (!session_is_open(session.state)) continue;
    Blocker b{"session '" + session.name + "'", session.state, {}};
    const auto* probe = probe_of(status.workflow_id + "/" + session.name);
    if (probe && probe->probe) {
      b.state = probe->probe->state;
      b.waits_for = probe->probe->waits_for;
    }
    if (!session.wait_reason.empty()) {
      b.waits_for += (b.waits_for.empty() ? "" : ": ") + session.wait_reason;
    }
    if (b.waits_for.empty() && session.state == "OPEN") continue;  // working: its tasks say more
    tasks.push_back(std::move(b));
  }

  Blocker whole{"workflow", status.state, {}};
  if (workflow && workflow->probe) {
    whole.state = workflow->probe->state;
    whole.waits_for = workflow->probe->waits_for;
  } else if (workflow) {
    whole.waits_for = "its actor did not answer: " + workflow->error;
  } else if (status.state_code == WorkflowStateCode::PAUSED) {
    whole.waits_for = "an operator to resume it (troupe resume " + status.workflow_id + ")";
  } else {
    whole.waits_for = "passivated: nothing of it runs in the scheduler; it wakes for a worker's report, its next "
                      "timer or a request";
  }
  d.blockers.push_back(whole);

  if (status.state_code == WorkflowStateCode::PAUSED) {
    d.summary = "it is paused: it waits for " + whole.waits_for;
  } else if (status.state_code == WorkflowStateCode::READY_PAUSE || status.state_code == WorkflowStateCode::READY_STOP) {
    const char* what = status.state_code == WorkflowStateCode::READY_PAUSE ? "pausing" : "stopping";
    d.summary = std::string("it is ") + what + ": it waits for " + whole.waits_for;
  } else if (!tasks.empty()) {
    const Blocker* first = &tasks.front();
    for (const auto& b : tasks) {
      if (weight(b) < weight(*first)) first = &b;
    }
    d.summary = first->subject + " (" + first->state + ") waits for " + first->waits_for;
  } else {
    d.summary = whole.waits_for.empty() ? "it is " + whole.state : "it waits for " + whole.waits_for;
  }
  for (auto& b : tasks) d.blockers.push_back(std::move(b));
  return d;
}

}  // namespace troupe::runtime
