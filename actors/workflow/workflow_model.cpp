// WorkflowModel::apply.
#include "actors/workflow/workflow_model.hpp"

#include <algorithm>

namespace troupe::actors {

using Body = schema::EventBody;

std::optional<WorkflowEvent> WorkflowModel::event_of(Body::Which body) {
  switch (body) {
    case Body::WORKFLOW_STARTED: return WorkflowEvent::START;
    case Body::WORKFLOW_TASK_FINISHED: return WorkflowEvent::TASK_FINISHED;
    case Body::WORKFLOW_PAUSE_REQUESTED: return WorkflowEvent::PAUSE;
    case Body::WORKFLOW_PAUSED: return WorkflowEvent::PAUSED;
    case Body::WORKFLOW_RESUMED: return WorkflowEvent::RESUME;
    case Body::WORKFLOW_STOP_REQUESTED: return WorkflowEvent::STOP;
    case Body::WORKFLOW_STOPPED: return WorkflowEvent::STOPPED;
    case Body::WORKFLOW_SUCCEEDED: return WorkflowEvent::SUCCEED;
    case Body::WORKFLOW_FAILED: return WorkflowEvent::FAILED;
    case Body::WORKFLOW_FINALIZED: return WorkflowEvent::FINALIZE;
    case Body::WORKFLOW_FAILOVER: return WorkflowEvent::FAILOVER;
    case Body::WORKFLOW_RERUN: return WorkflowEvent::RERUN;
    case Body::WORKFLOW_TASK_RETRIED: return WorkflowEvent::RETRY_TASK;
    case Body::WORKFLOW_TASK_SKIPPED: return WorkflowEvent::SKIP_TASK;
    case Body::WORKFLOW_SESSION_RERUN: return WorkflowEvent::RERUN_SESSION;
    default: return std::nullopt;
  }
}

TaskOutcome WorkflowModel::outcome_of(TaskState state) {
  switch (state) {
    case TaskState::SUCCESS:
    case TaskState::FORCED_SUCCESS: return TaskOutcome::SUCCEEDED;
    case TaskState::KILLED: return TaskOutcome::KILLED;
    case TaskState::PAUSED: return TaskOutcome::PAUSED;
    default: return TaskOutcome::FAILED;
  }
}

namespace {

TaskOutcome outcome_from_wire(schema::TaskOutcome outcome) {
  switch (outcome) {
    case schema::TaskOutcome::SUCCEEDED:
    case schema::TaskOutcome::FORCED_SUCCESS: return TaskOutcome::SUCCEEDED;
    case schema::TaskOutcome::KILLED: return TaskOutcome::KILLED;
    case schema::TaskOutcome::PAUSED: return TaskOutcome::PAUSED;
    case schema::TaskOutcome::FAILED: return TaskOutcome::FAILED;
  }
  return TaskOutcome::FAILED;
}

/// How a task that did not succeed ended, as a phrase for messages.
std::string_view ending_of(NodeState state) {
  switch (state) {
    case NodeState::FAILED: return "failed";
    case NodeState::KILLED: return "was killed";
    case NodeState::PAUSED: return "was left paused";
    default: return "did not run";
  }
}

/// The first task upstream of `task` that failed or was killed, which keeps it from running.
std::optional<uint32_t> blocker_of(const WorkflowSpec& spec, const ExecutionGraph& graph, uint32_t task) {
  std::vector<uint32_t> stack = {task};
  std::vector<bool> seen(spec.tasks.size(), false);
  while (!stack.empty()) {
    const uint32_t t = stack.back();
    stack.pop_back();
    for (uint32_t d : spec.tasks[t].depends_on) {
      if (seen[d]) continue;
      seen[d] = true;
      if (graph.state(d) == NodeState::FAILED || graph.state(d) == NodeState::KILLED) return d;
      if (graph.state(d) == NodeState::BLOCKED) stack.push_back(d);
    }
  }
  return std::nullopt;
}

}  // namespace

Result<uint32_t> WorkflowModel::task_for(WorkflowEvent operation, std::string_view name) const {
  if (!graph) return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' has no submission");
  auto index = spec->find_task(name);
  if (!index) return fail(Errc::INVALID_ARGUMENT, "workflow '" + id + "' has no task '" + std::string(name) + "'");
  const std::string task = "task '" + std::string(name) + "' of workflow '" + id + "'";
  auto refuse = [&](const std::string& why) -> Result<uint32_t> {
    return fail(Errc::NOT_ALLOWED_IN_STATE, task + " " + why);
  };
  const bool retry = operation == WorkflowEvent::RETRY_TASK;
  const bool skip = operation == WorkflowEvent::SKIP_TASK;
  if (retry || skip) {
    for (const auto& [session, rerun] : session_reruns) {
      if (std::find(rerun.tasks.begin(), rerun.tasks.end(), *index) != rerun.tasks.end()) {
        return refuse("runs again in its session, which was recreated with rerunAll: " +
                      std::string(retry ? "retry" : "skip") + " it once its session's tasks wait again");
      }
    }
  }
  switch (graph->state(*index)) {
    case NodeState::FAILED:
    case NodeState::KILLED:
      break;
    case NodeState::ACTIVE:
      if (retry) return refuse("has not ended (it is in progress): only a task that failed or was killed can be retried");
      break;  // the task itself decides (one on an executor refuses)
    case NodeState::PAUSED:
      if (retry) return refuse("is paused: resume the workflow to run it");
      break;
    case NodeState::SUCCEEDED:
      if (retry) {
        return refuse("succeeded: only a task that failed or was killed can be retried (to run it again, rerun the "
                      "workflow from it once the workflow has finished)");
      }
      if (skip) return refuse("succeeded already");
      return refuse("succeeded: it has no next attempt");
    case NodeState::OUTSIDE:
      return refuse("is not part of this run, which runs from '" + run_from + "'");
    case NodeState::BLOCKED:
      if (retry || (skip && finalized)) {
        if (auto blocker = blocker_of(*spec, *graph, *index)) {
          const auto& upstream = spec->tasks[*blocker].name;
          return refuse("has not run because '" + upstream + "' " +
                        (graph->state(*blocker) == NodeState::FAILED ? "failed" : "was killed") + ": retry or skip '" +
                        upstream + "' instead");
        }
        return refuse("did not run in this rerun: rerun the workflow from it once it has finished");
      }
      break;
    case NodeState::WAITING:
    case NodeState::READY:
      if (retry) {
        return refuse(retried.count(*index) ? "was retried already: its next attempt waits for the workflow to resume"
                                            : "has not run yet: only a task that failed or was killed can be retried");
      }
      break;
  }
  if (auto t = WorkflowMachine::transition(state, operation); !t) {
    switch (state) {
      case WorkflowState::STOPPED:
        return fail(Errc::NOT_ALLOWED_IN_STATE,
                    "workflow '" + id + "' was stopped: rerun it to run again what did not finish");
      case WorkflowState::READY_STOP:
        return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' is stopping");
      default:
        return fail(t.error().code, "workflow '" + id + "': " + t.error().message);
    }
  }
  if (WorkflowMachine::is_terminal(state) && !finalized) {
    return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' is finishing: try again once it has finished");
  }
  return *index;
}

Result<std::vector<bool>> WorkflowModel::rerun_plan(std::string_view from) const {
  if (!graph) return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' has no submission");
  if (!finalized) {
    return fail(Errc::NOT_ALLOWED_IN_STATE,
                "workflow '" + id + "' is " + std::string(WorkflowMachineTraits::name(state)) +
                    ": only a finished workflow can be rerun (stop it first)");
  }
  std::optional<uint32_t> start;
  if (!from.empty()) {
    start = spec->find_task(from);
    if (!start) {
      return fail(Errc::INVALID_ARGUMENT, "workflow '" + id + "' has no task '" + std::string(from) + "'");
    }
  }
  auto reset = graph->rerun_set(start);
  if (std::find(reset.begin(), reset.end(), true) == reset.end()) {
    return fail(Errc::INVALID_ARGUMENT, "every task of workflow '" + id +
                                            "' succeeded, so there is nothing to rerun: name the task to run again from");
  }
  if (auto unmet = graph->unmet_dependency(reset)) {
    const auto& task = spec->tasks[unmet->first].name;
    const auto& dependency = spec->tasks[unmet->second].name;
    return fail(Errc::INVALID_ARGUMENT,
                "task '" + task + "' depends on '" + dependency + "', which " +
                    std::string(ending_of(graph->state(unmet->second))) + " and is not part of a rerun from '" +
                    std::string(from) + "': rerun from '" + dependency + "' or a task upstream of it");
  }
  return reset;
}

Result<void> WorkflowModel::apply(const EventView& event) {
  const auto body = event.body;
  if (body.isWorkflowSubmitted()) {
    if (applied != 0) return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' was submitted twice");
    auto submitted = body.getWorkflowSubmitted();
    submitted_us = event.timestamp_us;
    auto text = submitted.getDefinitionJson();
    input = std::make_shared<const std::string>(to_string(submitted.getInput()));
    run_from = to_string(submitted.getRunFrom());
    if (definitions != nullptr) {
      auto shared = definitions->get(std::string_view(text.cStr(), text.size()));
      if (!shared) return shared.error();
      definition_json = std::move(shared->json);
      spec = std::move(shared->spec);
    } else {
      auto parsed = parse_definition(std::string_view(text.cStr(), text.size()));
      if (!parsed) return parsed.error();
      definition_json = std::make_shared<const std::string>(text.cStr(), text.size());
      spec = std::make_shared<const WorkflowSpec>(std::move(*parsed));
    }
    std::optional<uint32_t> from;
    if (!run_from.empty()) {
      from = spec->find_task(run_from);
      if (!from) {
        return fail(Errc::INVALID_ARGUMENT, "run-from names task '" + run_from +
                                                "', which workflow '" + spec->name + "' does not have");
      }
    }
    graph.emplace(*spec, from);
    ++applied;
    return ok();
  }
  if (!graph) return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' has no submission");
  if (body.isTaskScheduled()) {
    // A task instance this workflow created: its node becomes active.
    auto index = spec->find_task(event.actor_id);
    if (index && body.getTaskScheduled().getContinuesAttempts() != (retried.count(*index) > 0)) {
      return fail(Errc::INVALID_ARGUMENT, "workflow '" + id + "' scheduled task '" + std::string(event.actor_id) +
                                              "' as a retry it did not record, or not as the retry it recorded");
    }
    if (!index || !graph->start(*index)) {
      return fail(Errc::INVALID_ARGUMENT, "workflow '" + id + "' scheduled task '" +
                                              std::string(event.actor_id) + "', which was not ready");
    }
    retried.erase(*index);
    skips.erase(*index);
    forced.erase(*index);
    ++applied;
    return ok();
  }
  auto machine_event = event_of(body.which());
  if (!machine_event) return fail(Errc::INVALID_ARGUMENT, "workflow '" + id + "' was given a non-workflow event");
  auto t = WorkflowMachine::transition(state, *machine_event);
  if (!t) return fail(t.error().code, "workflow '" + id + "': " + t.error().message);
  switch (body.which()) {
    case Body::WORKFLOW_TASK_FINISHED: {
      auto finished = body.getWorkflowTaskFinished();
      auto index = spec->find_task(to_string(finished.getTaskName()));
      const auto outcome = outcome_from_wire(finished.getOutcome());
      if (!index || !graph->finish(*index, outcome)) {
        return fail(Errc::INVALID_ARGUMENT, "workflow '" + id + "': task '" +
                                                to_string(finished.getTaskName()) +
                                                "' finished but was not active");
      }
      if (finished.getOutcome() == schema::TaskOutcome::FORCED_SUCCESS) forced.insert(*index);
      for (auto it = session_reruns.begin(); it != session_reruns.end();) {
        // The last of a session rerun's active tasks ended (a pause is no end): its tasks wait again.
        if (outcome != TaskOutcome::PAUSED && it->second.ending.erase(*index) > 0 && it->second.ending.empty()) {
          const uint32_t session = it->first;
          ++it;
          restart_session(session);
        } else {
          ++it;
        }
      }
      if (outcome == TaskOutcome::FAILED) failures.emplace_back(*index, to_string(finished.getDetail()));
      if (outcome == TaskOutcome::FAILED && first_task_failure.empty()) {
        first_task_failure = "task '" + to_string(finished.getTaskName()) + "' failed: " +
                             to_string(finished.getDetail());
        first_failed_task = static_cast<int32_t>(*index);
      }
      break;
    }
    case Body::WORKFLOW_TASK_RETRIED:
    case Body::WORKFLOW_TASK_SKIPPED: {
      const bool retry = body.isWorkflowTaskRetried();
      auto operation = retry ? body.getWorkflowTaskRetried() : body.getWorkflowTaskSkipped();
      const std::string name = to_string(operation.getTaskName());
      auto index = spec->find_task(name);
      if (WorkflowMachine::is_terminal(state) && !finalized) {
        return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' was reopened for task '" + name +
                                                    "' before it was finalized");
      }
      const NodeState node = index ? graph->state(*index) : NodeState::OUTSIDE;
      if (retry && index && graph->retry(*index)) {
        retried.insert(*index);
        forget_failure(*index);
      } else if (!retry && index && graph->force(*index)) {
        forget_failure(*index);
        forced.insert(*index);
      } else if (!retry && (node == NodeState::WAITING || node == NodeState::READY || node == NodeState::BLOCKED)) {
        skips[*index] = to_string(operation.getReason());
      } else {
        return fail(Errc::INVALID_ARGUMENT, "workflow '" + id + "': an operator's " + (retry ? "retry" : "skip") +
                                                " of task '" + name + "', which could not take it");
      }
      if (WorkflowMachine::is_terminal(state)) {
        // Reopened: the outcome it was closed with no longer holds.
        finalized = false;
        failure_reason.clear();
        stop_immediate = false;
      }
      break;
    }
    case Body::WORKFLOW_RERUN: {
      auto reset = rerun_plan(to_string(body.getWorkflowRerun().getRunFrom()));
      if (!reset) return reset.error();
      graph->rerun(*reset);
      // The tasks it resets start afresh: what an operator asked of them before is done with.
      retried.clear();
      skips.clear();
      session_reruns.clear();
      rerun_attempts.clear();
      std::erase_if(failures, [&](const auto& f) { return (*reset)[f.first]; });
      finalized = false;
      failure_reason.clear();
      stop_immediate = false;
      ++reruns;
      // A failure the rerun does not repeat still decides the outcome: name it.
      if (first_failed_task >= 0 && (*reset)[static_cast<uint32_t>(first_failed_task)]) {
        first_task_failure.clear();
        first_failed_task = -1;
      }
      if (first_failed_task < 0) {
        for (uint32_t t : spec->topological_order) {
          const NodeState node = graph->state(t);
          if (node == NodeState::FAILED || node == NodeState::KILLED || node == NodeState::BLOCKED) {
            first_task_failure = "task '" + spec->tasks[t].name + "' did not succeed before the rerun";
            first_failed_task = static_cast<int32_t>(t);
            break;
          }
        }
      }
      break;
    }
    case Body::WORKFLOW_SESSION_RERUN:
      if (auto rerun = apply_session_rerun(body.getWorkflowSessionRerun()); !rerun) return rerun.error();
      break;
    case Body::WORKFLOW_RESUMED:
      for (uint32_t paused : graph->paused()) graph->start(paused);
      break;
    case Body::WORKFLOW_FAILED:
      failure_reason = to_string(body.getWorkflowFailed().getReason());
      break;
    case Body::WORKFLOW_FINALIZED:
      finalized = true;
      break;
    case Body::WORKFLOW_STOP_REQUESTED:
      if (body.getWorkflowStopRequested().getImmediate()) stop_immediate = true;
      break;
    default:
      break;
  }
  state = t->to;
  ++applied;
  return ok();
}

