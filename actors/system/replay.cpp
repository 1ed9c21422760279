// Replay of stored histories.
#include "actors/system/replay.hpp"

#include <kj/exception.h>

#include "actors/invocation_id.hpp"
#include "storage/codec.hpp"

namespace troupe::actors {

namespace {

Result<void> apply_event(ReplayedWorkflow& replayed, const storage::StoredEvent& stored, const std::string& where) {
  auto decoded = storage::DecodedEvent::decode(stored.packed);
  if (!decoded) return fail(Errc::CORRUPTION, where + decoded.error().message);
  auto event = decoded->get();
  const auto view = view_of(event);
  Result<void> applied = ok();
  if (event.getActorKind() == schema::ActorKind::TASK) {
    const std::string name(view.actor_id);
    auto [it, fresh] = replayed.tasks.try_emplace(name);
    if (fresh) it->second.name = name;
    applied = it->second.apply(view);
    if (applied && event.getBody().isTaskScheduled()) applied = replayed.workflow.apply(view);
  } else if (event.getActorKind() == schema::ActorKind::WORKFLOW) {
    applied = replayed.workflow.apply(view);
  } else if (event.getActorKind() == schema::ActorKind::SESSION) {
    const std::string name(view.actor_id);
    auto& session = replayed.sessions[name];
    // A session that ended and is needed again (its workflow reran) starts a new instance.
    if (session.applied == 0 || (SessionMachine::is_terminal(session.state) && event.getBody().isSessionCreating() &&
                                 event.getBody().getSessionCreating().getAttempt() <= 1)) {
      session = SessionModel{};
      session.name = name;
    }
    applied = session.apply(view);
  }
  if (!applied) return fail(Errc::CORRUPTION, where + applied.error().message);
  return ok();
}

}  // namespace

Result<void> apply(ReplayedWorkflow& replayed, const storage::StoredEvent& stored) {
  const std::string where =
      "workflow '" + replayed.workflow.id + "' event " + std::to_string(stored.sequence) + ": ";
  // Decoding checks an event's pointers, but capnp checks a Text for its closing NUL only when
  // it is read, here: a damaged one throws, and is as corrupt as an event that does not decode.
  try {
    return apply_event(replayed, stored, where);
  } catch (const kj::Exception& e) {
    return fail(Errc::CORRUPTION, where + "malformed history event: " + e.getDescription().cStr());
  }
}

Result<ReplayedWorkflow> replay(const std::string& workflow_id,
                                const std::vector<storage::StoredEvent>& history,
                                DefinitionCache* definitions) {
  ReplayedWorkflow out;
  out.workflow.id = workflow_id;
  out.workflow.definitions = definitions;
  for (const auto& stored : history) {
    if (auto applied = apply(out, stored); !applied) return applied.error();
  }
  return out;
}

// The client API's codes list the machines' states in the machines' order, after UNKNOWN (and,
// for tasks, WAITING and UPSTREAM_FAILED, and NEVER_ATTEMPTED after them); every name is checked in actors.replay's tests.
static_assert(static_cast<uint8_t>(WorkflowStateCode::SUBMITTED) == static_cast<uint8_t>(WorkflowState::SUBMITTED) + 1);
static_assert(static_cast<uint8_t>(WorkflowStateCode::FAILOVER) == static_cast<uint8_t>(WorkflowState::FAILOVER) + 1);
static_assert(WorkflowMachineTraits::states == workflow_state_names.size() - 1);
static_assert(static_cast<uint8_t>(TaskStateCode::SUBMITTED) == static_cast<uint8_t>(TaskState::SUBMITTED) + 3);
static_assert(static_cast<uint8_t>(TaskStateCode::FAILOVER) == static_cast<uint8_t>(TaskState::FAILOVER) + 3);
static_assert(TaskMachineTraits::states == task_state_names.size() - 4);

WorkflowStateCode state_code(WorkflowState state) {
  return static_cast<WorkflowStateCode>(static_cast<uint8_t>(state) + 1);
}

TaskStateCode state_code(TaskState state) { return static_cast<TaskStateCode>(static_cast<uint8_t>(state) + 3); }

namespace {

/// Whether a task without an instance will not run in this run: the graph blocked it behind a
/// failed or killed task, or the workflow failed, which ends the run.
bool upstream_failed(const WorkflowModel& workflow, uint32_t task) {
  const NodeState node = workflow.graph->state(task);
  if (node == NodeState::BLOCKED) return true;
  return workflow.state == WorkflowState::FAILED && (node == NodeState::WAITING || node == NodeState::READY);
}

}  // namespace

WorkflowStatus snapshot(const ReplayedWorkflow& replayed, const WaitBoard* waits) {
  const WorkflowModel& workflow = replayed.workflow;
  WorkflowStatus view;
  view.workflow_id = workflow.id;
  view.state = std::string(WorkflowMachineTraits::name(workflow.state));
  view.state_code = state_code(workflow.state);
  view.detail = workflow.failure_reason;
  if (!workflow.spec || !workflow.graph) return view;
  for (uint32_t index = 0; index < workflow.spec->tasks.size(); ++index) {
    TaskStatus task;
    const TaskSpec& spec = workflow.spec->tasks[index];
    task.name = spec.name;
    for (uint32_t dependency : spec.depends_on) task.depends_on.push_back(workflow.spec->tasks[dependency].name);
    if (spec.session) task.session = workflow.spec->sessions[*spec.session].name;
    // A task an operator updated before it was scheduled has a model, and no instance yet.
    if (auto it = replayed.tasks.find(task.name); it != replayed.tasks.end() && it->second.scheduled) {
      const auto& model = it->second;
      task.state = std::string(TaskMachineTraits::name(model.state));
      task.state_code = state_code(model.state);
      task.attempt = model.attempt;
      task.worker = model.executor;
      task.failure = model.failure_reason;
      task.failure_details = model.failure_details;
      task.progress = model.progress;
      task.awaiting_completion = model.awaiting_completion;
      if (TaskMachine::is_success(model.state)) task.result_json = model.result;
      task.started_us = model.started_us;
      task.ended_us = model.ended_us;
      if (model.never_attempted()) {
        // Deadline's NEVER_ATTEMPTED: what it shows is only what ran before (a failed attempt).
        task.state_code = TaskStateCode::NEVER_ATTEMPTED;
        task.state = std::string(name_of(task.state_code));
        task.attempt = model.ran_attempt;
        task.failure = "NeverAttempted";
        task.failure_details = model.kill_reason;
        if (model.ran_attempt == 0) task.started_us = task.ended_us = 0;
      }
      if (waits != nullptr && model.state == TaskState::DISPATCHING) {
        // The list it waits in: its definition's, or the one an operator moved it to.
        task.wait_reason = waits->reason_for(model.effective(workflow.spec->tasks[index], false).task_list);
      }
    } else {
      task.state_code = upstream_failed(workflow, index) ? TaskStateCode::UPSTREAM_FAILED : TaskStateCode::WAITING;
      task.state = std::string(name_of(task.state_code));
    }
    view.tasks.push_back(std::move(task));
  }
  for (const auto& spec : workflow.spec->sessions) {
    SessionStatus session;
    session.name = spec.name;
    session.state = "WAITING";
    if (auto it = replayed.sessions.find(spec.name); it != replayed.sessions.end()) {
      const SessionModel& model = it->second;
      session.state = std::string(SessionMachineTraits::name(model.state));
      session.attempt = model.first_placed_us != 0 ? model.attempt : 0;
      session.worker = model.worker;
      session.resource_id = model.resource;
      session.recreate_token = model.recreate_token;
      if (!model.enter_failure.empty()) {
        session.env_enter = "FAILED: " + model.enter_failure;
      } else if (model.entered && spec.env_enter) {
        session.env_enter = "SUCCEEDED";
      }
      if (model.exit_succeeded && (spec.env_exit || !*model.exit_succeeded)) {
        session.env_exit = *model.exit_succeeded ? "SUCCEEDED" : "FAILED: " + model.exit_failure;
      }
      session.failure = model.failure_message();
      if (waits != nullptr && (model.state == SessionState::CREATING || model.state == SessionState::REESTABLISHING)) {
        session.wait_reason = waits->session_reason(make_session_key(workflow.id, spec.name));
      }
    }
    view.sessions.push_back(std::move(session));
  }
  return view;
}

std::vector<TaskOutput> final_outputs(const ReplayedWorkflow& replayed) {
  std::vector<TaskOutput> outputs;
  const WorkflowModel& workflow = replayed.workflow;
  if (!workflow.spec || !workflow.graph) return outputs;
  for (uint32_t index = 0; index < workflow.spec->tasks.size(); ++index) {
    if (!workflow.graph->is_final(index)) continue;
    const auto& name = workflow.spec->tasks[index].name;
    auto it = replayed.tasks.find(name);
    if (it != replayed.tasks.end() && TaskMachine::is_success(it->second.state)) {
      outputs.push_back(TaskOutput{name, it->second.result});
    }
  }
  return outputs;
}

Result<ReplayedWorkflow> replay(storage::HistoryStore& store, const std::string& workflow_id,
                                DefinitionCache* definitions) {
  std::vector<storage::StoredEvent> history;
  for (uint64_t from = 1;;) {
    auto page = store.read(workflow_id, from, 4096);
    if (!page) return page.error();
    if (page->empty()) break;
    from = page->back().sequence + 1;
    for (auto& e : *page) history.push_back(std::move(e));
  }
  return replay(workflow_id, history, definitions);
}

}  // namespace troupe::actors
