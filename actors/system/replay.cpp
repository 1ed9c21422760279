// Replay of stored histories.
#include "actors/system/replay.hpp"

#include "storage/codec.hpp"

namespace troupe::actors {

Result<ReplayedWorkflow> replay(const std::string& workflow_id,
                                const std::vector<storage::StoredEvent>& history,
                                DefinitionCache* definitions) {
  ReplayedWorkflow out;
  out.workflow.id = workflow_id;
  out.workflow.definitions = definitions;
  for (const auto& stored : history) {
    const std::string where =
        "workflow '" + workflow_id + "' event " + std::to_string(stored.sequence) + ": ";
    auto decoded = storage::DecodedEvent::decode(stored.packed);
    if (!decoded) return fail(Errc::CORRUPTION, where + decoded.error().message);
    auto event = decoded->get();
    const auto view = view_of(event);
    Result<void> applied = ok();
    if (event.getActorKind() == schema::ActorKind::TASK) {
      const std::string name(view.actor_id);
      auto [it, fresh] = out.tasks.try_emplace(name);
      if (fresh) it->second.name = name;
      applied = it->second.apply(view);
      if (applied && event.getBody().isTaskScheduled()) applied = out.workflow.apply(view);
    } else if (event.getActorKind() == schema::ActorKind::WORKFLOW) {
      applied = out.workflow.apply(view);
    }
    if (!applied) return fail(Errc::CORRUPTION, where + applied.error().message);
  }
  return out;
}

WorkflowStatus snapshot(const ReplayedWorkflow& replayed) {
  WorkflowStatus view;
  view.workflow_id = replayed.workflow.id;
  view.state = std::string(WorkflowMachineTraits::name(replayed.workflow.state));
  view.detail = replayed.workflow.failure_reason;
  if (!replayed.workflow.spec) return view;
  for (const auto& spec : replayed.workflow.spec->tasks) {
    TaskStatus task;
    task.name = spec.name;
    task.state = "WAITING";
    // A task an operator updated before it was scheduled has a model, and no instance yet.
    if (auto it = replayed.tasks.find(spec.name); it != replayed.tasks.end() && it->second.scheduled) {
      const auto& model = it->second;
      task.state = std::string(TaskMachineTraits::name(model.state));
      task.attempt = model.attempt;
      task.worker = model.executor;
      task.failure = model.failure_reason;
      task.progress = model.progress;
      task.awaiting_completion = model.awaiting_completion;
    }
    view.tasks.push_back(std::move(task));
  }
  return view;
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
