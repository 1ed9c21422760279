// The workflow actor's sessions: an actor per session of the workflow, spawned when a task of it
// is ready, told what its tasks did, and given back after a restart. The workflow closes only
// once its sessions are over.
#include <caf/actor_system.hpp>

#include "actors/workflow/workflow_actor_state.hpp"

namespace troupe::actors::workflow_detail {

void session_needed(Self self, uint32_t index) {
  auto& st = self->state;
  // A stopping workflow runs nothing more: a session that closed for the stop (its CLOSED heard
  // after a restart, which forgot the stop's cancellation) is not opened again.
  if (st.model.state == WorkflowState::READY_STOP || WorkflowMachine::is_terminal(st.model.state)) return;
  auto it = st.sessions.find(index);
  if (it == st.sessions.end()) {
    SessionSetup setup;
    setup.workflow_id = st.model.id;
    setup.spec = st.model.spec;
    setup.index = index;
    setup.model.name = st.model.spec->sessions[index].name;
    setup.owner = caf::actor_cast<session_owner_port>(self);
    setup.wiring = st.setup.wiring;
    setup.workflow_input = st.model.input;
    it = st.sessions.emplace(index, spawn_session(self, std::move(setup))).first;
  }
  self->send(it->second, start_atom::value);
}

void never_attempt(Self self, const task_actor& task, uint32_t session) {
  self->send(task, kill_atom::value, session_atom::value, false,
             "session '" + self->state.model.spec->sessions[session].name + "' ended before it ran");
}

void end_for_rerun(Self self, const task_actor& task, uint32_t task_index, uint32_t index) {
  self->state.rerun_kills.insert(task_index);
  self->send(task, kill_atom::value, session_atom::value, false,
             "session '" + self->state.model.spec->sessions[index].name + "' was recreated and runs it again (rerunAll)");
}

void kill_session_tasks(Self self, uint32_t index) {
  auto& st = self->state;
  // A stop leaves paused tasks paused, and may end the workflow before this kill is recorded.
  const bool stopping = st.model.state == WorkflowState::READY_STOP || WorkflowMachine::is_terminal(st.model.state);
  for (uint32_t task : st.model.spec->sessions[index].tasks) {
    if (stopping && st.model.graph->state(task) == NodeState::PAUSED) continue;
    if (auto it = st.tasks.find(task); it != st.tasks.end()) never_attempt(self, it->second, index);
  }
}

SessionRerunPlan plan_session_rerun(const WorkflowActorState& st, uint32_t index) {
  const auto& spec = *st.model.spec;
  const auto& graph = *st.model.graph;
  SessionRerunPlan plan;
  std::vector<bool> after(spec.tasks.size(), false);  // runs again, or depends on one that does
  for (uint32_t task : spec.topological_order) {
    const bool ours = spec.tasks[task].session == index;
    bool below = false;
    for (uint32_t dependency : spec.tasks[task].depends_on) below = below || after[dependency];
    const NodeState node = graph.state(task);
    if (ours && node == NodeState::SUCCEEDED && st.model.forced.count(task) == 0) {
      plan.tasks.push_back(task);
      after[task] = true;
    } else if (ours && below && (node == NodeState::ACTIVE || node == NodeState::PAUSED)) {
      plan.tasks.push_back(task);
      plan.ending.push_back(task);
      after[task] = true;
    } else {
      after[task] = below;
    }
  }
  if (plan.ending.size() == plan.tasks.size()) return {};  // nothing of it succeeded
  return plan;
}

bool session_tasks_over(const WorkflowActorState& st, uint32_t index) {
  for (uint32_t task : st.model.spec->sessions[index].tasks) {
    switch (st.model.graph->state(task)) {
      case NodeState::WAITING:
      case NodeState::READY:
      case NodeState::ACTIVE:
      case NodeState::PAUSED: return false;
      default: break;
    }
  }
  return true;
}

void tell_sessions(Self self, uint32_t index, TaskState state, const TaskModel* ended, bool rerun_kill) {
  auto& st = self->state;
  const TaskSpec& task = st.model.spec->tasks[index];
  if (task.session && TaskMachine::is_terminal(state) && !TaskMachine::is_success(state) && !rerun_kill) {
    if (auto it = st.sessions.find(*task.session); it != st.sessions.end()) {
      std::string reason = ended ? ended->failure_reason : std::string(TaskMachineTraits::name(state));
      std::string details = ended ? ended->failure_details : std::string();
      if (reason.empty()) reason = std::string(TaskMachineTraits::name(state));
      self->send(it->second, finished_atom::value, true, task.name, std::move(reason), std::move(details));
    }
  }
  for (const auto& [session, actor] : st.sessions) {
    if (st.model.session_reruns.count(session) == 0 && session_tasks_over(st, session)) {
      self->send(actor, finished_atom::value, false, std::string(), std::string(), std::string());
    }
  }
}

/// The sessions a revived workflow had: one that ended keeps its tasks from running again (if it
/// failed); one still under way gets its actor back before anything is evaluated, so that the
/// workflow waits for it. Returns what tells them to carry on, once the revival is durable.
std::function<void()> revive_sessions(Self self, const ReplayedWorkflow& replayed) {
  auto& st = self->state;
  std::vector<session_actor> revived;
  for (uint32_t index = 0; index < st.model.spec->sessions.size(); ++index) {
    auto it = replayed.sessions.find(st.model.spec->sessions[index].name);
    if (it == replayed.sessions.end() || it->second.state == SessionState::WAITING) continue;
    const SessionModel& model = it->second;
    if (SessionMachine::is_terminal(model.state)) {
      if (model.state == SessionState::FAILED) {
        st.stopped_sessions.insert(index);
        if (st.session_failure.empty() && model.failure_reason != "TaskFailed") {
          st.session_failure = "session '" + model.name + "' failed: " + model.failure_message();
        }
      }
      continue;
    }
    SessionSetup setup;
    setup.workflow_id = st.model.id;
    setup.spec = st.model.spec;
    setup.index = index;
    setup.model = model;
    setup.owner = caf::actor_cast<session_owner_port>(self);
    setup.wiring = st.setup.wiring;
    setup.workflow_input = st.model.input;
    auto actor = spawn_session(self, std::move(setup));
    st.sessions.emplace(index, actor);
    revived.push_back(actor);
  }
  return [self, revived = std::move(revived)] {
    for (const auto& actor : revived) self->send(actor, recover_atom::value);
    // A session whose first task was scheduled just before the restart, before the session
    // recorded anything, is needed all the same.
    auto& st = self->state;
    for (uint32_t index = 0; index < st.model.spec->sessions.size(); ++index) {
      if (st.sessions.count(index) > 0 || st.stopped_sessions.count(index) > 0 || session_tasks_over(st, index)) continue;
      for (uint32_t task : st.model.spec->sessions[index].tasks) {
        const NodeState node = st.model.graph->state(task);
        if (node == NodeState::ACTIVE || node == NodeState::PAUSED) {
          session_needed(self, index);
          break;
        }
      }
    }
    // What its tasks did while nobody told it (the restart came between) it hears now.
    auto& s = self->state;
    for (const auto& [index, actor] : s.sessions) {
      // A rerun under way killed some of its tasks: those are no failure, and its tasks are not over.
      auto rerun = s.model.session_reruns.find(index);
      const bool rerunning = rerun != s.model.session_reruns.end();
      for (uint32_t task : s.model.spec->sessions[index].tasks) {
        const NodeState node = s.model.graph->state(task);
        if (node != NodeState::FAILED && node != NodeState::KILLED) continue;
        if (rerunning && rerun->second.killed.count(task) > 0) continue;
        const auto& name = s.model.spec->tasks[task].name;
        auto dormant = s.dormant.find(task);
        const std::string reason = dormant != s.dormant.end() ? dormant->second.failure_reason : "Failed";
        const std::string details = dormant != s.dormant.end() ? dormant->second.failure_details : "";
        self->send(actor, finished_atom::value, true, name, reason.empty() ? std::string("Failed") : reason, details);
      }
      if (!rerunning && session_tasks_over(s, index)) {
        self->send(actor, finished_atom::value, false, std::string(), std::string(), std::string());
      }
    }
  };
}

}  // namespace troupe::actors::workflow_detail
