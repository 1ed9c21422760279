// The directory actor.
#include "actors/system/directory.hpp"

#include <map>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/system/replay.hpp"
#include "storage/keys.hpp"

namespace troupe::actors {
namespace {

/// Open workflows revived per page of the recovery scan.
constexpr size_t revive_page = 256;

struct DirectoryState {
  static inline const char* name = "directory";
  std::shared_ptr<storage::HistoryStore> store;
  std::shared_ptr<const Wiring> wiring;
  std::map<std::string, workflow_actor> live;
  std::map<caf::actor_addr, std::string> ids;
};

using Self = directory_actor::stateful_pointer<DirectoryState>;

void track(Self self, const std::string& id, const workflow_actor& wf) {
  self->state.live[id] = wf;
  self->state.ids[wf.address()] = id;
  self->monitor(wf);
}

/// An actor for workflow `id` from its history: an open one revived (it carries on), or a
/// finished one adopted as it is, to be rerun (`closed`).
Result<workflow_actor> spawn_from_history(Self self, const std::string& id, bool closed) {
  auto& st = self->state;
  auto replayed = replay(*st.store, id, st.wiring->definitions.get());
  if (!replayed) return replayed.error();
  WorkflowSetup setup;
  setup.id = id;
  setup.wiring = st.wiring;
  setup.replayed = std::make_shared<const ReplayedWorkflow>(std::move(*replayed));
  setup.closed = closed;
  auto wf = spawn_workflow(self, std::move(setup));
  track(self, id, wf);
  return wf;
}

/// The live actor of `id`, reviving an open workflow from its history.
Result<workflow_actor> find_or_revive(Self self, const std::string& id) {
  auto& st = self->state;
  if (auto it = st.live.find(id); it != st.live.end()) return it->second;
  auto record = st.store->find_workflow(id);
  if (!record) return record.error();
  if (!*record) return fail(Errc::NOT_FOUND, "no workflow has id '" + id + "'");
  if ((*record)->status == storage::WorkflowStatus::CLOSED) {
    return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' has finished");
  }
  return spawn_from_history(self, id, false);
}

/// The actor of `id` whatever its state: the live one, an open one revived, or a finished one
/// adopted as it is.
Result<workflow_actor> find_or_adopt(Self self, const std::string& id) {
  auto& st = self->state;
  if (auto it = st.live.find(id); it != st.live.end()) return it->second;
  auto record = st.store->find_workflow(id);
  if (!record) return record.error();
  if (!*record) return fail(Errc::NOT_FOUND, "no workflow has id '" + id + "'");
  return spawn_from_history(self, id, (*record)->status == storage::WorkflowStatus::CLOSED);
}

/// Forgets an actor that is known to have quit before its down message arrived.
void forget(Self self, const std::string& id, const workflow_actor& wf) {
  auto& st = self->state;
  if (auto it = st.live.find(id); it != st.live.end() && it->second == wf) st.live.erase(it);
  st.ids.erase(wf.address());
}

/// Asks the actor of `id` to rerun from `from`: the live one (open, or closing right now), else
/// a finished one adopted from its history. A live actor that quit as it closed bounces the
/// request; the rerun then goes to an adopted one.
void rerun(Self self, const std::string& id, const std::string& from,
           caf::typed_response_promise<std::string> promise, int bounces) {
  auto wf = find_or_adopt(self, id);
  if (!wf) {
    promise.deliver(to_caf(wf.error()));
    return;
  }
  self->request(*wf, caf::infinite, rerun_atom::value, from)
      .then([promise](const std::string& state) mutable { promise.deliver(state); },
            [self, id, from, promise, bounces, actor = *wf](const caf::error& e) mutable {
              if (e == caf::sec::request_receiver_down && bounces < 3) {
                forget(self, id, actor);
                rerun(self, id, from, promise, bounces + 1);
              } else {
                promise.deliver(e);
              }
            });
}

/// How workflow `id` ended, from its history; nullopt while it is open or unknown.
Result<std::optional<WorkflowOutcome>> closed_outcome(storage::HistoryStore& store, const std::string& id) {
  auto record = store.find_workflow(id);
  if (!record) return record.error();
  if (!*record || (*record)->status != storage::WorkflowStatus::CLOSED) return std::optional<WorkflowOutcome>();
  auto replayed = replay(store, id);
  if (!replayed) return replayed.error();
  return std::optional<WorkflowOutcome>(WorkflowOutcome{
      std::string(WorkflowMachineTraits::name(replayed->workflow.state)), replayed->workflow.failure_reason});
}

/// Asks the live actor of `id` for its outcome. The actor quits as it closes, and this
/// directory learns so only from its down message: a request that reaches it after it quit
/// bounces (request_receiver_down), and is then answered from the history it closed.
caf::result<WorkflowOutcome> ask_outcome(Self self, const std::string& id, const workflow_actor& wf) {
  auto promise = self->make_response_promise<WorkflowOutcome>();
  self->request(wf, caf::infinite, result_atom::value)
      .then([promise](const WorkflowOutcome& outcome) mutable { promise.deliver(outcome); },
            [self, id, promise](const caf::error& e) mutable {
              auto closed = closed_outcome(*self->state.store, id);
              if (closed && *closed) {
                promise.deliver(**closed);
              } else {
                promise.deliver(e);
              }
            });
  return promise;
}

}  // namespace

directory_actor::behavior_type directory(Self self, std::shared_ptr<storage::HistoryStore> store,
                                         Wiring wiring) {
  self->state.store = std::move(store);
  self->state.wiring = std::make_shared<const Wiring>(std::move(wiring));
  // Workflows are linked to the directory so that they end with it; one workflow ending, even
  // with an error, must not end the directory and every other workflow.
  self->set_exit_handler([=](const caf::exit_msg& exit) {
    if (self->state.ids.count(exit.source)) return;  // a workflow: the down handler tidies up
    if (exit.reason) self->quit(exit.reason);
  });
  self->set_down_handler([=](const caf::down_msg& down) {
    auto it = self->state.ids.find(down.source);
    if (it == self->state.ids.end()) return;
    self->state.live.erase(it->second);
    self->state.ids.erase(it);
  });
  return {
      [=](submit_atom, const std::string& id, const std::string& json, const std::string& input,
          const std::string& run_from) -> caf::result<std::string> {
        auto& st = self->state;
        if (auto checked = storage::check_id(id, "workflow id"); !checked) return to_caf(checked.error());
        std::shared_ptr<const WorkflowSpec> spec;
        if (st.wiring->definitions) {
          auto shared = st.wiring->definitions->get(json);
          if (!shared) return to_caf(shared.error());
          spec = std::move(shared->spec);
        } else {
          auto parsed = parse_definition(json);
          if (!parsed) return to_caf(parsed.error());
          spec = std::make_shared<const WorkflowSpec>(std::move(*parsed));
        }
        if (!run_from.empty() && !spec->find_task(run_from)) {
          return to_caf(fail(Errc::INVALID_ARGUMENT, "run-from names task '" + run_from +
                                                         "', which the definition does not have"));
        }
        auto existing = st.store->find_workflow(id);
        if (!existing) return to_caf(existing.error());
        if (*existing && (*existing)->status == storage::WorkflowStatus::OPEN) {
          // Submitted before and durable: the same run, as Temporal's workflow id reuse does
          // while a run is open. A client that lost the first answer can safely submit again.
          return std::string("OPEN");
        }
        if (*existing) {
          return to_caf(fail(Errc::ALREADY_EXISTS, "workflow '" + id + "' has finished (" +
                                                       (*existing)->final_state +
                                                       "): rerun it, or submit under another id"));
        }
        if (st.live.count(id)) {
          return to_caf(fail(Errc::ALREADY_EXISTS, "workflow '" + id + "' is being submitted right now; "
                                                       "submit again to get it once it is recorded"));
        }
        auto wf = spawn_workflow(self, WorkflowSetup{id, json, input, run_from, st.wiring, nullptr});
        track(self, id, wf);
        return self->delegate(wf, start_atom::value);
      },
      [=](lookup_atom, const std::string& id) -> caf::result<workflow_actor> {
        auto wf = find_or_revive(self, id);
        if (!wf) return to_caf(wf.error());
        return *wf;
      },
      [=](rerun_atom, const std::string& id, const std::string& from) -> caf::result<std::string> {
        auto promise = self->make_response_promise<std::string>();
        rerun(self, id, from, promise, 0);
        return promise;
      },
      [=](result_atom, const std::string& id) -> caf::result<WorkflowOutcome> {
        auto& st = self->state;
        if (auto it = st.live.find(id); it != st.live.end()) return ask_outcome(self, id, it->second);
        auto closed = closed_outcome(*st.store, id);
        if (!closed) return to_caf(closed.error());
        if (*closed) return **closed;
        auto wf = find_or_revive(self, id);
        if (!wf) return to_caf(wf.error());
        return ask_outcome(self, id, *wf);
      },
      [=](revive_atom) -> caf::result<uint64_t> {
        uint64_t revived = 0;
        std::string after;
        for (;;) {
          auto page = self->state.store->scan_open(after, revive_page);
          if (!page) return to_caf(page.error());
          if (page->empty()) break;
          for (const auto& entry : *page) {
            if (self->state.live.count(entry.id)) continue;
            auto wf = find_or_revive(self, entry.id);
            if (!wf) return to_caf(wf.error());
            ++revived;
          }
          after = page->back().id;
        }
        return revived;
      },
  };
}

directory_actor spawn_directory(caf::actor_system& system, std::shared_ptr<storage::HistoryStore> store,
                                Wiring wiring) {
  return system.spawn(directory, std::move(store), std::move(wiring));
}

}  // namespace troupe::actors
