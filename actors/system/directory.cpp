// The directory actor, with the workflow cache: live workflows in recency order, the ids of
// passivated ones, and the routing of reports on passivated tasks' invocations.
#include "actors/system/directory.hpp"

#include <algorithm>
#include <list>
#include <map>
#include <optional>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/invocation_id.hpp"
#include "actors/system/actor_roster.hpp"
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
  struct Live {
    workflow_actor actor;
    std::list<std::string>::iterator recency;
    bool asked = false;  ///< a passivation request is on its way
  };
  std::map<std::string, Live> live;
  std::map<caf::actor_addr, std::string> ids;
  /// Live workflows, least recently used first.
  std::list<std::string> recency;
  /// Open workflows without actors, woken on demand from their histories, with when their
  /// earliest task timer is due (0: none). A wake timer carries the due time it was set for,
  /// so one left over from an earlier passivation is recognised and ignored.
  std::unordered_map<std::string, int64_t> passivated;
  size_t asking = 0;  ///< passivation requests on their way
  /// Clients waiting for the results of open workflows, answered when they close.
  std::unordered_map<std::string, std::vector<caf::typed_response_promise<WorkflowOutcome>>> result_waiters;
  bool sweep_armed = false;
  RosterSeat seat;
};

using Self = directory_actor::stateful_pointer<DirectoryState>;

/// Between passivation rounds while the cache stays over its size (its idle workflows were busy).
constexpr auto sweep_interval = std::chrono::seconds(1);

void ask_to_passivate(Self self, const std::string& id);
void forget(Self self, const std::string& id, const caf::actor_addr& wf);

/// Looks for idle workflows to passivate again in a while.
void arm_sweep(Self self) {
  if (self->state.sweep_armed) return;
  self->state.sweep_armed = true;
  self->delayed_send(self, sweep_interval, wake_atom::value);
}

/// Asks the least recently used workflows to passivate until the cache is back to its size.
void trim_cache(Self self) {
  auto& st = self->state;
  const size_t cap = st.wiring->workflow_cache;
  if (cap == 0) return;
  // Least recently used first; one being asked already is passed over (asking moves an entry
  // to the back, so each is looked at once).
  size_t left = st.recency.size();
  for (auto next = st.recency.begin(); left > 0 && st.live.size() > cap + st.asking; --left) {
    const std::string& id = *next++;
    auto it = st.live.find(id);
    if (it != st.live.end() && !it->second.asked) ask_to_passivate(self, id);
  }
  if (st.live.size() > cap + st.asking) arm_sweep(self);
}

/// A passivation request was refused: the workflow stays, no longer being asked.
void done_asking(Self self, const std::string& id, const workflow_actor& wf) {
  auto& st = self->state;
  auto it = st.live.find(id);
  if (it == st.live.end() || it->second.actor != wf || !it->second.asked) return;
  it->second.asked = false;
  --st.asking;
}

void ask_to_passivate(Self self, const std::string& id) {
  auto& st = self->state;
  auto& entry = st.live.at(id);
  entry.asked = true;
  ++st.asking;
  // To the back: one that refuses (busy) is asked again only after every other.
  st.recency.splice(st.recency.end(), st.recency, entry.recency);
  const auto wf = entry.actor;
  self->request(wf, caf::infinite, passivate_atom::value, caf::actor_cast<task_port>(self))
      .then(
          [self, id, wf](int64_t due_us) {
            // The actor is ending: anything for the workflow from now on wakes a new one
            // (its down message only tidies up).
            forget(self, id, wf.address());
            self->state.passivated[id] = due_us;
            if (due_us != 0) {
              const auto in = std::max<int64_t>(due_us - self->state.wiring->now_us(), 0);
              self->delayed_send(self, Duration(in), wake_atom::value, id, due_us);
            }
          },
          [self, id, wf](const caf::error&) {
            done_asking(self, id, wf);
            // Busy: the next round, not now (asking the next one at once could go round and
            // round a cache of busy workflows).
            arm_sweep(self);
          });
}

