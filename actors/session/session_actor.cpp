// The session actor. Like the task actor it persists before it acts: an event is applied to the
// model and appended, and the table's actions run once it is durable.
#include "actors/session/session_actor.hpp"

#include <array>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/invocation_id.hpp"
#include "actors/session/session_probe.hpp"
#include "actors/session/session_timers.hpp"
#include "actors/system/actor_roster.hpp"
#include "schema/recreate_token.hpp"

namespace troupe::actors {
namespace {

/// Timers besides the table's (SessionTimer): a call to the worker that failed with its
/// connection is asked again shortly (the worker may be reconnecting).
constexpr uint8_t retry_open_timer = 10;
constexpr uint8_t retry_close_timer = 11;
constexpr auto retry_delay = std::chrono::seconds(1);

struct SessionActorState {
  static inline const char* name = "session";
  SessionSetup setup;
  EffectPipeline pipeline;
  std::array<uint64_t, 3> generation{};
  /// Generations of the retries of openSession and of closeSession, apart: a session drained
  /// while it entered has both under way, and neither retry may void the other.
  uint64_t retry_open_generation = 0;
  uint64_t retry_close_generation = 0;
  /// The dispatcher's id of the placement the session holds (SessionPlace::id); 0: none.
  uint64_t placement = 0;
  bool ended = false;
  RosterSeat seat;

