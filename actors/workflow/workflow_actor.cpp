// The workflow actor. A message becomes one machine event; its actions may add events to the
// same batch (tasks scheduled, a verdict, the finalisation), which is applied to the model as
// it is built, persisted as one atomic append, and followed by its effects once durable.
#include "actors/workflow/workflow_actor.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/invocation_id.hpp"
#include "actors/meters.hpp"
#include "actors/system/replay.hpp"
#include "actors/task/task_actor.hpp"
#include "actors/task/task_deadlines.hpp"
#include "actors/workflow/workflow_actor_state.hpp"
#include "actors/workflow/workflow_probe.hpp"
#include "schema/node_log.hpp"

namespace troupe::actors {
namespace {

using namespace workflow_detail;
using Body = schema::EventBody::Builder;
using Reply = std::shared_ptr<caf::typed_response_promise<std::string>>;

/// Where the workflow counts for the node's metrics; nullptr: nowhere.
SchedulerMeters* meters_of(const WorkflowActorState& st) { return st.setup.wiring->meters.get(); }

const NodeLog& log_of(const WorkflowActorState& st) { return log_or_none(st.setup.wiring->log); }

/// The node's log line of a workflow's start, once its submission is durable.
void log_started(const WorkflowActorState& st) {
  const NodeLog& log = log_of(st);
  if (!log.enabled(LogLevel::INFO)) return;
  const std::string& run_from = st.setup.run_from;
  log.info("workflow started", {{"workflow", st.model.id},
                 {"definition", st.model.spec->name},
                 {"tasks", st.model.spec->tasks.size()},
                 {"sessions", st.model.spec->sessions.size()},
                 {"run_from", run_from.empty() ? std::string_view("start") : std::string_view(run_from)}});
}

/// A client request's promise, kept among the replies until it is answered.
Reply new_reply(Self self) {
  auto reply = std::make_shared<caf::typed_response_promise<std::string>>(self->make_response_promise<std::string>());
  self->state.replies.push_back(reply);
  return reply;
}

/// Ends the actor, once every request passed on to a task has been answered.
void quit_when_answered(Self self) {
  self->state.ending = true;
  if (self->state.asks > 0) {
    self->state.quit_after_asks = true;
  } else {
    self->quit();
  }
}

/// Asks `task` `atom` with `report` on behalf of `promise`'s requester and passes its answer
/// back; `refused` turns a task that ended meanwhile into the answer.
template <class Atom, class Refused>
void ask_task(Self self, const task_actor& task, Atom atom, TaskReport report, caf::typed_response_promise<bool> promise,
              Refused refused) {
  ++self->state.asks;
  auto answered = [self] {
    auto& st = self->state;
    if (--st.asks == 0 && st.quit_after_asks && st.model.finalized) self->quit();
  };
  self->request(task, caf::infinite, atom, std::move(report))
      .then(
          [promise, answered](bool done) mutable {
            promise.deliver(done);
            answered();
          },
          [promise, answered, refused](const caf::error& e) mutable {
            promise.deliver(refused(e));
            answered();
          });
}

/// A decision being built: the events of one atomic append and what to do once it is durable.
struct Batch {
  EventBatch events;
  /// Run once the batch is durable, in order.
  std::vector<std::function<void()>> effects;
  /// Run as soon as the batch has been handed to the store: what only leads to more appends
  /// of this history, which the store's group commit orders after this batch (see commit()).
  std::vector<std::function<void()>> eager;
};

WorkflowOutcome outcome_of(const WorkflowActorState& st) {
  WorkflowOutcome outcome{std::string(WorkflowMachineTraits::name(st.model.state)), st.model.failure_reason, {}};
  for (const auto& [index, result] : st.outputs) {
    // A rerun resets what it runs again: only what still stands is an output.
    if (st.model.graph->state(index) == NodeState::SUCCEEDED) {
      outcome.outputs.push_back(TaskOutput{st.model.spec->tasks[index].name, result});
    }
  }
  return outcome;
}

void fail_stop(Self self, const caf::error& error);

/// The index record of an open workflow, with its current state: written with its submission,
/// by a rerun, and with each event that changes its state (see decide()).
storage::WorkflowRecord open_record(const WorkflowModel& model) {
  return storage::WorkflowRecord{storage::WorkflowStatus::OPEN, model.spec->name, "", model.submitted_us, 0, "",
                                 std::string(WorkflowMachineTraits::name(model.state))};
}

/// Adds an event to `batch` and applies it to the model. False (and the actor fail-stops) if
/// the model refuses what the table allowed: a bug.
bool add_event(Self self, Batch& batch, storage::NewEvent event) {
  NewEventReader reader(event);
  if (auto applied = self->state.model.apply(reader.view()); !applied) {
    fail_stop(self, to_caf(fail(Errc::INTERNAL, applied.error().message)));
    return false;
  }
  batch.events.events.push_back(std::move(event));
  return true;
}

template <class Fill>
storage::NewEvent workflow_event(Self self, Fill&& fill) {
  return make_event(storage::ActorKind::WORKFLOW, self->state.model.id, 0,
                    self->state.setup.wiring->now_us(), std::forward<Fill>(fill));
}

/// The model task `index` has now: its dormant one (taken out), or a fresh one.
TaskModel take_model(WorkflowActorState& st, uint32_t index) {
  if (auto it = st.dormant.find(index); it != st.dormant.end()) {
    TaskModel model = std::move(it->second);
    st.dormant.erase(it);
    return model;
  }
  TaskModel fresh;
  fresh.name = st.model.spec->tasks[index].name;
  return fresh;
}

/// Applies a task event the workflow records for a task without an actor to its model, and adds
/// it to `batch` (the workflow's own model has no part in it). False (and the actor fail-stops)
/// if the model refuses it: the caller checked it applies, so that is a bug. A finished task's
/// new state is reported as its actor's would have been (Wiring::on_task_end).
bool add_task_event(Self self, Batch& batch, TaskModel& model, storage::NewEvent event) {
  NewEventReader reader(event);
  if (auto applied = model.apply(reader.view()); !applied) {
    fail_stop(self, to_caf(fail(Errc::INTERNAL, applied.error().message)));
    return false;
  }
  batch.events.events.push_back(std::move(event));
  const auto& wiring = *self->state.setup.wiring;
  if (TaskMachine::is_terminal(model.state) && wiring.on_task_end) {
    wiring.on_task_end(self->state.model.id, model.canonical());
  }
  return true;
}

template <class Fill>
storage::NewEvent task_event(Self self, const TaskModel& model, Fill&& fill) {
  return make_event(storage::ActorKind::TASK, model.name, model.attempt, self->state.setup.wiring->now_us(),
                    std::forward<Fill>(fill));
}

bool decide(Self self, Batch& batch, WorkflowEvent event, const std::function<void(Body)>& fill,
            Reply reply = nullptr);

/// A task an operator skipped before it was scheduled, scheduled now: it is recorded
/// FORCED_SUCCESS at once, and finishes as a task that succeeded, with no actor.
bool force_at_schedule(Self self, Batch& batch, uint32_t index, TaskModel model, const std::string& reason) {
  auto& st = self->state;
  const std::string name = model.name;
  if (!add_task_event(self, batch, model,
                      task_event(self, model, [&](Body b) { b.initTaskForcedSuccess().setText(reason); }))) {
    return false;
  }
  st.dormant[index] = std::move(model);
  if (!decide(self, batch, WorkflowEvent::TASK_FINISHED, [&](Body b) {
        auto f = b.initWorkflowTaskFinished();
        f.setTaskName(name);
        f.setOutcome(schema::TaskOutcome::FORCED_SUCCESS);
      })) {
    return false;
  }
  // It may have been its session's last task: the session closes then.
  if (!st.sessions.empty()) tell_sessions(self, index, TaskState::FORCED_SUCCESS, nullptr, false);
  // It ended without ever having an actor to count its end.
  batch.effects.push_back([self] {
    if (auto* meters = meters_of(self->state)) meters->task_ended(TaskState::FORCED_SUCCESS);
  });
  return true;
}

void schedule_ready_tasks(Self self, Batch& batch) {
  auto& st = self->state;
  for (uint32_t index : st.model.graph->ready()) {
    // A task skipped before it was scheduled finishes at once, and what that made ready was
    // scheduled with it: this one may be among them.
    if (st.model.graph->state(index) != NodeState::READY) continue;
    const TaskSpec& task = st.model.spec->tasks[index];
    const bool continues = st.model.retried.count(index) > 0;
    std::optional<std::string> skip;
    if (auto it = st.model.skips.find(index); it != st.model.skips.end()) skip = it->second;
    auto event = make_event(storage::ActorKind::TASK, task.name, 0, st.setup.wiring->now_us(), [&](Body b) {
      auto scheduled = b.initTaskScheduled();
      scheduled.setInput(as_bytes(task.input_json));
      scheduled.setContinuesAttempts(continues);
    });
    TaskModel initial = take_model(st, index);
    {
      NewEventReader reader(event);
      if (auto applied = initial.apply(reader.view()); !applied) {
        fail_stop(self, to_caf(fail(Errc::INTERNAL, applied.error().message)));
        return;
      }
    }
    if (!add_event(self, batch, std::move(event))) return;
    if (skip) {
      if (!force_at_schedule(self, batch, index, std::move(initial), *skip)) return;
      continue;
    }
    batch.eager.push_back([self, index, initial = std::move(initial)]() mutable {
      auto& s = self->state;
      TaskSetup setup{s.model.id, s.model.spec, index, std::move(initial),
                      caf::actor_cast<task_owner_port>(self), s.setup.wiring, s.model.input};
      auto task = spawn_task(self, std::move(setup));
      s.tasks[index] = task;
      self->send(task, start_atom::value);
      if (auto session = s.model.spec->tasks[index].session) {
        if (s.stopped_sessions.count(*session) > 0) {
          never_attempt(self, task, *session);  // its session will run nothing more
        } else {
          session_needed(self, *session);
        }
      }
    });
  }
}

/// EVALUATE: the verdict the graph gives in the current state, as a follow-up event.
void evaluate(Self self, Batch& batch) {
  auto& st = self->state;
  const auto& graph = *st.model.graph;
  const bool quiet = graph.active().empty();
  // A workflow ends only once its sessions have: their envExit comes before its end.
  const auto verdict = st.sessions.empty() ? graph.verdict() : GraphVerdict::IN_PROGRESS;
  auto succeed = [&] { decide(self, batch, WorkflowEvent::SUCCEED, [](Body b) { b.setWorkflowSucceeded(); }); };
  auto failed = [&] {
    decide(self, batch, WorkflowEvent::FAILED, [&](Body b) {
      auto f = b.initWorkflowFailed();
      if (!st.session_failure.empty()) {
        f.setReason(st.session_failure);  // its tasks were stopped because of it
      } else {
        f.setReason(st.model.first_task_failure.empty() ? "a task failed" : st.model.first_task_failure);
      }
    });
  };
  switch (st.model.state) {
    case WorkflowState::RUNNING:
      if (!graph.paused().empty()) {
        // A task paused after a resume overtook its pause: a running workflow has no paused
        // tasks, so it resumes them.
        decide(self, batch, WorkflowEvent::RESUME, [](Body b) { b.setWorkflowResumed(); });
        break;
      }
      if (verdict == GraphVerdict::SUCCEEDED) succeed();
      if (verdict == GraphVerdict::FAILED) failed();
      break;
    case WorkflowState::READY_PAUSE:
      if (!quiet) break;
      if (verdict == GraphVerdict::SUCCEEDED) {
        succeed();
      } else if (verdict == GraphVerdict::FAILED) {
        failed();
      } else {
        decide(self, batch, WorkflowEvent::PAUSED, [](Body b) { b.setWorkflowPaused(); });
      }
      break;
    case WorkflowState::READY_STOP:
      if (quiet && st.sessions.empty()) decide(self, batch, WorkflowEvent::STOPPED, [](Body b) { b.setWorkflowStopped(); });
      break;
    case WorkflowState::PAUSED:
      // A paused task an operator forced to success may have been the last one left.
      if (quiet && verdict == GraphVerdict::SUCCEEDED) succeed();
      if (quiet && verdict == GraphVerdict::FAILED) failed();
      break;
    default:
      break;
  }
}

bool decide(Self self, Batch& batch, WorkflowEvent event, const std::function<void(Body)>& fill,
            Reply reply) {
  auto& st = self->state;
  auto t = WorkflowMachine::transition(st.model.state, event);
  if (!t) {
    if (reply) reply->deliver(to_caf(t.error()));
    return false;
  }
  const std::string reached(WorkflowMachineTraits::name(t->to));
  if (t->ignored) {
    if (reply) batch.effects.push_back([reply, reached] { reply->deliver(reached); });
    return true;
  }
  const auto paused_before = st.model.graph->paused();
  const WorkflowState before = st.model.state;
  if (!add_event(self, batch, workflow_event(self, fill))) return false;
  if (st.model.state != before && !WorkflowMachine::is_terminal(st.model.state)) {
    // The index keeps an open workflow's state, written with the event that changed it (a
    // terminal state is written by CLOSE).
    batch.events.has_record = true;
    batch.events.record = open_record(st.model);
    // A start, a rerun and a close have lines of their own, once durable; a scheduler's
    // restart has one for every workflow it revived, so each revival is a debug line.
    const bool revival = event == WorkflowEvent::FAILOVER || before == WorkflowState::FAILOVER;
    if (revival || (event != WorkflowEvent::START && event != WorkflowEvent::RERUN)) {
      log_of(st).write(revival ? LogLevel::DEBUG : LogLevel::INFO, "workflow state changed",
                       {{"workflow", st.model.id},
                        {"from", WorkflowMachineTraits::name(before)},
                        {"to", WorkflowMachineTraits::name(st.model.state)},
                        {"event", WorkflowMachineTraits::name(event)}});
    }
  }
  for (WorkflowAction action : t->actions) {
    switch (action) {
      case WorkflowAction::PERSIST:
        break;
      case WorkflowAction::START_READY_TASKS:
        schedule_ready_tasks(self, batch);
        break;
      case WorkflowAction::PAUSE_WAITING_TASKS:
        batch.effects.push_back([self] {
          for (auto& [index, task] : self->state.tasks) self->send(task, pause_atom::value);
        });
        break;
      case WorkflowAction::RESUME_PAUSED_TASKS:
        batch.effects.push_back([self, paused_before] {
          for (uint32_t index : paused_before) {
            if (auto it = self->state.tasks.find(index); it != self->state.tasks.end()) {
              self->send(it->second, start_atom::value);
            }
          }
        });
        break;
      case WorkflowAction::KILL_ACTIVE_TASKS:
        batch.effects.push_back([self] {
          const bool immediate = self->state.model.stop_immediate;
          for (uint32_t index : self->state.model.graph->active()) {
            auto it = self->state.tasks.find(index);
            if (it == self->state.tasks.end()) continue;
            if (self->state.model.spec->tasks[index].session) {
              // Its session is cancelled too: if it never ran there, it never will (NEVER_ATTEMPTED).
              self->send(it->second, kill_atom::value, session_atom::value, immediate,
                         std::string(immediate ? "workflow killed" : "workflow stop"));
            } else {
              self->send(it->second, kill_atom::value, immediate);
            }
          }
          for (const auto& [index, session] : self->state.sessions) {
            self->send(session, stop_atom::value, std::string("its workflow was stopped"));
          }
        });
        break;
      case WorkflowAction::EVALUATE:
        evaluate(self, batch);
        break;
      case WorkflowAction::REPLY:
        if (reply) batch.effects.push_back([reply, reached] { reply->deliver(reached); });
        break;
      case WorkflowAction::CLOSE: {
        batch.events.has_record = true;
        batch.events.record = storage::WorkflowRecord{storage::WorkflowStatus::CLOSED, st.model.spec->name,
                                                      "", st.model.submitted_us, st.setup.wiring->now_us(),
                                                      std::string(WorkflowMachineTraits::name(st.model.state)), ""};
        batch.effects.push_back([self, outcome = outcome_of(st), closed_in = t->to] {
          auto& s = self->state;
          if (auto* meters = meters_of(s)) meters->workflow_closed(closed_in);
          if (log_of(s).enabled(LogLevel::INFO)) {
            std::vector<LogField> fields = {
                {"workflow", s.model.id},
                {"definition", s.model.spec->name},
                {"state", WorkflowMachineTraits::name(closed_in)},
                {"duration_ms", (s.setup.wiring->now_us() - s.model.submitted_us) / 1000}};
            if (!outcome.failure_reason.empty()) fields.emplace_back("reason", outcome.failure_reason);
            log_of(s).write(LogLevel::INFO, "workflow closed", fields);
          }
          for (auto& waiter : s.waiters) waiter.deliver(outcome);
          s.waiters.clear();
          for (auto& kill : s.kills) kill->deliver(outcome.state);
          s.kills.clear();
          if (s.setup.closed_to) {
            self->send(s.setup.closed_to, closed_atom::value, s.model.id, outcome, s.model.finalized);
          }
          // Paused task instances stay paused in the history; their actors are not needed.
          for (auto& [index, task] : s.tasks) self->send_exit(task, caf::exit_reason::user_shutdown);
          s.tasks.clear();
          // A rerun accepted while the close was being written keeps the workflow going.
          if (!s.model.finalized) return;
          if (s.setup.wiring->on_workflow_end) s.setup.wiring->on_workflow_end(s.model.id, s.model.canonical());
          quit_when_answered(self);
        });
        break;
      }
    }
  }
  if (WorkflowMachine::is_terminal(t->to) && event != WorkflowEvent::FINALIZE) {
    decide(self, batch, WorkflowEvent::FINALIZE, [](Body b) { b.setWorkflowFinalized(); });
  }
  return true;
}

/// The history could not be written: nothing more may take effect. Every request still
/// waiting is answered with the error (CAF 0.17 would leave them waiting), then the actor ends.
void fail_stop(Self self, const caf::error& error) {
  auto& st = self->state;
  for (auto& reply : st.replies) {
    if (reply->pending()) reply->deliver(error);
  }
  st.replies.clear();
  for (auto& reply : st.command_replies) {
    if (reply->pending()) reply->deliver(error);
  }
  st.command_replies.clear();
  for (auto& waiter : st.waiters) waiter.deliver(error);
  st.waiters.clear();
  if (st.passivating) st.passivating->promise.deliver(error);
  st.passivating.reset();
  self->quit(error);
}

/// Something happened to the workflow while it was passivating: it stays, and so do its tasks.
/// Runs first in every handler that may decide an event or send to a task, so the thaw reaches
/// each task before anything else the workflow sends it.
void call_off_passivation(Self self) {
  auto& st = self->state;
  if (!st.passivating) return;
  st.passivating->promise.deliver(
      to_caf(fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + st.model.id + "' became busy while passivating")));
  st.passivating.reset();
  for (auto& [index, task] : st.tasks) self->send(task, thaw_atom::value);
}

/// Whether nothing of the workflow itself runs in the scheduler (its tasks decide for themselves).
bool may_passivate(const WorkflowActorState& st) {
  if (st.model.state != WorkflowState::RUNNING && st.model.state != WorkflowState::PAUSED) return false;
  if (st.model.finalized || st.adopted_closed || st.passivating) return false;
  if (st.pipeline.waiting() > 0 || !st.waiters.empty() || st.asks > 0) return false;
  if (!st.sessions.empty()) return false;  // a session's actor has no history to wake from yet
  if (std::any_of(st.replies.begin(), st.replies.end(), [](const auto& r) { return r->pending(); })) return false;
  if (std::any_of(st.command_replies.begin(), st.command_replies.end(), [](const auto& r) { return r->pending(); })) {
    return false;
  }
  // Every task the graph counts as active (or paused) has its actor: none is being created.
  for (uint32_t index : st.model.graph->active()) {
    if (!st.tasks.count(index)) return false;
  }
  return true;
}

/// Every task agreed: if the workflow did not move meanwhile, it and its tasks end, and the
/// directory learns when to wake it.
void complete_passivation(Self self) {
  auto& st = self->state;
  if (st.model.applied != st.passivating->applied || st.pipeline.waiting() > 0) {
    call_off_passivation(self);
    return;
  }
  st.passivating->promise.deliver(st.passivating->due_us);
  st.passivating.reset();
  st.ending = true;
  for (auto& [index, task] : st.tasks) self->send_exit(task, caf::exit_reason::user_shutdown);
  st.tasks.clear();
  self->quit();
}

caf::result<int64_t> passivate(Self self, const task_port& router) {
  auto& st = self->state;
  if (!may_passivate(st)) {
    return to_caf(fail(Errc::NOT_ALLOWED_IN_STATE, "workflow '" + st.model.id + "' is busy"));
  }
  auto promise = self->make_response_promise<int64_t>();
  const uint64_t round = ++st.passivation_rounds;
  st.passivating = WorkflowActorState::Passivation{promise, st.tasks.size(), 0, st.model.applied, round};
  if (st.tasks.empty()) {
    complete_passivation(self);
    return promise;
  }
  for (auto& [index, task] : st.tasks) {
    self->request(task, caf::infinite, passivate_atom::value, router)
        .then(
            [self, round](int64_t due_us) {
              auto& p = self->state.passivating;
              if (!p || p->round != round) return;
              if (due_us != 0 && (p->due_us == 0 || due_us < p->due_us)) p->due_us = due_us;
              if (--p->waiting == 0) complete_passivation(self);
            },
            [self, round](const caf::error&) {
              auto& p = self->state.passivating;
              if (p && p->round == round) call_off_passivation(self);
            });
  }
  return promise;
}

/// The live task holding `invocation_id`, if any.
std::optional<task_actor> task_of_invocation(const WorkflowActorState& st, const std::string& invocation_id) {
  auto parts = parse_invocation_id(invocation_id);
  if (!parts || parts->workflow_id != st.model.id) return std::nullopt;
  auto index = st.model.spec->find_task(parts->task_name);
  if (!index) return std::nullopt;
  auto it = st.tasks.find(*index);
  if (it == st.tasks.end()) return std::nullopt;
  return it->second;
}

/// Persists the batch, then runs its effects in order.
///
/// Its eager effects run once the batch is handed to the store, before it is durable: a
/// scheduled task's actor starts at once. That is safe because all it can do before the
/// batch is durable is append to the same history, and the store commits appends in the order
/// it was handed them, one group at a time: the task's events are never durable without this
/// batch, and nothing the task lets out of the scheduler (a runTask, a reply) goes before its
/// own events are durable. The task then need not wait a sync for the batch that scheduled it.
void commit(Self self, Batch batch) {
  auto& st = self->state;
  auto effects = [fns = std::move(batch.effects)] {
    for (const auto& fn : fns) fn();
  };
  const uint64_t ticket = st.pipeline.open(std::move(effects));
  if (batch.events.events.empty()) {
    st.pipeline.done(ticket);
  } else {
    st.setup.wiring->writer.append(caf::actor_cast<persisted_port>(self), st.model.id, std::move(batch.events), ticket);
  }
  for (const auto& fn : batch.eager) fn();
}

/// A client request: decide `event` and reply the state it leads to once durable.
caf::result<std::string> request_event(Self self, WorkflowEvent event,
                                       const std::function<void(Body)>& fill) {
  auto reply = new_reply(self);
  Batch batch;
  if (decide(self, batch, event, fill, reply)) commit(self, std::move(batch));
  return *reply;
}

schema::TaskOutcome wire_outcome(TaskState state) {
  switch (state) {
    case TaskState::SUCCESS: return schema::TaskOutcome::SUCCEEDED;
    case TaskState::FORCED_SUCCESS: return schema::TaskOutcome::FORCED_SUCCESS;
    case TaskState::KILLED: return schema::TaskOutcome::KILLED;
    case TaskState::PAUSED: return schema::TaskOutcome::PAUSED;
    default: return schema::TaskOutcome::FAILED;
  }
}

/// Takes over a replayed workflow's model, and its tasks' (dormant until given actors).
void adopt(Self self, const ReplayedWorkflow& replayed) {
  auto& st = self->state;
  st.model = replayed.workflow;
  st.model.definitions = st.setup.wiring->definitions.get();
  for (const auto& [name, task] : replayed.tasks) {
    auto index = st.model.spec->find_task(name);
    if (!index) continue;
    st.dormant[*index] = task;
    if (st.model.graph->is_final(*index) && TaskMachine::is_success(task.state)) st.outputs[*index] = task.result;
  }
}

/// A revived workflow: FAILOVER, reconcile, recover tasks, return to the prior state. One woken
/// from passivation only gets its task actors back.
void revive(Self self, const ReplayedWorkflow& replayed) {
  auto& st = self->state;
  adopt(self, replayed);
  const bool awakened = st.setup.awakened;
  // (A passivated workflow had no session under way; what its sessions left still counts.)
  std::function<void()> carry_on_sessions = revive_sessions(self, replayed);
  const WorkflowState prior = st.model.state;
  Batch batch;
  if (!awakened && !decide(self, batch, WorkflowEvent::FAILOVER, [](Body b) {
        b.initWorkflowFailover().setReason("the scheduler restarted");
      })) {
    return;
  }
  // Tasks the graph still counts active but whose own history ended (the workflow had not
  // recorded it before the restart) finish now; the others get actors again.
  std::vector<std::pair<uint32_t, TaskModel>> revived;
  auto record_finished = [&](const std::string& name, const TaskModel& task) {
    decide(self, batch, WorkflowEvent::TASK_FINISHED, [&](Body b) {
      auto f = b.initWorkflowTaskFinished();
      f.setTaskName(name);
      f.setOutcome(wire_outcome(task.state));
      f.setDetail(task.failure_message());
    });
  };
  for (uint32_t index : st.model.graph->active()) {
    const auto& name = st.model.spec->tasks[index].name;
    auto it = replayed.tasks.find(name);
    if (it == replayed.tasks.end()) continue;
    const TaskModel& task = it->second;
    if (TaskMachine::is_terminal(task.state) || task.state == TaskState::PAUSED) {
      if (task.state == TaskState::PAUSED) revived.emplace_back(index, task);
      record_finished(name, task);
    } else {
      revived.emplace_back(index, task);
    }
  }
  for (uint32_t index : st.model.graph->paused()) {
    const auto& name = st.model.spec->tasks[index].name;
    auto it = replayed.tasks.find(name);
    if (it == replayed.tasks.end()) continue;
    const TaskModel& task = it->second;
    if (TaskMachine::is_terminal(task.state)) {
      record_finished(name, task);  // ended while paused (killed, skipped), before the workflow recorded it
    } else if (std::none_of(revived.begin(), revived.end(), [&](auto& r) { return r.first == index; })) {
      revived.emplace_back(index, task);
    }
  }
  for (const auto& [index, model] : revived) st.dormant.erase(index);
  if (carry_on_sessions) batch.effects.push_back(std::move(carry_on_sessions));
  batch.effects.push_back([self, awakened, revived = std::move(revived)]() mutable {
    auto& s = self->state;
    for (auto& [index, model] : revived) {
      TaskSetup setup{s.model.id, s.model.spec, index, std::move(model),
                      caf::actor_cast<task_owner_port>(self), s.setup.wiring, s.model.input};
      auto task = spawn_task(self, std::move(setup));
      s.tasks[index] = task;
      if (awakened) {
        self->send(task, awaken_atom::value);
      } else {
        self->send(task, recover_atom::value);
      }
      // Its session failed: it was being ended, without running, when the scheduler stopped.
      if (auto session = s.model.spec->tasks[index].session; session && s.stopped_sessions.count(*session) > 0) {
        never_attempt(self, task, *session);
      }
      // Its session's rerun was ending it, to run it again after what it depends on.
      if (auto session = s.model.spec->tasks[index].session; session) {
        auto rerun = s.model.session_reruns.find(*session);
        if (rerun != s.model.session_reruns.end() && rerun->second.ending.count(index)) {
          end_for_rerun(self, task, index, *session);
        }
      }
    }
  });
  if (awakened) {
    // Passivation recorded nothing: the workflow is where its history left it.
    commit(self, std::move(batch));
    return;
  }
  switch (prior) {
    case WorkflowState::READY_PAUSE:
    case WorkflowState::PAUSED:
      decide(self, batch, WorkflowEvent::PAUSE, [](Body b) { b.setWorkflowPauseRequested(); });
      break;
    case WorkflowState::READY_STOP:
      decide(self, batch, WorkflowEvent::STOP, [&](Body b) {
        auto reason = b.initWorkflowStopRequested();
        reason.setText("stop requested before the restart");
        reason.setImmediate(st.model.stop_immediate);
      });
      break;
    default:
      decide(self, batch, WorkflowEvent::START, [](Body b) { b.setWorkflowStarted(); });
      break;
  }
  commit(self, std::move(batch));
}

// --- an operator's task commands --------------------------------------------------------

using CommandReply = std::shared_ptr<caf::typed_response_promise<TaskCommandOutcome>>;

WorkflowEvent operation_of(TaskCommandKind kind) {
  switch (kind) {
    case TaskCommandKind::RETRY: return WorkflowEvent::RETRY_TASK;
    case TaskCommandKind::SKIP: return WorkflowEvent::SKIP_TASK;
    case TaskCommandKind::UPDATE: return WorkflowEvent::UPDATE_TASK;
  }
  return WorkflowEvent::UPDATE_TASK;  // not reached: operate() refuses other values first
}

/// How task `index` reads to an operator: its model's state, or WAITING before it is scheduled.
std::string task_state_of(const WorkflowActorState& st, uint32_t index) {
  if (st.model.graph->state(index) == NodeState::SUCCEEDED) {
    auto it = st.dormant.find(index);
    if (it != st.dormant.end() && it->second.state == TaskState::FORCED_SUCCESS) return "FORCED_SUCCESS";
    return "SUCCESS";
  }
  if (st.model.graph->state(index) == NodeState::ACTIVE) return "SUBMITTED";  // scheduled by this command
  auto it = st.dormant.find(index);
  if (it == st.dormant.end() || !it->second.scheduled) return "WAITING";
  const NodeState node = st.model.graph->state(index);
  if (node == NodeState::WAITING || node == NodeState::READY || node == NodeState::BLOCKED) return "WAITING";
  return std::string(TaskMachineTraits::name(it->second.state));
}

/// A finished workflow adopted for commands (and not reopened by one) ends once it has none
/// left to answer.
void end_adopted_when_idle(Self self) {
  auto& st = self->state;
  if (!st.adopted_closed) return;
  auto pending = [](const auto& r) { return r->pending(); };
  if (std::any_of(st.command_replies.begin(), st.command_replies.end(), pending)) return;
  if (std::any_of(st.replies.begin(), st.replies.end(), pending)) return;
  quit_when_answered(self);
}

/// Answers `reply` once `batch` is durable with the states it leads to, ahead of its other
/// effects (a workflow that closes again at once ends with them).
void answer_command(Self self, Batch& batch, const CommandReply& reply, uint32_t index) {
  auto& st = self->state;
  TaskCommandOutcome outcome{std::string(WorkflowMachineTraits::name(st.model.state)), task_state_of(st, index)};
  batch.effects.insert(batch.effects.begin(), [self, reply, outcome] {
    reply->deliver(outcome);
    end_adopted_when_idle(self);
  });
}

/// A command whose decision the model refused after task_for accepted it: a bug, which
/// fail-stopped the actor (and answered) unless the table refused.
void refused_after_check(const CommandReply& reply, WorkflowState state) {
  if (!reply->pending()) return;
  reply->deliver(to_caf(fail(Errc::INTERNAL, "the command was refused in state " +
                                                 std::string(WorkflowMachineTraits::name(state)))));
}

/// A finished workflow a command reopens: its index record is open again (a verdict in the
/// same batch that closes it again writes its own).
void reopen_if_closed(WorkflowActorState& st, Batch& batch) {
  // What runs again runs in new instances of its sessions.
  st.stopped_sessions.clear();
  st.session_failure.clear();
  if (!WorkflowMachine::is_terminal(st.model.state)) return;
  batch.events.has_record = true;
  batch.events.record = open_record(st.model);
  st.adopted_closed = false;
}

/// RETRY_TASK of a task that failed or was killed: it waits again, and is scheduled as a retry.
void retry_task(Self self, uint32_t index, const CommandReply& reply) {
  auto& st = self->state;
  Batch batch;
  reopen_if_closed(st, batch);
  if (!decide(self, batch, WorkflowEvent::RETRY_TASK,
              [&](Body b) { b.initWorkflowTaskRetried().setTaskName(st.model.spec->tasks[index].name); })) {
    return refused_after_check(reply, st.model.state);
  }
  answer_command(self, batch, reply, index);
  commit(self, std::move(batch));
}

/// SKIP_TASK of a task without an actor: one that failed or was killed is recorded
/// FORCED_SUCCESS now, one not scheduled yet when it would be.
void skip_task(Self self, uint32_t index, const std::string& reason, const CommandReply& reply) {
  auto& st = self->state;
  const std::string& name = st.model.spec->tasks[index].name;
  const NodeState node = st.model.graph->state(index);
  Batch batch;
  if (node == NodeState::FAILED || node == NodeState::KILLED) {
    auto it = st.dormant.find(index);
    if (it == st.dormant.end()) {
      reply->deliver(to_caf(fail(Errc::INTERNAL, "task '" + name + "' ended, but its workflow has no record of it")));
      return;
    }
    if (!add_task_event(self, batch, it->second,
                        task_event(self, it->second, [&](Body b) { b.initTaskForcedSuccess().setText(reason); }))) {
      return;
    }
  } else if (auto pending = st.model.skips.find(index); pending != st.model.skips.end()) {
    answer_command(self, batch, reply, index);  // asked before: it stands
    commit(self, std::move(batch));
    return;
  }
  reopen_if_closed(st, batch);
  if (!decide(self, batch, WorkflowEvent::SKIP_TASK, [&](Body b) {
        auto skip = b.initWorkflowTaskSkipped();
        skip.setTaskName(name);
        skip.setReason(reason);
      })) {
    return refused_after_check(reply, st.model.state);
  }
  answer_command(self, batch, reply, index);
  commit(self, std::move(batch));
}

/// UPDATE_TASK of a task without an actor: recorded on its model, for its next instance.
void update_task(Self self, uint32_t index, const TaskOptionsPatch& patch, const CommandReply& reply) {
  auto& st = self->state;
  auto [it, fresh] = st.dormant.try_emplace(index);
  if (fresh) it->second.name = st.model.spec->tasks[index].name;
  TaskModel& model = it->second;
  auto resolved = resolve_patch(model.effective(st.model.spec->tasks[index], true), patch);
  if (!resolved) {
    if (fresh) st.dormant.erase(it);
    reply->deliver(to_caf(resolved.error()));
    end_adopted_when_idle(self);
    return;
  }
  Batch batch;
  if (!add_task_event(self, batch, model,
                      task_event(self, model, [&](Body b) { write_options(b.initTaskOptionsUpdated(), *resolved); }))) {
    return;
  }
  answer_command(self, batch, reply, index);
  commit(self, std::move(batch));
}

void run_command(Self self, const TaskCommand& command, const CommandReply& reply, bool asked_task);

/// A command for a task with an actor: the task decides (a skip or an update), and answers once
/// its event is durable. A task that ended meanwhile answers as one that went down: it told this
/// workflow first, so the command is decided again once what that led to is written, for the
/// task's ended model (once: a task that ended has no actor here any more).
void ask_live_task(Self self, const task_actor& task, const TaskCommand& command, const CommandReply& reply,
                   bool asked_task) {
  ++self->state.asks;
  auto answered = [self] {
    auto& st = self->state;
    if (--st.asks == 0 && st.quit_after_asks && st.model.finalized) self->quit();
  };
  auto on_error = [self, reply, answered, command, asked_task](const caf::error& e) {
    if (e != caf::sec::request_receiver_down) {
      reply->deliver(e);
    } else if (asked_task) {
      reply->deliver(to_caf(fail(Errc::NOT_ALLOWED_IN_STATE, "the task ended as it was asked: ask again")));
    } else {
      // Still counted among the asks until then, so the actor does not end before it answers.
      self->state.pipeline.after_pending([self, reply, answered, command] {
        run_command(self, command, reply, true);
        answered();
      });
      return;
    }
    answered();
  };
  auto on_answer = [self, reply, answered](const std::string& task_state) {
    reply->deliver(TaskCommandOutcome{std::string(WorkflowMachineTraits::name(self->state.model.state)), task_state});
    answered();
  };
  if (command.kind == TaskCommandKind::SKIP) {
    self->request(task, caf::infinite, skip_atom::value, command.reason).then(on_answer, on_error);
  } else {
    self->request(task, caf::infinite, options_atom::value, command.options).then(on_answer, on_error);
  }
}

/// Decides `command` once what was being written is durable (see operate). `asked_task`: a task
/// actor refused it as having ended.
void run_command(Self self, const TaskCommand& command, const CommandReply& reply, bool asked_task) {
  auto& s = self->state;
  if (s.ending) {
    // It closed (or passivated) meanwhile: the directory asks again whatever it finds now.
    reply->deliver(caf::make_error(caf::sec::request_receiver_down));
    return;
  }
  auto refuse = [&](const Error& error) {
    reply->deliver(to_caf(error));
    end_adopted_when_idle(self);
  };
  if (command.kind != TaskCommandKind::RETRY && command.kind != TaskCommandKind::SKIP &&
      command.kind != TaskCommandKind::UPDATE) {
    return refuse(fail(Errc::INVALID_ARGUMENT, "unknown task command " + std::to_string(int(command.kind))));
  }
  const WorkflowEvent operation = operation_of(command.kind);
  auto index = s.model.task_for(operation, command.task);
  if (!index) return refuse(index.error());
  if (auto it = s.tasks.find(*index); it != s.tasks.end()) {
    ask_live_task(self, it->second, command, reply, asked_task);
    return;
  }
  const NodeState node = s.model.graph->state(*index);
  if (node == NodeState::ACTIVE || node == NodeState::PAUSED) {
    return refuse(fail(Errc::INTERNAL, "task '" + command.task + "' is active but has no actor"));
  }
  switch (command.kind) {
    case TaskCommandKind::RETRY: retry_task(self, *index, reply); break;
    case TaskCommandKind::SKIP: skip_task(self, *index, command.reason, reply); break;
    case TaskCommandKind::UPDATE: update_task(self, *index, command.options, reply); break;
  }
}

/// An operator's retry, skip or update of one task (gateway.capnp has the semantics).
caf::result<TaskCommandOutcome> operate(Self self, TaskCommand command) {
  call_off_passivation(self);
  auto& st = self->state;
  auto reply = std::make_shared<caf::typed_response_promise<TaskCommandOutcome>>(
      self->make_response_promise<TaskCommandOutcome>());
  st.command_replies.push_back(reply);
  // After what is being written: a revived workflow's task actors are created by then.
  st.pipeline.after_pending([self, reply, command = std::move(command)] { run_command(self, command, reply, false); });
  return *reply;
}

}  // namespace