Result<void> WorkflowModel::apply_session_rerun(schema::SessionRerun::Reader rerun) {
  const std::string name = to_string(rerun.getSession());
  auto session = std::find_if(spec->sessions.begin(), spec->sessions.end(),
                              [&](const SessionSpec& s) { return s.name == name; });
  auto refuse = [&](const std::string& why) {
    return fail(Errc::INVALID_ARGUMENT, "workflow '" + id + "': a rerun of session '" + name + "' " + why);
  };
  if (session == spec->sessions.end()) return refuse("it does not have");
  const auto index = static_cast<uint32_t>(session - spec->sessions.begin());
  if (session_reruns.count(index)) return refuse("while one is under way");
  if (rerun.getAttempt() <= rerun_attempts[index]) return refuse("for a recreation it reran already");
  rerun_attempts[index] = rerun.getAttempt();
  SessionRerun plan;
  for (const auto& task_name : rerun.getEnding()) {
    auto task = spec->find_task(to_string(task_name));
    const NodeState node = task ? graph->state(*task) : NodeState::OUTSIDE;
    if (node != NodeState::ACTIVE && node != NodeState::PAUSED) return refuse("ends a task that is not active");
    plan.killed.insert(*task);
  }
  for (const auto& task_name : rerun.getTasks()) {
    auto task = spec->find_task(to_string(task_name));
    if (!task || spec->tasks[*task].session != index) return refuse("names a task outside it");
    if (!plan.killed.count(*task) && graph->state(*task) != NodeState::SUCCEEDED) {
      return refuse("runs again a task that did not succeed");
    }
    plan.tasks.push_back(*task);
  }
  plan.ending = plan.killed;
  session_reruns[index] = std::move(plan);
  if (session_reruns[index].ending.empty()) restart_session(index);
  return ok();
}