/// Most recently used: passivated last.
void touch(Self self, const std::string& id) {
  auto& st = self->state;
  if (auto it = st.live.find(id); it != st.live.end()) {
    st.recency.splice(st.recency.end(), st.recency, it->second.recency);
  }
}

void track(Self self, const std::string& id, const workflow_actor& wf) {
  auto& st = self->state;
  st.live[id] = DirectoryState::Live{wf, st.recency.insert(st.recency.end(), id), false};
  st.ids[wf.address()] = id;
  self->monitor(wf);
  trim_cache(self);
}

/// Forgets actor `wf` of workflow `id`, which has quit (its down message may still be coming;
/// `ids` keeps it until then, so its exit message is known for one of the workflows').
void forget(Self self, const std::string& id, const caf::actor_addr& wf) {
  auto& st = self->state;
  auto it = st.live.find(id);
  if (it == st.live.end() || it->second.actor.address() != wf) return;  // a newer actor took its place
  if (it->second.asked) --st.asking;
  st.recency.erase(it->second.recency);
  st.live.erase(it);
}

enum class Revival { FAILOVER, CLOSED, AWAKENED };

/// An actor for workflow `id` from its history: an open one revived after a restart (it
/// carries on), a finished one adopted as it is (to be rerun), or a passivated one woken.
Result<workflow_actor> spawn_from_history(Self self, const std::string& id, Revival how) {
  auto& st = self->state;
  auto replayed = replay(*st.store, id, st.wiring->definitions.get());
  if (!replayed) return replayed.error();
  WorkflowSetup setup;
  setup.id = id;
  setup.wiring = st.wiring;
  setup.replayed = std::make_shared<const ReplayedWorkflow>(std::move(*replayed));
  setup.closed = how == Revival::CLOSED;
  setup.awakened = how == Revival::AWAKENED;
  setup.closed_to = caf::actor_cast<close_listener>(self);
  auto wf = spawn_workflow(self->system(), std::move(setup));
  track(self, id, wf);
  return wf;
}

/// The live actor of `id`, reviving (or waking) an open workflow from its history.
Result<workflow_actor> find_or_revive(Self self, const std::string& id) {
  auto& st = self->state;
  if (auto it = st.live.find(id); it != st.live.end()) {
    touch(self, id);
    return it->second.actor;
  }
  if (auto it = st.passivated.find(id); it != st.passivated.end()) {
    // Still passivated if the wake fails (a store read error): the next event tries again.
    auto wf = spawn_from_history(self, id, Revival::AWAKENED);
    if (wf) st.passivated.erase(id);
    return wf;
  }
  auto record = st.store->find_workflow(id);
  if (!record) return record.error();
  if (!*record) return fail(Errc::NOT_FOUND, "no workflow has id '" + id + "'");
  if ((*record)->status == storage::WorkflowStatus::CLOSED) {
    return fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + id + "' has finished");
  }
  return spawn_from_history(self, id, Revival::FAILOVER);
}

/// The actor of `id` whatever its state: the live one, an open one revived or woken, or a
/// finished one adopted as it is.
Result<workflow_actor> find_or_adopt(Self self, const std::string& id) {
  auto& st = self->state;
  if (st.live.count(id) || st.passivated.count(id)) return find_or_revive(self, id);
  auto record = st.store->find_workflow(id);
  if (!record) return record.error();
  if (!*record) return fail(Errc::NOT_FOUND, "no workflow has id '" + id + "'");
  if ((*record)->status == storage::WorkflowStatus::CLOSED) return spawn_from_history(self, id, Revival::CLOSED);
  return spawn_from_history(self, id, Revival::FAILOVER);
}

/// Where the answer to a request on a workflow goes: the client's promise, or nowhere for a
/// plain message (an executor's report on a passivated task).
template <class T>
struct Answer {
  std::optional<caf::typed_response_promise<T>> promise;
  void deliver(T value) {
    if (promise) promise->deliver(std::move(value));
  }
  void deliver(const caf::error& error) {
    if (promise) promise->deliver(error);
  }
};

/// Passes on why `find` found no actor.
struct PassRefusal {
  template <class T>
  void operator()(Answer<T>& promise, const Error& error) const {
    promise.deliver(to_caf(error));
  }
};