workflow_actor::behavior_type workflow_behavior(workflow_actor::stateful_pointer<WorkflowActorState> self,
                                                WorkflowSetup setup) {
  self->state.model.id = setup.id;
  self->state.setup = std::move(setup);
  self->state.model.definitions = self->state.setup.wiring->definitions.get();
  if (const auto& roster = self->state.setup.wiring->roster) {
    self->state.seat = RosterSeat(roster, {"workflow", self->state.model.id, self->state.setup.wiring->now_us(),
                                           self->address()});
  }
  // Task actors are linked: one that ended normally is no news; one that failed (its history
  // could not be written) fail-stops the workflow; so does the directory going away.
  self->set_exit_handler([self](const caf::exit_msg& exit) {
    if (exit.reason) fail_stop(self, exit.reason);
  });
  if (self->state.setup.replayed) {
    auto replayed = std::move(self->state.setup.replayed);
    if (self->state.setup.closed) {
      adopt(self, *replayed);
      self->state.adopted_closed = true;
    } else {
      revive(self, *replayed);
    }
  }
  return {
      [=](persisted_atom, uint64_t ticket, bool ok, const storage::AppendReceipt&, const std::string& error,
          uint8_t code) {
        auto& st = self->state;
        if (!ok) return fail_stop(self, to_caf(Error{static_cast<Errc>(code), error}));
        st.pipeline.done(ticket);
        std::erase_if(st.replies, [](const auto& reply) { return !reply->pending(); });
        std::erase_if(st.command_replies, [](const auto& reply) { return !reply->pending(); });
      },
      [=](start_atom) -> caf::result<std::string> {
        auto& st = self->state;
        auto promise = new_reply(self);
        if (st.model.applied != 0) {
          promise->deliver(to_caf(fail(Errc::ALREADY_EXISTS, "workflow '" + st.model.id + "' has started")));
          return *promise;
        }
        Batch batch;
        auto submitted = workflow_event(self, [&](Body b) {
          auto s = b.initWorkflowSubmitted();
          s.setDefinitionJson(st.setup.definition_json);
          s.setInput(as_bytes(st.setup.input));
          s.setRunFrom(st.setup.run_from);
        });
        NewEventReader reader(submitted);
        if (auto applied = st.model.apply(reader.view()); !applied) {
          promise->deliver(to_caf(applied.error()));
          self->quit();
          return *promise;
        }
        batch.events.events.push_back(std::move(submitted));
        // The submission lives on in the history and the shared definition; drop the copies.
        std::string().swap(st.setup.definition_json);
        std::string().swap(st.setup.input);
        batch.events.has_record = true;
        batch.events.record = open_record(st.model);
        decide(self, batch, WorkflowEvent::START, [](Body b) { b.setWorkflowStarted(); });
        // Acknowledged once the submission is durable, with the state it reached.
        batch.effects.insert(batch.effects.begin(), [self, promise] {
          if (auto* meters = meters_of(self->state)) meters->workflows_started.add();
          log_started(self->state);
          promise->deliver(std::string(WorkflowMachineTraits::name(self->state.model.state)));
        });
        commit(self, std::move(batch));
        return *promise;
      },
      [=](pause_atom) {
        call_off_passivation(self);
        return request_event(self, WorkflowEvent::PAUSE, [](Body b) { b.setWorkflowPauseRequested(); });
      },
      [=](resume_atom) {
        call_off_passivation(self);
        return request_event(self, WorkflowEvent::RESUME, [](Body b) { b.setWorkflowResumed(); });
      },
      [=](stop_atom) {
        call_off_passivation(self);
        return request_event(self, WorkflowEvent::STOP,
                             [](Body b) { b.initWorkflowStopRequested().setText("requested by a client"); });
      },
      [=](complete_atom, const std::string& task_name, TaskReport& report) -> caf::result<bool> {
        call_off_passivation(self);
        auto promise = self->make_response_promise<bool>();
        // After what is being written: a revived workflow's task actors exist only once its
        // failover is durable, and a completion sent meanwhile is for one of them.
        self->state.pipeline.after_pending([self, task_name, report = std::move(report), promise]() mutable {
          auto& st = self->state;
          auto index = st.model.spec->find_task(task_name);
          auto it = index ? st.tasks.find(*index) : st.tasks.end();
          if (it == st.tasks.end()) {
            promise.deliver(to_caf(fail(Errc::NOT_FOUND, "task '" + task_name + "' of workflow '" + st.model.id +
                                                             "' is not running: it ended, or never started")));
            return;
          }
          // Asked, not delegated: a task that ended meanwhile must not bounce the request back
          // to the directory as if this workflow were gone.
          ask_task(self, it->second, complete_atom::value, std::move(report), promise,
                   [task_name, id = st.model.id](const caf::error& e) -> caf::error {
                     if (e == caf::sec::request_receiver_down) {
                       return to_caf(fail(Errc::NOT_FOUND, "task '" + task_name + "' of workflow '" + id +
                                                               "' is not running: it ended"));
                     }
                     return e;
                   });
        });
        return promise;
      },
      [=](kill_atom) -> caf::result<std::string> {
        call_off_passivation(self);
        // A stop already under way is escalated task by task: each active task records its
        // own immediate kill (the workflow's STOP is not recorded twice).
        if (self->state.model.state == WorkflowState::READY_STOP) {
          for (uint32_t index : self->state.model.graph->active()) {
            if (auto it = self->state.tasks.find(index); it != self->state.tasks.end()) {
              self->send(it->second, kill_atom::value, true);
            }
          }
        }
        auto reply = new_reply(self);
        if (auto allowed = WorkflowMachine::transition(self->state.model.state, WorkflowEvent::STOP); !allowed) {
          reply->deliver(to_caf(allowed.error()));
          return *reply;
        }
        const bool closed = WorkflowMachine::is_terminal(self->state.model.state);
        Batch batch;
        const bool decided = decide(self, batch, WorkflowEvent::STOP, [](Body b) {
          auto reason = b.initWorkflowStopRequested();
          reason.setText("killed by a client");
          reason.setImmediate(true);
        });
        if (!decided) return *reply;  // the history failed: fail_stop answered it
        // Not the READY_STOP a stop answers: the close answers once STOPPED is durable.
        if (closed) {
          batch.effects.push_back([reply, state = outcome_of(self->state).state] { reply->deliver(state); });
        } else {
          self->state.kills.push_back(reply);
        }
        commit(self, std::move(batch));
        return *reply;
      },
      [=](finished_atom, uint32_t index, uint8_t raw_state, const std::string& detail,
          const std::shared_ptr<const TaskModel>& ended) {
        call_off_passivation(self);
        auto& st = self->state;
        const auto task_state = static_cast<TaskState>(raw_state);
        if (index >= st.model.spec->tasks.size()) return;
        const auto& name = st.model.spec->tasks[index].name;
        if (TaskMachine::is_terminal(task_state)) st.tasks.erase(index);
        if (TaskMachine::is_success(task_state) && st.model.graph->is_final(index)) st.outputs[index] = detail;
        if (ended) st.dormant[index] = *ended;
        schema::TaskOutcome wire = schema::TaskOutcome::FAILED;
        switch (task_state) {
          case TaskState::SUCCESS: wire = schema::TaskOutcome::SUCCEEDED; break;
          case TaskState::FORCED_SUCCESS: wire = schema::TaskOutcome::FORCED_SUCCESS; break;
          case TaskState::KILLED: wire = schema::TaskOutcome::KILLED; break;
          case TaskState::PAUSED: wire = schema::TaskOutcome::PAUSED; break;
          default: break;
        }
        // Every state a workflow with a task still running can be in takes the task's end:
        // refused, the workflow would wait for it forever, so that is a bug.
        if (auto allowed = WorkflowMachine::transition(st.model.state, WorkflowEvent::TASK_FINISHED); !allowed) {
          return fail_stop(self, to_caf(fail(Errc::INTERNAL, "workflow '" + st.model.id + "' could not take the end of task '" +
                                                                 name + "' (" +
                                                                 std::string(TaskMachineTraits::name(task_state)) +
                                                                 "): " + allowed.error().message)));
        }
        Batch batch;
        if (decide(self, batch, WorkflowEvent::TASK_FINISHED, [&](Body b) {
              auto f = b.initWorkflowTaskFinished();
              f.setTaskName(name);
              f.setOutcome(wire);
              if (wire == schema::TaskOutcome::FAILED || wire == schema::TaskOutcome::KILLED) {
                f.setDetail(detail);
              }
            })) {
          commit(self, std::move(batch));
        }
        const bool rerun_kill = st.rerun_kills.erase(index) > 0;  // no failure: it runs again
        if (!st.sessions.empty()) tell_sessions(self, index, task_state, ended.get(), rerun_kill);
      },
      [=](session_atom, uint32_t index, kill_atom) {
        // Deadline's NEVER_ATTEMPTED: the session will run none of its tasks that have not run.
        // Its worker runs one action at a time and the session's failure ended the one that
        // ran, so each of its tasks still active has yet to start there: each is killed.
        auto& st = self->state;
        if (index >= st.model.spec->sessions.size()) return;
        st.stopped_sessions.insert(index);
        kill_session_tasks(self, index);
      },
      [=](session_atom, uint32_t index, rerun_atom, uint32_t attempt) {
        // Its session was recreated (`attempt`) with rerunAll: what of it succeeded runs again in
        // the new instance, and what of it waits after that waits for it again.
        auto& st = self->state;
        if (index >= st.model.spec->sessions.size() || st.model.session_reruns.count(index) > 0) return;
        if (auto done = st.model.rerun_attempts.find(index); done != st.model.rerun_attempts.end() && done->second >= attempt) {
          return;  // asked again after a restart: recorded already
        }
        auto allowed = WorkflowMachine::transition(st.model.state, WorkflowEvent::RERUN_SESSION);
        if (!allowed || allowed->ignored) return;  // stopping, or over: the session is cancelled
        const SessionRerunPlan plan = plan_session_rerun(st, index);
        if (plan.tasks.empty()) return;
        auto names = [&](capnp::List<capnp::Text>::Builder out, const std::vector<uint32_t>& tasks) {
          for (size_t i = 0; i < tasks.size(); ++i) out.set(static_cast<unsigned>(i), st.model.spec->tasks[tasks[i]].name);
        };
        Batch batch;
        if (!decide(self, batch, WorkflowEvent::RERUN_SESSION, [&](Body b) {
              auto r = b.initWorkflowSessionRerun();
              r.setSession(st.model.spec->sessions[index].name);
              r.setAttempt(attempt);
              names(r.initTasks(static_cast<unsigned>(plan.tasks.size())), plan.tasks);
              names(r.initEnding(static_cast<unsigned>(plan.ending.size())), plan.ending);
            })) {
          return;
        }
        batch.effects.push_back([self, index, ending = plan.ending] {
          for (uint32_t task : ending) {
            if (auto it = self->state.tasks.find(task); it != self->state.tasks.end()) {
              end_for_rerun(self, it->second, task, index);
            }
          }
        });
        commit(self, std::move(batch));
      },
      [=](session_atom, uint32_t index, uint8_t raw_state, const std::string& reason, const std::string& details) {
        auto& st = self->state;
        if (index >= st.model.spec->sessions.size()) return;
        st.sessions.erase(index);
        if (raw_state == static_cast<uint8_t>(SessionState::FAILED)) {
          st.stopped_sessions.insert(index);
          kill_session_tasks(self, index);  // one made ready while it was failing
          // A task's failure fails the workflow in its own words.
          if (st.session_failure.empty() && reason != "TaskFailed") {
            st.session_failure = "session '" + st.model.spec->sessions[index].name + "' failed: " + reason +
                                 (details.empty() ? "" : ": " + details);
          }
        } else if (!session_tasks_over(st, index) && st.stopped_sessions.count(index) == 0) {
          // A task of it became ready while it closed (an operator's retry): a new instance.
          session_needed(self, index);
        }
        Batch batch;
        evaluate(self, batch);
        commit(self, std::move(batch));
      },
      [=](rerun_atom, const std::string& from) -> caf::result<std::string> {
        call_off_passivation(self);
        auto& st = self->state;
        auto reply = new_reply(self);
        if (auto plan = st.model.rerun_plan(from); !plan) {
          reply->deliver(to_caf(plan.error()));
          if (st.adopted_closed) self->quit();
          return *reply;
        }
        st.adopted_closed = false;
        Batch batch;
        if (decide(self, batch, WorkflowEvent::RERUN, [&](Body b) { b.initWorkflowRerun().setRunFrom(from); },
                   reply)) {
          batch.events.has_record = true;
          batch.events.record = open_record(st.model);
          // A new run of the workflow: started as a submission is, once durable.
          batch.effects.insert(batch.effects.begin(), [self, from] {
            if (auto* meters = meters_of(self->state)) meters->workflows_started.add();
            log_of(self->state).info("workflow rerun", {{"workflow", self->state.model.id},
                                                        {"definition", self->state.model.spec->name},
                                                        {"rerun", from.empty() ? std::string_view("what did not succeed") : std::string_view(from)}});
          });
          commit(self, std::move(batch));
        }
        return *reply;
      },
      [=](result_atom) -> caf::result<WorkflowOutcome> {
        call_off_passivation(self);
        auto& st = self->state;
        auto promise = self->make_response_promise<WorkflowOutcome>();
        if (st.model.finalized) {
          promise.deliver(outcome_of(st));
        } else {
          st.waiters.push_back(promise);
        }
        return promise;
      },
      [=](operate_atom, TaskCommand& command) { return operate(self, std::move(command)); },
      [=](describe_atom) { return self->state.model.canonical(); },
      [=](probe_atom) {
        const auto& s = self->state;
        WorkflowActorFacts facts{s.pipeline.waiting(), s.tasks.size(), s.sessions.size(), s.waiters.size(),
                                 s.passivating.has_value()};
        auto probe = std::make_shared<ActorProbe>(probe_workflow(s.model, facts));
        probe->mailbox = mailbox_depth(self);
        return ProbeAnswer(std::move(probe));
      },
      [=](passivate_atom, const task_port& router) { return passivate(self, router); },
      [=](update_atom, TaskReport& report) -> caf::result<bool> {
        call_off_passivation(self);
        auto promise = self->make_response_promise<bool>();
        // After what is being written: a task actor being created (a revived workflow's) is
        // found then.
        self->state.pipeline.after_pending([self, report = std::move(report), promise]() mutable {
          auto task = task_of_invocation(self->state, report.invocation_id);
          if (!task) {
            promise.deliver(true);  // no task holds it any more: its outcome no longer matters
            return;
          }
          // A task that ended meanwhile decided its outcome and made it durable: taken.
          ask_task(self, *task, update_atom::value, std::move(report), promise,
                   [](const caf::error&) { return true; });
        });
        return promise;
      },
  };
}

workflow_actor spawn_workflow(caf::actor_system& system, WorkflowSetup setup) {
  return system.spawn(workflow_behavior, std::move(setup));
}

}  // namespace troupe::actors