void WorkflowModel::restart_session(uint32_t session) {
  auto it = session_reruns.find(session);
  if (it == session_reruns.end()) return;
  // Only what ended runs again: a killed task may have succeeded first (its token came in the
  // kill's grace), and one that failed or was killed continues its attempts.
  std::vector<uint32_t> restart;
  for (uint32_t task : it->second.tasks) {
    const NodeState node = graph->state(task);
    if (node != NodeState::SUCCEEDED && node != NodeState::FAILED && node != NodeState::KILLED) continue;
    restart.push_back(task);
    if (node != NodeState::SUCCEEDED) retried.insert(task);
    forget_failure(task);
  }
  graph->restart(restart);
  session_reruns.erase(it);
}

void WorkflowModel::forget_failure(uint32_t task) {
  std::erase_if(failures, [task](const auto& f) { return f.first == task; });
  if (first_failed_task != static_cast<int32_t>(task)) return;
  if (failures.empty()) {
    first_task_failure.clear();
    first_failed_task = -1;
    return;
  }
  first_failed_task = static_cast<int32_t>(failures.front().first);
  first_task_failure = "task '" + spec->tasks[failures.front().first].name + "' failed: " + failures.front().second;
}

std::string WorkflowModel::canonical() const {
  std::string out = "id=" + id + ";state=" + std::string(WorkflowMachineTraits::name(state)) +
                    ";definition=" + (definition_json ? *definition_json : std::string()) +
                    ";input=" + (input ? std::to_string(input->size()) + ":" + *input : std::string("0:")) +
                    ";run_from=" + run_from +
                    ";failure=" + failure_reason + ";first_task_failure=" + first_task_failure +
                    ";submitted=" + std::to_string(submitted_us) + ";finalized=" + (finalized ? "1" : "0") +
                    ";stop_immediate=" + (stop_immediate ? "1" : "0") +
                    ";first_failed_task=" + std::to_string(first_failed_task) +
                    ";reruns=" + std::to_string(reruns) + ";retried=" + [&] {
                      std::string out;
                      for (uint32_t t : retried) out += std::to_string(t) + ",";
                      return out;
                    }() + ";skips=" + [&] {
                      std::string out;
                      for (const auto& [t, reason] : skips) out += std::to_string(t) + ":" + reason + ",";
                      return out;
                    }() + ";failures=" + [&] {
                      std::string out;
                      for (const auto& [t, detail] : failures) out += std::to_string(t) + ":" + detail + ",";
                      return out;
                    }() + ";forced=" + [&] {
                      std::string out;
                      for (uint32_t t : forced) out += std::to_string(t) + ",";
                      return out;
                    }() + ";rerun_attempts=" + [&] {
                      std::string out;
                      for (const auto& [s, attempt] : rerun_attempts) out += std::to_string(s) + ":" + std::to_string(attempt) + ",";
                      return out;
                    }() + ";session_reruns=" + [&] {
                      std::string out;
                      for (const auto& [s, plan] : session_reruns) {
                        out += std::to_string(s) + ":";
                        for (uint32_t t : plan.tasks) {
                          out += std::to_string(t) + (plan.killed.count(t) ? "~" : "") + (plan.ending.count(t) ? "!" : "") + ",";
                        }
                        out += ";";
                      }
                      return out;
                    }() +
                    ";applied=" + std::to_string(applied) + ";graph=";
  if (graph) {
    for (uint32_t t = 0; t < graph->size(); ++t) out += std::to_string(static_cast<int>(graph->state(t)));
  }
  return out;
}

}  // namespace troupe::actors