/// Asks the actor of workflow `id`, found with `find` (find_or_revive or find_or_adopt), with
/// `ask(actor, on_answer, on_error)`; `refuse(promise, error)` answers when there is none. An
/// actor quits as it closes or passivates, and this directory learns so only from its down
/// message: a request that reaches it after it quit bounces (request_receiver_down), and is
/// asked again of the actor found now (a woken one), or refused (a finished workflow).
template <class T, class Find, class Ask, class Refuse = PassRefusal>
void ask_workflow(Self self, const std::string& id, Answer<T> promise, Find find, Ask ask, Refuse refuse = {},
                  int bounces = 0) {
  auto wf = find(self, id);
  if (!wf) {
    refuse(promise, wf.error());
    return;
  }
  ask(*wf, [promise](T answer) mutable { promise.deliver(std::move(answer)); },
      [self, id, promise, find, ask, refuse, bounces, actor = *wf](const caf::error& e) mutable {
        if (e == caf::sec::request_receiver_down && bounces < 3) {
          forget(self, id, actor.address());
          ask_workflow(self, id, promise, find, ask, refuse, bounces + 1);
        } else {
          promise.deliver(e);
        }
      });
}

/// Passes a report on a passivated task's invocation to its workflow, woken if need be. The
/// answer is the task's (true once durable); true at once when the workflow has finished, as
/// nothing waits for the report any more.
void route_report(Self self, TaskReport report, Answer<bool> promise) {
  auto parts = parse_invocation_id(report.invocation_id);
  if (!parts) {
    promise.deliver(false);  // not an invocation of ours
    return;
  }
  auto refuse = [](Answer<bool>& answer, const Error& error) {
    switch (error.code) {
      case Errc::NOT_ALLOWED_IN_STATE: answer.deliver(true); break;  // finished: nobody waits for it
      case Errc::NOT_FOUND: answer.deliver(false); break;            // not an invocation of ours
      default: answer.deliver(to_caf(error)); break;                 // the sender tries again
    }
  };
  ask_workflow(
      self, std::string(parts->workflow_id), std::move(promise), find_or_revive,
      [self, report](const workflow_actor& actor, auto on_answer, auto on_error) {
        self->request(actor, caf::infinite, update_atom::value, report).then(on_answer, on_error);
      },
      refuse);
}

/// How workflow `id` ended, from its history; nullopt while it is open or unknown.
Result<std::optional<WorkflowOutcome>> closed_outcome(storage::HistoryStore& store, const std::string& id) {
  auto record = store.find_workflow(id);
  if (!record) return record.error();
  if (!*record || (*record)->status != storage::WorkflowStatus::CLOSED) return std::optional<WorkflowOutcome>();
  auto replayed = replay(store, id);
  if (!replayed) return replayed.error();
  return std::optional<WorkflowOutcome>(WorkflowOutcome{std::string(WorkflowMachineTraits::name(replayed->workflow.state)),
                                                        replayed->workflow.failure_reason, final_outputs(*replayed)});
}

/// How workflow `id` ended: from its history once it has, else when its actor closes it. The
/// client waits here, not in the workflow actor, so a workflow it waits for may still passivate.
/// A finished workflow's live actor (adopted for a command or a rerun) is no reason to wait: it
/// may end without closing anything, and one a command reopens is answered as it was.
void ask_result(Self self, const std::string& id, caf::typed_response_promise<WorkflowOutcome> promise) {
  auto& st = self->state;
  if (!st.passivated.count(id)) {
    auto closed = closed_outcome(*st.store, id);
    if (!closed) {
      promise.deliver(to_caf(closed.error()));
      return;
    }
    if (*closed) {
      promise.deliver(**closed);
      return;
    }
    // Open without an actor (not revived since a restart): revive it, so that it carries on.
    if (!st.live.count(id)) {
      if (auto wf = find_or_revive(self, id); !wf) {
        promise.deliver(to_caf(wf.error()));
        return;
      }
    }
  }
  st.result_waiters[id].push_back(std::move(promise));
}