  SessionModel& model() { return setup.model; }
  const SessionSpec& spec() const { return setup.spec->sessions[setup.index]; }
  std::string key() const { return make_session_key(setup.workflow_id, spec().name); }
  const Wiring& wiring() const { return *setup.wiring; }
};

using Self = session_actor::stateful_pointer<SessionActorState>;
using Body = schema::EventBody::Builder;

/// The task lists of the session's tasks: its worker must serve each.
std::vector<std::string> task_lists(const SessionActorState& st) {
  std::set<std::string> lists;
  for (uint32_t task : st.spec().tasks) lists.insert(st.setup.spec->tasks[task].task_list);
  return {lists.begin(), lists.end()};
}

/// envEnter or envExit as an invocation: WORKFLOW/SESSION.envEnter/ATTEMPT.ENTRY, run with the
/// workflow's input.
Invocation action_invocation(const SessionActorState& st, const TaskBody& body, const char* which) {
  const SessionModel& model = st.setup.model;
  Invocation inv;
  inv.workflow_id = st.setup.workflow_id;
  inv.task_name = st.spec().name + "." + which;
  inv.invocation_id = make_invocation_id(inv.workflow_id, inv.task_name, std::max<uint32_t>(model.attempt, 1),
                                         model.reestablished + 1);
  inv.attempt = std::max<uint32_t>(model.attempt, 1);
  inv.executor = model.worker;
  inv.input_json = st.setup.workflow_input && !st.setup.workflow_input->empty() ? *st.setup.workflow_input : "{}";
  set_body(inv, body);
  return inv;
}

SessionOpen opening_of(const SessionActorState& st) {
  SessionOpen open;
  open.id = st.key();
  open.workflow_id = st.setup.workflow_id;
  open.name = st.spec().name;
  if (st.spec().env_enter) open.env_enter = action_invocation(st, *st.spec().env_enter, "envEnter");
  if (st.spec().env_exit) open.env_exit = action_invocation(st, *st.spec().env_exit, "envExit");
  return open;
}

void arm(Self self, SessionTimer timer, int64_t at_us) {
  auto& st = self->state;
  const auto kind = static_cast<size_t>(timer);
  const int64_t delay_us = std::max<int64_t>(0, at_us - st.wiring().now_us());
  self->delayed_send(self, std::chrono::microseconds(delay_us), timeout_atom::value, static_cast<uint8_t>(timer),
                     ++st.generation[kind]);
}

void disarm(Self self, SessionTimer timer) { ++self->state.generation[static_cast<size_t>(timer)]; }

/// Arms what the model says is due of `timer`, if anything.
void arm_due(Self self, SessionTimer timer) {
  for (const auto& due : session_timers(self->state.model(), self->state.spec())) {
    if (due.timer == timer) arm(self, timer, due.at_us);
  }
}

template <class Fill>
bool decide(Self self, SessionEvent event, Fill&& fill);

/// "reason: details" of an action's outcome that was no success.
void fill_failure(schema::Failure::Builder f, const TaskReport& report) {
  switch (report.kind) {
    case TaskReport::CANCELLED: f.setReason("Cancelled"); break;
    case TaskReport::INTERRUPTED: f.setReason("Interrupted"); break;
    case TaskReport::LOST: f.setReason("Lost"); break;
    default: f.setReason(report.reason.empty() ? "Failed" : report.reason);
  }
  f.setDetails(report.details);
}

/// Asks for a worker: any that fits (CREATING), or one of the lost worker's resource
/// (REESTABLISHING), whose placement is then WORKER_BACK.
void ask_for_worker(Self self) {
  auto& st = self->state;
  const bool back = st.model().state == SessionState::REESTABLISHING;
  SessionAsk ask{st.key(), back ? st.model().resource : st.spec().resource_id, task_lists(st),
                 !back && st.model().attempt > 1 ? st.model().worker : "", ""};
  if (!back && !st.spec().recreate_token.empty()) {
    // Where the earlier session ran (the definition's check let only a valid token in).
    if (auto place = parse_recreate_token(st.spec().recreate_token)) {
      ask.resource_id = place->resource_id;
      ask.only_shard = place->shard;
    }
  }
  self->request(st.wiring().sessions, caf::infinite, place_atom::value, std::move(ask))
      .then(
          [self, back](const SessionPlace& place) {
            const bool taken = decide(self, back ? SessionEvent::WORKER_BACK : SessionEvent::PLACED, [&](Body b) {
              auto o = b.initSessionOpened();
              o.setWorkerShard(place.shard);
              o.setInstanceId(place.instance);
              o.setResourceId(place.resource_id);
              o.setReestablished(back);
              o.setRecreateToken(as_bytes(make_recreate_token(place.resource_id, place.shard)));
            });
            if (taken) {
              self->state.placement = place.id;
            } else {
              // Not wanted any more (it timed out or ended meanwhile): the slot goes back.
              self->send(self->state.wiring().sessions, free_atom::value, self->state.key(), place.id);
            }
          },
          [](const caf::error&) {});  // withdrawn: the table moved on
}

/// openSession on the session's worker; envEnter's outcome becomes ENTERED or ENTER_FAILED.
void enter_on_worker(Self self) {
  auto& st = self->state;
  const std::string shard = st.model().worker;
  const uint32_t entry = st.model().reestablished;
  self->request(st.wiring().sessions, caf::infinite, open_atom::value, shard, opening_of(st))
      .then(
          [self, shard, entry](const TaskReport& outcome) {
            const auto& model = self->state.model();
            if (model.worker != shard || model.reestablished != entry) return;  // an earlier placement's
            if (outcome.kind == TaskReport::SUCCEEDED || outcome.kind == TaskReport::HANDED_OFF) {
              decide(self, SessionEvent::ENTERED, [](Body b) { b.setSessionEntered(); });
            } else if ((outcome.kind == TaskReport::CANCELLED && model.state == SessionState::ENTERING) ||
                       outcome.kind == TaskReport::INTERRUPTED) {
              // Only a session closing or failing stops its envEnter (STOP_CURRENT_ACTION): one
              // cancelled before that was stopped by its worker, shutting down. That is the
              // worker's loss, not the session's failure: ask again until the loss arrives.
              self->delayed_send(self, retry_delay, timeout_atom::value, retry_open_timer, ++self->state.retry_open_generation);
            } else {
              decide(self, SessionEvent::ENTER_FAILED, [&](Body b) { fill_failure(b.initSessionEnterFailed(), outcome); });
            }
          },
          [self, shard, entry](const caf::error& error) {
            const auto& model = self->state.model();
            if (model.worker != shard || model.reestablished != entry) return;
            const Error e = from_caf(error);
            if (e.code != Errc::NOT_ALLOWED_IN_STATE) {
              // Not the worker's refusal: the connection failed, or the worker (or its actor) is
              // going. Ask again; a lost worker's loss reaches the session meanwhile and moves it on.
              self->delayed_send(self, retry_delay, timeout_atom::value, retry_open_timer, ++self->state.retry_open_generation);
              return;
            }
            TaskReport failed;
            failed.kind = TaskReport::FAILED;
            failed.reason = "SessionOpenRefused";
            failed.details = e.message;
            decide(self, SessionEvent::ENTER_FAILED, [&](Body b) { fill_failure(b.initSessionEnterFailed(), failed); });
          });
}

/// closeSession on the session's worker; envExit's end becomes EXITED.
void exit_on_worker(Self self) {
  auto& st = self->state;
  const std::string shard = st.model().worker;
  self->request(st.wiring().sessions, caf::infinite, close_atom::value, shard, st.key())
      .then(
          [self, shard](bool ran, const TaskReport& outcome) {
            if (self->state.model().worker != shard) return;
            const bool succeeded = !ran || outcome.kind == TaskReport::SUCCEEDED;
            decide(self, SessionEvent::EXITED, [&](Body b) {
              auto x = b.initSessionExited();
              x.setSucceeded(succeeded);
              if (!succeeded) fill_failure(x.initFailure(), outcome);
            });
          },
          [self, shard](const caf::error& error) {
            if (self->state.model().worker != shard) return;
            if (from_caf(error).code != Errc::NOT_ALLOWED_IN_STATE) {
              // Its worker is not there now: ask again until it is, or its loss closes the session.
              self->delayed_send(self, retry_delay, timeout_atom::value, retry_close_timer, ++self->state.retry_close_generation);
              return;
            }
            TaskReport refused;
            refused.kind = TaskReport::FAILED;
            refused.reason = "SessionCloseRefused";
            refused.details = from_caf(error).message;
            decide(self, SessionEvent::EXITED, [&](Body b) {
              auto x = b.initSessionExited();
              x.setSucceeded(false);
              fill_failure(x.initFailure(), refused);
            });
          });
}

/// Stops the env actions its worker runs now, if it does (the worker ignores one that does not
/// run): an execution timeout or a cancellation while envEnter, or a hung envExit, runs; with
/// `enter_only`, envEnter alone (an immediate drain: envExit still runs before the move).
void stop_env_actions(Self self, bool enter_only = false) {
  auto& st = self->state;
  if (st.model().worker.empty()) return;
  const SessionOpen open = opening_of(st);
  for (const auto* action : {&open.env_enter, &open.env_exit}) {
    if (enter_only && action == &open.env_exit) continue;
    if (!action->invocation_id.empty()) {
      self->send(st.wiring().sessions, cancel_atom::value, session_atom::value, st.model().worker,
                 action->invocation_id);
    }
  }
}

/// Recreated with rerunAll: its workflow runs again what of it succeeded (once per recreation).
void ask_for_rerun(Self self) {
  auto& st = self->state;
  if (st.model().attempt > 1 && st.spec().rerun_all) {
    self->send(st.setup.owner, session_atom::value, st.setup.index, rerun_atom::value, st.model().attempt);
  }
}

void pin(Self self, const std::string& shard) {
  auto& st = self->state;
  self->send(st.wiring().sessions, pin_atom::value, st.key(), shard, task_lists(st));
}

/// The table's actions for a transition, run once its event is durable.
void act(Self self, const SessionTransition& t) {
  auto& st = self->state;
  const uint32_t index = st.setup.index;
  for (SessionAction action : t.actions) {
    switch (action) {
      case SessionAction::FIND_WORKER: ask_for_worker(self); break;
      case SessionAction::ARM_CREATION_TIMER: arm_due(self, SessionTimer::CREATION); break;
      case SessionAction::STOP_LOOKING:
        disarm(self, SessionTimer::CREATION);
        self->send(st.wiring().sessions, withdraw_atom::value, st.key());
        break;
      case SessionAction::ENTER_ON_WORKER: enter_on_worker(self); break;
      case SessionAction::ARM_EXECUTION_TIMER: arm_due(self, SessionTimer::EXECUTION); break;
      case SessionAction::RELEASE_TASKS: pin(self, st.model().worker); break;
      case SessionAction::HOLD_TASKS: pin(self, std::string()); break;
      case SessionAction::NEVER_ATTEMPT_QUEUED: self->send(st.setup.owner, session_atom::value, index, kill_atom::value); break;
      case SessionAction::STOP_CURRENT_ACTION:
        stop_env_actions(self);
        self->send(st.setup.owner, session_atom::value, index, kill_atom::value);  // a task it runs
        break;
      case SessionAction::STOP_ENV_ENTER: stop_env_actions(self, true); break;
      case SessionAction::EXIT_ON_WORKER:
        pin(self, std::string());  // nothing more of it dispatches
        exit_on_worker(self);
        break;
      case SessionAction::ARM_REESTABLISH_TIMER:
        arm_due(self, SessionTimer::REESTABLISH);
        // Its resource may come back (the worker restarts): the session continues there.
        if (!st.model().resource.empty() && st.spec().reestablish_within > Duration::zero()) ask_for_worker(self);
        break;
      case SessionAction::STOP_REESTABLISH_TIMER:
        disarm(self, SessionTimer::REESTABLISH);
        self->send(st.wiring().sessions, withdraw_atom::value, st.key());
        break;
      case SessionAction::FREE_SLOT:
        pin(self, std::string());
        self->send(st.wiring().sessions, free_atom::value, st.key(), std::exchange(st.placement, 0));
        break;
      case SessionAction::STOP_EXECUTION_TIMER: disarm(self, SessionTimer::EXECUTION); break;
    }
  }
  if (t.to == SessionState::CREATING) ask_for_rerun(self);
  if (SessionMachine::is_terminal(t.to) && !st.ended) {
    st.ended = true;
    if (st.wiring().on_session_end) st.wiring().on_session_end(st.setup.workflow_id, st.model().canonical());
    pin(self, std::string());
    self->send(st.setup.owner, session_atom::value, index, static_cast<uint8_t>(t.to), st.model().failure_reason,
               st.model().failure_details);
    self->quit();
  }
}

/// Decides `event` with a history body made by `fill`: false when the table does not take it
/// in the current state (nothing is recorded).
template <class Fill>
bool decide(Self self, SessionEvent event, Fill&& fill) {
  auto& st = self->state;
  if (st.ended) return false;
  const SessionTransition t = SessionMachine::transition(st.model().state, event);
  if (t.ignored) return false;
  auto new_event = make_event(storage::ActorKind::SESSION, st.spec().name, std::max<uint32_t>(st.model().attempt, 1),
                              st.wiring().now_us(), std::forward<Fill>(fill));
  NewEventReader reader(new_event);
  if (auto applied = st.model().apply(reader.view()); !applied) {
    self->quit(to_caf(fail(Errc::INTERNAL, applied.error().message)));
    return false;
  }
  const uint64_t ticket = st.pipeline.open([self, t] { act(self, t); });
  EventBatch batch;
  batch.events.push_back(std::move(new_event));
  st.wiring().writer.append(caf::actor_cast<persisted_port>(self), st.setup.workflow_id, std::move(batch), ticket);
  return true;
}

void creating(Self self, uint32_t attempt) {
  const auto& spec = self->state.spec();
  decide(self, attempt <= 1 ? SessionEvent::FIRST_TASK_READY : SessionEvent::RECREATE, [&](Body b) {
    auto c = b.initSessionCreating();
    c.setAttempt(attempt);
    c.setCreationTimeoutUs(spec.creation_timeout ? spec.creation_timeout->count() : 0);
  });
}

void worker_lost(Self self, const std::string& shard, const std::string& why) {
  decide(self, SessionEvent::WORKER_LOST, [&](Body b) {
    auto l = b.initSessionWorkerLost();
    l.setWorkerShard(shard);
    l.setReason(why);
  });
}

/// After a scheduler restart: the session's worker holds it still if the same process comes
/// back within the recovery window; then the session carries on from its state there.
void reclaim_worker(Self self) {
  auto& st = self->state;
  const std::string shard = st.model().worker;
  self->request(st.wiring().sessions, caf::infinite, claim_atom::value, st.key(), shard)
      .then(
          [self, shard](const SessionPlace& place) {
            auto& s = self->state;
            if (s.model().worker != shard || s.ended) {
              self->send(s.wiring().sessions, free_atom::value, s.key(), place.id);
              return;
            }
            s.placement = place.id;
            if (place.instance != s.model().instance) {
              // Another process holds the shard now: the session died with the one before.
              worker_lost(self, shard, "restarted while the scheduler was down");
              return;
            }
            switch (s.model().state) {
              case SessionState::ENTERING: enter_on_worker(self); break;
              case SessionState::OPEN: pin(self, shard); break;
              case SessionState::MOVING:
              case SessionState::CLOSING:
              case SessionState::FAILING: exit_on_worker(self); break;
              default: break;
            }
          },
          [self, shard](const caf::error& error) {
            if (self->state.model().worker != shard) return;
            worker_lost(self, shard, from_caf(error).message);
          });
}

/// Carries on from a replayed state: the timers the history leaves, and what each state was
/// waiting for asked for again.
void recover(Self self) {
  auto& st = self->state;
  arm_due(self, SessionTimer::EXECUTION);
  switch (st.model().state) {
    case SessionState::CREATING:
      arm_due(self, SessionTimer::CREATION);
      ask_for_worker(self);
      // Recreated just before the restart, its rerun may not be recorded: the workflow ignores a
      // second word for the same recreation.
      ask_for_rerun(self);
      break;
    case SessionState::FAILING:
      // Its tasks that had not run were being ended when the scheduler stopped: again.
      self->send(st.setup.owner, session_atom::value, st.setup.index, kill_atom::value);
      reclaim_worker(self);
      break;
    case SessionState::ENTERING:
    case SessionState::OPEN:
    case SessionState::MOVING:
    case SessionState::CLOSING: reclaim_worker(self); break;
    case SessionState::REESTABLISHING:
      arm_due(self, SessionTimer::REESTABLISH);
      if (!st.model().resource.empty() && st.spec().reestablish_within > Duration::zero()) ask_for_worker(self);
      break;
    default: break;
  }
}

void on_timer(Self self, uint8_t timer, uint64_t generation) {
  auto& st = self->state;
  if (timer == retry_open_timer || timer == retry_close_timer) {
    if (generation != (timer == retry_open_timer ? st.retry_open_generation : st.retry_close_generation)) return;
    const auto state = st.model().state;
    if (timer == retry_open_timer && state == SessionState::ENTERING) enter_on_worker(self);
    if (timer == retry_close_timer &&
        (state == SessionState::MOVING || state == SessionState::CLOSING || state == SessionState::FAILING)) {
      exit_on_worker(self);
    }
    return;
  }
  if (timer > static_cast<uint8_t>(SessionTimer::REESTABLISH) || generation != st.generation[timer]) return;
  switch (static_cast<SessionTimer>(timer)) {
    case SessionTimer::CREATION:
      decide(self, SessionEvent::CREATION_TIMED_OUT,
             [](Body b) { b.initSessionTimedOut().setKind(schema::SessionTimeoutKind::CREATION); });
      break;
    case SessionTimer::EXECUTION:
      decide(self, SessionEvent::EXECUTION_TIMED_OUT,
             [](Body b) { b.initSessionTimedOut().setKind(schema::SessionTimeoutKind::EXECUTION); });
      break;
    case SessionTimer::REESTABLISH:
      if (after_window(st.model(), st.spec()) == SessionEvent::RECREATE) {
        creating(self, st.model().attempt + 1);
      } else {
        decide(self, SessionEvent::ABANDON, [&](Body b) {
          auto f = b.initSessionFailed();
          f.setReason("WorkerLost");
          f.setDetails(st.model().lost_reason);
        });
      }
      break;
  }
}

session_actor::behavior_type session_behavior(Self self, SessionSetup setup) {
  self->state.setup = std::move(setup);
  if (const auto& roster = self->state.wiring().roster) {
    self->state.seat = RosterSeat(roster, {"session", self->state.setup.workflow_id + "/" + self->state.spec().name,
                                           self->state.wiring().now_us(), self->address()});
  }
  return {
      [=](persisted_atom, uint64_t ticket, bool ok, const storage::AppendReceipt&, const std::string& error,
          uint8_t code) {
        if (ok) {
          self->state.pipeline.done(ticket);
        } else {
          self->quit(to_caf(Error{static_cast<Errc>(code), error}));
        }
      },
      [=](start_atom) {
        if (self->state.model().state == SessionState::WAITING) creating(self, 1);
      },
      [=](finished_atom, bool failed, const std::string& task, const std::string& reason, const std::string& details) {
        if (!failed) {
          decide(self, SessionEvent::TASKS_DONE, [](Body b) { b.setSessionTasksDone(); });
          return;
        }
        decide(self, SessionEvent::TASK_FAILED, [&](Body b) {
          auto f = b.initSessionTaskFailed();
          f.setTaskName(task);
          auto failure = f.initFailure();
          failure.setReason(reason);
          failure.setDetails(details);
        });
      },
      [=](stop_atom, const std::string& why) {
        decide(self, SessionEvent::CANCEL, [&](Body b) { b.initSessionCancelled().setText(why); });
      },
      [=](lost_atom, const std::string& shard, const std::string& why) {
        if (shard == self->state.model().worker) worker_lost(self, shard, why);
      },
      [=](drain_atom, const std::string& shard, bool immediate) {
        if (shard != self->state.model().worker) return;
        decide(self, immediate ? SessionEvent::WORKER_DRAINED_NOW : SessionEvent::WORKER_DRAINED, [&](Body b) {
          auto d = b.initSessionWorkerDrained();
          d.setWorkerShard(shard);
          d.setImmediate(immediate);
        });
      },
      [=](recover_atom) { recover(self); },
      [=](timeout_atom, uint8_t timer, uint64_t generation) { on_timer(self, timer, generation); },
      [=](describe_atom) { return self->state.model().canonical(); },
      [=](probe_atom) {
        auto probe = std::make_shared<ActorProbe>(
            probe_session(self->state.setup.model, self->state.spec(), self->state.pipeline.waiting()));
        probe->mailbox = mailbox_depth(self);
        return ProbeAnswer(std::move(probe));
      },
  };
}

}  // namespace

session_actor spawn_session(caf::local_actor* parent, SessionSetup setup) {
  // Linked like its workflow's task actors: one that fails (its history could not be written)
  // fail-stops the workflow, and a workflow that ends takes it along.
  return parent->spawn<caf::linked>(session_behavior, std::move(setup));
}

}  // namespace troupe::actors