/// Answers every client waiting for the result of `id`.
template <class Answer>
void answer_waiters(Self self, const std::string& id, const Answer& answer) {
  auto it = self->state.result_waiters.find(id);
  if (it == self->state.result_waiters.end()) return;
  for (auto& waiter : it->second) waiter.deliver(answer);
  self->state.result_waiters.erase(it);
}

}  // namespace

directory_actor::behavior_type directory(Self self, std::shared_ptr<storage::HistoryStore> store,
                                         Wiring wiring) {
  self->state.store = std::move(store);
  self->state.wiring = std::make_shared<const Wiring>(std::move(wiring));
  if (const auto& roster = self->state.wiring->roster) {
    self->state.seat = RosterSeat(roster, {"directory", "directory", self->state.wiring->now_us(), self->address()});
  }
  // Workflows end with the directory (a restarted one revives them from their histories).
  // They are monitored, not linked: one ending, even with an error, must not end the directory
  // and every other workflow.
  self->set_exit_handler([=](const caf::exit_msg& exit) {
    if (!exit.reason) return;
    for (const auto& [id, entry] : self->state.live) self->send_exit(entry.actor, exit.reason);
    for (auto& [id, waiters] : self->state.result_waiters) {
      for (auto& waiter : waiters) waiter.deliver(exit.reason);
    }
    self->state.result_waiters.clear();
    self->quit(exit.reason);
  });
  self->set_down_handler([=](const caf::down_msg& down) {
    auto it = self->state.ids.find(down.source);
    if (it == self->state.ids.end()) return;
    const std::string id = it->second;
    forget(self, id, down.source);
    self->state.ids.erase(it);
    // One that failed (its history could not be written) will not close: its waiters hear why.
    // One that ended normally closed (its waiters were answered), passivated (they wait for
    // the one woken next), or was a finished workflow's adopted for a command: its history
    // answers them.
    if (down.reason) {
      answer_waiters(self, id, down.reason);
    } else if (self->state.result_waiters.count(id) && !self->state.live.count(id)) {
      auto closed = closed_outcome(*self->state.store, id);
      if (!closed) {
        answer_waiters(self, id, to_caf(closed.error()));
      } else if (*closed) {
        answer_waiters(self, id, **closed);
      }
    }
  });
  return {
      [=](submit_atom, const std::string& id, const std::string& json, const std::string& input,
          const std::string& run_from) -> caf::result<std::string> {
        auto& st = self->state;
        if (auto checked = storage::check_id(id, "workflow id"); !checked) return to_caf(checked.error());
        std::shared_ptr<const WorkflowSpec> spec;
        // Held to the limits here, where every submission passes once its definition is text
        // (a registered one is read by the client bridge), and never again on replay.
        if (st.wiring->definitions) {
          auto shared = st.wiring->definitions->get(json, st.wiring->limits);
          if (!shared) return to_caf(shared.error());
          spec = std::move(shared->spec);
        } else {
          auto parsed = parse_definition(json, st.wiring->limits);
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
        WorkflowSetup setup{id, json, input, run_from, st.wiring, nullptr};
        setup.closed_to = caf::actor_cast<close_listener>(self);
        auto wf = spawn_workflow(self->system(), std::move(setup));
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
        ask_workflow(self, id, Answer<std::string>{promise}, find_or_adopt,
                     [self, from](const workflow_actor& wf, auto on_answer, auto on_error) {
                       self->request(wf, caf::infinite, rerun_atom::value, from).then(on_answer, on_error);
                     });
        return promise;
      },
      [=](operate_atom, const std::string& id, const TaskCommand& command) -> caf::result<TaskCommandOutcome> {
        auto promise = self->make_response_promise<TaskCommandOutcome>();
        ask_workflow(self, id, Answer<TaskCommandOutcome>{promise}, find_or_adopt,
                     [self, command](const workflow_actor& wf, auto on_answer, auto on_error) {
                       self->request(wf, caf::infinite, operate_atom::value, command).then(on_answer, on_error);
                     });
        return promise;
      },
      [=](result_atom, const std::string& id) -> caf::result<WorkflowOutcome> {
        auto promise = self->make_response_promise<WorkflowOutcome>();
        ask_result(self, id, promise);
        return promise;
      },
      [=](closed_atom, const std::string& id, const WorkflowOutcome& outcome, bool ending) {
        // An ending actor is forgotten now: a result asked from here on is read from the history.
        if (ending) forget(self, id, caf::actor_cast<caf::actor_addr>(self->current_sender()));
        answer_waiters(self, id, outcome);
      },
      [=](control_atom, const std::string& id, uint8_t raw_action) -> caf::result<std::string> {
        auto promise = self->make_response_promise<std::string>();
        const auto action = static_cast<WorkflowControl>(raw_action);
        ask_workflow(self, id, Answer<std::string>{promise}, find_or_revive,
                     [self, action](const workflow_actor& wf, auto on_answer, auto on_error) {
                       auto ask = [&](auto atom) { self->request(wf, caf::infinite, atom).then(on_answer, on_error); };
                       switch (action) {
                         case WorkflowControl::PAUSE: ask(pause_atom::value); break;
                         case WorkflowControl::RESUME: ask(resume_atom::value); break;
                         case WorkflowControl::STOP: ask(stop_atom::value); break;
                         case WorkflowControl::KILL: ask(kill_atom::value); break;
                       }
                     });
        return promise;
      },
      [=](complete_atom, const std::string& id, const std::string& task, TaskReport& report) -> caf::result<bool> {
        auto promise = self->make_response_promise<bool>();
        ask_workflow(self, id, Answer<bool>{promise}, find_or_revive,
                     [self, task, report](const workflow_actor& wf, auto on_answer, auto on_error) {
                       self->request(wf, caf::infinite, complete_atom::value, task, report).then(on_answer, on_error);
                     });
        return promise;
      },
      [=](report_atom, TaskReport& report) { route_report(self, std::move(report), Answer<bool>{}); },
      [=](update_atom, TaskReport& report) -> caf::result<bool> {
        auto promise = self->make_response_promise<bool>();
        route_report(self, std::move(report), Answer<bool>{promise});
        return promise;
      },
      [=](wake_atom, const std::string& id, int64_t due_us) {
        // A task timer of a passivated workflow is due: its woken tasks fire it.
        auto it = self->state.passivated.find(id);
        if (it != self->state.passivated.end() && it->second == due_us) (void)find_or_revive(self, id);
      },
      [=](wake_atom) {
        self->state.sweep_armed = false;
        trim_cache(self);
      },
      [=](describe_atom) {
        return caf::make_result(uint64_t{self->state.live.size()}, uint64_t{self->state.passivated.size()});
      },
      [=](probe_atom) {
        const auto& st = self->state;
        auto probe = std::make_shared<ActorProbe>();
        probe->kind = "directory";
        probe->state = "RUNNING";
        probe->mailbox = mailbox_depth(self);
        probe->field("live workflows", std::to_string(st.live.size()));
        probe->passivated_workflows = st.passivated.size();
        probe->field("passivated workflows", std::to_string(st.passivated.size()));
        probe->field("workflow cache", std::to_string(st.wiring->workflow_cache));
        probe->field("passivations asked", std::to_string(st.asking));
        size_t waiters = 0;
        for (const auto& [id, list] : st.result_waiters) waiters += list.size();
        probe->field("clients waiting for results", std::to_string(waiters));
        int64_t next_wake = 0;
        for (const auto& [id, due] : st.passivated) {
          if (due > 0 && (next_wake == 0 || due < next_wake)) next_wake = due;
        }
        if (next_wake) probe->timers.push_back({"wakes a passivated workflow", next_wake});
        return ProbeAnswer(std::move(probe));
      },
      [=](revive_atom) -> caf::result<uint64_t> {
        uint64_t revived = 0;
        std::string after;
        for (;;) {
          auto page = self->state.store->scan_open(after, revive_page);
          if (!page) return to_caf(page.error());
          if (page->empty()) break;
          for (const auto& entry : *page) {
            if (self->state.live.count(entry.id) || self->state.passivated.count(entry.id)) continue;
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
