// The task actor. Each message becomes at most one machine event: decide() asks the table,
// builds the history event, applies it to the model, persists it, and queues the table's
// actions as effects that run once the event is durable.
#include "actors/task/task_actor.hpp"

#include <algorithm>
#include <array>

#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/invocation_id.hpp"
#include "actors/meters.hpp"
#include "actors/task/retry_policy.hpp"
#include "actors/system/actor_roster.hpp"
#include "actors/task/task_deadlines.hpp"
#include "actors/task/task_probe.hpp"
#include "schema/limits.hpp"
#include "schema/node_log.hpp"

namespace troupe::actors {

struct TaskActorState {
  static inline const char* name = "task";
  std::string workflow_id;
  std::shared_ptr<const WorkflowSpec> spec;
  uint32_t index = 0;
  TaskModel model;
  task_owner_port owner;
  std::shared_ptr<const Wiring> wiring;
  std::shared_ptr<const std::string> workflow_input;  ///< shared with the workflow; null: {}
  EffectPipeline pipeline;
  std::array<uint64_t, timer_kinds> generation{};
  bool ended = false;
  /// When the current attempt last asked to join its task list, for the schedule-to-start
  /// metric; 0: not since this actor began (a revived or woken task is not measured).
  int64_t queued_us = 0;
  /// Agreed to passivate: the workflow either ends it (passivated) or thaws it. Until then a
  /// timer that fires is kept, not acted on (the workflow wakes for it once passivated).
  bool frozen = false;
  std::vector<std::pair<uint8_t, uint64_t>> kept_timeouts;
  uint64_t thaws = 0;  ///< a passivation answered after a thaw was called off before it froze
  /// The executor sends this invocation's reports to the directory (see passivate).
  bool parked = false;
  /// Asking the executor whether the last attempt's invocation is over (dispatch_when_settled):
  /// busy, so it does not passivate and wake to ask again in a loop.
  bool settling = false;
  /// Revived while its invocation ran: its heartbeat timeout is watched again only once the
  /// worker has re-attached it (its first report), since heartbeats sent while the scheduler
  /// was down, or before the worker found the new one, reached nobody.
  bool reattach_pending = false;
  /// Revived while its invocation ran, with its startToClose deadline passed or too near for
  /// the worker to come back first: the worker may have ended the attempt in time and still
  /// hold the outcome. The timeout then waits (until the recovery window ends) for the worker's
  /// word: an outcome dated before the deadline counts; one dated after, or a report that it
  /// still runs past the deadline, times the attempt out.
  struct HeldDeadline {
    std::string invocation_id;
    int64_t deadline_us = 0;
  };
  std::optional<HeldDeadline> held_deadline;
  /// Revived after a restart, its timers run from the revival, not from the times its history
  /// shows: it passivates only once an event of its own moves those times on.
  std::optional<uint64_t> recovered_at_event;
  /// The definition's task with the options an operator gave (model.options); unset while
  /// there are none. Kept in step with the model by refresh_options.
  std::shared_ptr<const TaskSpec> updated;
  /// Moving to another task list or priority (an update while waiting in its task list): from
  /// the withdrawal until the new list answers, a grant is from the old list and is refused.
  bool moving = false;
  RosterSeat seat;

  /// The task as its current attempt runs: the definition's, with what an operator changed.
  const TaskSpec& task() const { return updated ? *updated : spec->tasks[index]; }
};

/// Brings TaskActorState::updated in step with the model's options.
static void refresh_options(TaskActorState& st) {
  if (!st.model.options) {
    st.updated.reset();
    return;
  }
  TaskSpec now = st.model.effective(st.spec->tasks[st.index], false);
  if (!st.updated || !(*st.updated == now)) st.updated = std::make_shared<const TaskSpec>(std::move(now));
}

/// How long a cancelled invocation may take to stop, and its task waits for the confirmation:
/// the cluster's kill grace for a stop, none for a kill (the task is KILLED at once and a
/// late confirmation or result is ignored).
Duration kill_grace(const TaskActorState& st) {
  return st.model.kill_immediate ? Duration::zero() : st.wiring->kill_grace;
}

namespace {

using Self = task_actor::stateful_pointer<TaskActorState>;
using Body = schema::EventBody::Builder;

schema::TimeoutKind wire_kind(TimerKind kind) {
  switch (kind) {
    case TimerKind::SCHEDULE_TO_START: return schema::TimeoutKind::SCHEDULE_TO_START;
    case TimerKind::START_TO_CLOSE: return schema::TimeoutKind::START_TO_CLOSE;
    case TimerKind::HEARTBEAT: return schema::TimeoutKind::HEARTBEAT;
    default: return schema::TimeoutKind::SCHEDULE_TO_CLOSE;
  }
}

const char* timeout_reason(TimerKind kind) {
  switch (kind) {
    case TimerKind::SCHEDULE_TO_START: return "Timeout:scheduleToStart";
    case TimerKind::START_TO_CLOSE: return "Timeout:startToClose";
    case TimerKind::HEARTBEAT: return "Timeout:heartbeat";
    default: return "Timeout:scheduleToClose";
  }
}

void arm(Self self, TimerKind kind, Duration after) {
  const auto k = static_cast<size_t>(kind);
  const uint64_t generation = ++self->state.generation[k];
  if (after.count() <= 0) {
    // Due now (a kill's zero grace, a backoff that ended during a restart): no timer.
    self->send(self, timeout_atom::value, static_cast<uint8_t>(kind), generation);
    return;
  }
  self->delayed_send(self, after, timeout_atom::value, static_cast<uint8_t>(kind), generation);
}

void disarm(Self self, std::initializer_list<TimerKind> kinds) {
  for (auto kind : kinds) ++self->state.generation[static_cast<size_t>(kind)];
}

/// The session the task runs in (its key), or empty.
std::string session_of(const TaskActorState& st) {
  const auto& session = st.spec->tasks[st.index].session;
  return session ? make_session_key(st.workflow_id, st.spec->sessions[*session].name) : std::string();
}

Invocation make_invocation(Self self) {
  const auto& st = self->state;
  Invocation inv;
  inv.invocation_id = st.model.invocation_id;
  inv.workflow_id = st.workflow_id;
  inv.task_name = st.model.name;
  inv.task_list = st.task().task_list;
  inv.executor = st.model.executor;
  inv.attempt = st.model.attempt;
  // TROUPE_INPUT is the task's own input when its definition gives one, else the workflow's;
  // the workflow's travels a second time only when it differs.
  std::string workflow_input = st.workflow_input && !st.workflow_input->empty() ? *st.workflow_input : "{}";
  if (st.task().has_input) {
    inv.input_json = st.model.input_json;
    inv.workflow_input_json = std::move(workflow_input);
  } else {
    inv.input_json = std::move(workflow_input);
  }
  inv.progress = st.model.progress;
  if (st.task().timeouts.heartbeat) inv.heartbeat_timeout_us = st.task().timeouts.heartbeat->count();
  inv.async_completion = st.task().async_completion;
  inv.fence = st.model.dispatch_fence;
  inv.session_id = session_of(st);
  set_body(inv, st.task().body);
  return inv;
}

void rejoin(Self self);

/// The effects of `t`'s actions, bound to the state after the event was applied.
/// `invocation` and `executor` are what the task held before the event (for CANCEL_INVOCATION).
std::function<void()> effects_of(Self self, const TaskTransition& t, std::string invocation,
                                 std::string executor) {
  return [self, actions = t.actions, invocation = std::move(invocation),
          executor = std::move(executor), to = t.to] {
    auto& st = self->state;
    // A copy: what an effect decides may change the options in force.
    const TimeoutsSpec timeouts = st.task().timeouts;
    const int64_t now = st.wiring->now_us();
    for (TaskAction action : actions) {
      switch (action) {
        case TaskAction::PERSIST:
        case TaskAction::RECORD_PROGRESS:
          break;  // done before the effects run
        case TaskAction::START_TASK_TIMER:
          if (timeouts.schedule_to_close) {
            arm(self, TimerKind::SCHEDULE_TO_CLOSE, *timeouts.schedule_to_close - st.model.elapsed(now));
          }
          break;
        case TaskAction::ENQUEUE:  // the queue itself was joined before the event (join_task_list)
          if (timeouts.schedule_to_start) arm(self, TimerKind::SCHEDULE_TO_START, *timeouts.schedule_to_start);
          break;
        case TaskAction::WITHDRAW:  // done eagerly
          break;
        case TaskAction::SEND:
          self->send(st.wiring->executor, run_atom::value, make_invocation(self),
                     caf::actor_cast<task_port>(self));
          if (timeouts.start_to_close) arm(self, TimerKind::START_TO_CLOSE, *timeouts.start_to_close);
          break;
        case TaskAction::WATCH_HEARTBEAT:
          // A handed-off task has nothing left to heartbeat: its start-to-close still applies.
          if (timeouts.heartbeat && !st.model.awaiting_completion) arm(self, TimerKind::HEARTBEAT, *timeouts.heartbeat);
          break;
        case TaskAction::CANCEL_INVOCATION:
          if (!invocation.empty()) {
            self->send(st.wiring->executor, cancel_atom::value, invocation, executor,
                       int64_t{kill_grace(st).count()});
          }
          break;
        case TaskAction::START_KILL_TIMER:
          arm(self, TimerKind::KILL_GRACE, kill_grace(st));
          break;
        case TaskAction::START_BACKOFF_TIMER:
          arm(self, TimerKind::BACKOFF, Duration(st.model.delay_until_us - now));
          break;
        case TaskAction::STOP_ATTEMPT_TIMERS:
          disarm(self, {TimerKind::SCHEDULE_TO_START, TimerKind::START_TO_CLOSE, TimerKind::HEARTBEAT});
          break;
        case TaskAction::STOP_ALL_TIMERS:
          for (auto& g : st.generation) ++g;
          break;
        case TaskAction::NOTIFY_WORKFLOW:  // done eagerly
          break;
        case TaskAction::REARM_TASK_TIMER:
          if (timeouts.schedule_to_close) {
            arm(self, TimerKind::SCHEDULE_TO_CLOSE, *timeouts.schedule_to_close - st.model.elapsed(now));
          } else {
            disarm(self, {TimerKind::SCHEDULE_TO_CLOSE});
          }
          break;
        case TaskAction::STOP_HEARTBEAT_TIMER:
          disarm(self, {TimerKind::HEARTBEAT});
          break;
        case TaskAction::REJOIN:
          disarm(self, {TimerKind::SCHEDULE_TO_START});
          if (timeouts.schedule_to_start && st.model.state == TaskState::DISPATCHING) {
            arm(self, TimerKind::SCHEDULE_TO_START, *timeouts.schedule_to_start);
          }
          rejoin(self);
          break;
      }
    }
    if (TaskMachine::is_terminal(to) && !st.ended) {
      st.ended = true;
      if (st.wiring->meters) st.wiring->meters->task_ended(to);
      if (st.wiring->on_task_end) st.wiring->on_task_end(st.workflow_id, st.model.canonical());
      self->quit();
    }
  };
}

/// The actions that need not wait for durability, run once the event is handed to the store.
/// Leaving the executor's queue is internal to the scheduler (joining it comes even before
/// the event, see join_task_list: anything it leads to outside, a run on an executor, waits
/// for taskDispatched). Telling the workflow leads only to the workflow's own appends to
/// the same history, which the store commits after this event (it commits in the order it is
/// handed appends), and anything the workflow lets out waits for those: so the next task need
/// not wait a sync for this one's outcome. Timers are not among them: arming one ahead of an
/// earlier event's pending effects could resurrect a timer that event stops.
/// `list` is the task list the task waited in before the event (an update may have changed it).
/// A task that ends without success hands its workflow its model: an operator may retry it,
/// skip it or change its options, which the workflow then records for it. So does one of a
/// session that says rerunAll: a recreated session may run it again (its next instance's
/// invocation ids count on from this one's).
void run_eager(Self self, const TaskTransition& t, const std::string& list) {
  auto& st = self->state;
  for (TaskAction action : t.actions) {
    if (action == TaskAction::NOTIFY_WORKFLOW) {
      std::string detail = TaskMachine::is_success(t.to) ? st.model.result : st.model.failure_message();
      std::shared_ptr<const TaskModel> ended;
      const auto session = st.spec->tasks[st.index].session;
      const bool may_rerun = session && st.spec->sessions[*session].rerun_all;
      if (TaskMachine::is_terminal(t.to) && (!TaskMachine::is_success(t.to) || may_rerun)) {
        ended = std::make_shared<const TaskModel>(st.model);
      }
      self->send(st.owner, finished_atom::value, st.index, static_cast<uint8_t>(t.to), std::move(detail),
                 std::move(ended));
    } else if (action == TaskAction::WITHDRAW) {
      self->send(st.wiring->executor, withdraw_atom::value, caf::actor_cast<task_port>(self), list);
    } else if (action == TaskAction::REJOIN) {
      st.moving = true;
    }
  }
}

/// The attempt `event` belongs to. A dispatch always belongs to one: a task's first
/// DISPATCHED can also be its start (with no taskDispatching before it), which makes it
/// attempt 1.
uint32_t attempt_of(const TaskModel& model, TaskEvent event) {
  if (event != TaskEvent::DISPATCHED) return model.attempt;
  const bool starts = model.state == TaskState::SUBMITTED || model.state == TaskState::PAUSED;
  return starts ? model.starting_attempt() : std::max<uint32_t>(model.attempt, 1);
}

/// The latencies `event` ends, for the node's metrics (persisted or not: the node stops if it
/// is not). `before` and `dispatched_us` are the model's before the event.
void measure(TaskActorState& st, TaskEvent event, TaskState before, int64_t dispatched_us, int64_t now) {
  auto since = [now](int64_t then) { return static_cast<uint64_t>(std::max<int64_t>(0, now - then)); };
  if (event == TaskEvent::DISPATCHED && st.queued_us > 0) {
    st.wiring->meters->schedule_to_start_us.observe(since(st.queued_us));
    st.queued_us = 0;
  }
  if (TaskMachine::is_on_executor(before) && !TaskMachine::is_on_executor(st.model.state) && dispatched_us > 0) {
    st.wiring->meters->start_to_close_us.observe(since(dispatched_us));
  }
}

/// What the node's log says of a transition: a failover as a warning, a retry and an end without
/// success as news, every other change only at debug level. `executor` is where the invocation
/// was before the event (a dispatch names its new one in the model).
void log_transition(const TaskActorState& st, TaskEvent event, TaskState before, const std::string& executor) {
  const NodeLog& log = log_or_none(st.wiring->log);
  const TaskState to = st.model.state;
  const bool failed = TaskMachine::is_terminal(to) && !TaskMachine::is_success(to);
  const LogLevel level = event == TaskEvent::FAILOVER                   ? LogLevel::WARN
                         : event == TaskEvent::RETRY || failed          ? LogLevel::INFO
                                                                        : LogLevel::DEBUG;
  // A heartbeat changes nothing worth a line, even at debug level.
  if (!log.enabled(level) || (level == LogLevel::DEBUG && before == to)) return;
  const std::string_view message = event == TaskEvent::FAILOVER ? "task failed over"
                                   : event == TaskEvent::RETRY  ? "task to be retried"
                                   : failed                     ? "task ended without success"
                                                                : "task state changed";
  std::vector<LogField> fields = {{"workflow", st.workflow_id},
                                  {"task", st.model.name},
                                  {"attempt", st.model.attempt},
                                  {"from", TaskMachineTraits::name(before)},
                                  {"to", TaskMachineTraits::name(to)},
                                  {"event", TaskMachineTraits::name(event)}};
  const std::string& worker = executor.empty() ? st.model.executor : executor;
  if (!worker.empty()) fields.emplace_back("worker", worker);
  // The model keeps an earlier attempt's failure: a kill or a stop has no reason of its own.
  std::string reason;
  if (event == TaskEvent::FAILOVER || event == TaskEvent::RETRY || to == TaskState::FAILURE) {
    reason = st.model.failure_message();
    if (!reason.empty()) fields.emplace_back("reason", reason);
  }
  log.write(level, message, fields);
}

/// Decides `event` with a history body made by `fill`. Returns false when the table refuses
/// it (the caller decides whether that matters).
template <class Fill>
bool decide(Self self, TaskEvent event, Fill&& fill) {
  auto& st = self->state;
  auto t = TaskMachine::transition(st.model.state, event);
  if (!t) return false;
  if (t->ignored) return true;
  const std::string held_invocation = st.model.invocation_id;
  const std::string held_executor = st.model.executor;
  const std::string held_list = st.task().task_list;
  const TaskState before = st.model.state;
  const int64_t dispatched_us = st.model.dispatched_us;
  const int64_t now = st.wiring->now_us();
  auto new_event = make_event(storage::ActorKind::TASK, st.model.name, attempt_of(st.model, event), now,
                              std::forward<Fill>(fill));
  NewEventReader reader(new_event);
  if (auto applied = st.model.apply(reader.view()); !applied) {
    // The table allowed it, so the model must accept it: anything else is a bug.
    self->quit(to_caf(fail(Errc::INTERNAL, applied.error().message)));
    return false;
  }
  refresh_options(st);
  if (st.wiring->meters) measure(st, event, before, dispatched_us, now);
  log_transition(st, event, before, held_executor);
  const uint64_t ticket = st.pipeline.open(effects_of(self, *t, held_invocation, held_executor));
  EventBatch batch;
  batch.events.push_back(std::move(new_event));
  st.wiring->writer.append(caf::actor_cast<persisted_port>(self), st.workflow_id, std::move(batch), ticket);
  run_eager(self, *t, held_list);
  return true;
}

/// The body of taskDispatching: the task joins its task list (START or DISPATCH).
auto dispatching(Self self) {
  return [self](Body b) {
    auto d = b.initTaskDispatching();
    d.setTaskList(self->state.task().task_list);
    d.setPriority(self->state.task().priority);
  };
}

/// DISPATCHED on a slot of `executor_name`: the invocation gets its id here.
bool dispatch_to(Self self, const std::string& executor_name) {
  auto& s = self->state;
  const std::string id = make_invocation_id(s.workflow_id, s.model.name, attempt_of(s.model, TaskEvent::DISPATCHED),
                                            s.model.dispatches + 1);
  // Read now, before the event is durable: a notify the worker answers meanwhile outranks this
  // runTask, which is then refused, as Bistro requires (it never started: dispatched again).
  const Fence fence = s.wiring->fences ? s.wiring->fences->current() : Fence{};
  return decide(self, TaskEvent::DISPATCHED, [&](Body b) {
    auto d = b.initTaskDispatched();
    d.setInvocationId(id);
    d.setWorkerShard(executor_name);
    d.setNotifySequence(fence.sequence);
    d.setSchedulerEpoch(fence.epoch);
  });
}

/// Joins the task's task list and hands `then` the executor whose slot the task holds now, or
/// an empty name: it waits, and a grant comes once a slot is free. Awaited: the task handles
/// nothing else until the answer, so the answer finds the state that asked and a slot it
/// names is always taken. No executor at all is an empty name too: the task waits, and its
/// scheduleToStart timeout applies. A retry asks for a worker other than the one its last
/// attempt failed on, if another can take it.
template <class Then>
void enqueue(Self self, Then then) {
  auto& s = self->state;
  self->request(s.wiring->executor, caf::infinite, enqueue_atom::value, caf::actor_cast<task_port>(self),
                s.task().priority, s.task().task_list, s.model.failed_on, session_of(s))
      .await([then](const std::string& granted) mutable { then(granted); },
             [then](const caf::error&) mutable { then(std::string()); });
}

/// START or DISPATCH: the task joins its task list, and is DISPATCHED at once if a slot was
/// free. Only a task that has to wait records taskDispatching: its history says it waited,
/// and recovery puts it back in the queue.
void join_task_list(Self self, TaskEvent event) {
  auto t = TaskMachine::transition(self->state.model.state, event);
  if (!t || t->ignored) return;
  // A rejoin after an update keeps this: the task has waited since.
  if (self->state.wiring->meters) self->state.queued_us = self->state.wiring->now_us();
  enqueue(self, [self, event](const std::string& granted) {
    if (granted.empty()) {
      decide(self, event, dispatching(self));
    } else {
      dispatch_to(self, granted);
    }
  });
}

/// After an update made while the task waited in its task list: it joins the (new) one again.
/// The table ran WITHDRAW before the update was durable, and grants were refused since.
void rejoin(Self self) {
  if (self->state.model.state != TaskState::DISPATCHING) {
    self->state.moving = false;  // it moved on meanwhile (killed, forced)
    return;
  }
  enqueue(self, [self](const std::string& granted) {
    self->state.moving = false;
    if (!granted.empty()) dispatch_to(self, granted);
  });
}

/// The backoff is over (DISPATCH), a paused task resumes or a retried one starts (START): the
/// next attempt joins its task list once the invocation the last attempt left on its executor is
/// over (at once if there is none, or it ended), so two attempts of the task never run at the
/// same time: one that timed out on a worker that went silent keeps the next waiting until that
/// worker's lease runs out.
void dispatch_when_settled(Self self, TaskEvent event) {
  auto& s = self->state;
  if (s.model.previous_invocation.empty()) {
    join_task_list(self, event);
    return;
  }
  auto go = [self, event, asked_in = s.model.state] {
    self->state.settling = false;
    // Not if it moved meanwhile: a task retried by an operator and paused while it waited must
    // wait for the resume (START applies to PAUSED too).
    if (self->state.model.state != asked_in) return;
    join_task_list(self, event);  // ignored if it no longer applies (killed meanwhile)
  };
  s.settling = true;
  self->request(s.wiring->executor, caf::infinite, settled_atom::value, s.model.previous_invocation,
                s.model.previous_executor)
      .then([go](bool) { go(); }, [go](const caf::error&) { go(); });
}

/// Whether a timer of `kind` still concerns the task in its current state.
bool timer_applies(TimerKind kind, const TaskModel& model) {
  switch (kind) {
    case TimerKind::SCHEDULE_TO_START: return model.state == TaskState::DISPATCHING;
    // A handed-off attempt is still bounded by its startToClose; it has nothing to heartbeat.
    case TimerKind::START_TO_CLOSE: return TaskMachine::is_on_executor(model.state) && !model.kill_requested;
    case TimerKind::HEARTBEAT:
      return TaskMachine::is_on_executor(model.state) && !model.kill_requested && !model.awaiting_completion;
    case TimerKind::BACKOFF: return model.state == TaskState::DELAY_EXECUTION;
    case TimerKind::KILL_GRACE: return TaskMachine::is_on_executor(model.state) && model.kill_requested;
    case TimerKind::SCHEDULE_TO_CLOSE:
      return !TaskMachine::is_terminal(model.state) && model.state != TaskState::PAUSED;
  }
  return false;
}

/// A failure or non-final timeout: retry if the policy allows, else end the task.
void attempt_failed(Self self, const AttemptFailure& failure, std::optional<TimerKind> timeout) {
  auto& st = self->state;
  if (st.model.kill_requested && TaskMachine::is_on_executor(st.model.state)) {
    // A kill is under way: whatever ended the attempt, it ends the task as KILLED, never as a
    // retry that would run it again.
    const std::string invocation = st.model.invocation_id;
    decide(self, TaskEvent::KILLED, [&](Body b) { b.initTaskKilled().setInvocationId(invocation); });
    return;
  }
  // The next attempt's options decide: a change made while this one ran applies to its retry.
  const TaskSpec next = st.model.effective(st.spec->tasks[st.index], true);
  const auto decision = decide_retry(next.retry, next.timeouts, st.model.attempt - st.model.attempt_base,
                                     st.model.elapsed(st.wiring->now_us()), failure);
  const std::string invocation = st.model.invocation_id;
  if (decision.retry) {
    const bool pause_instead = st.model.pause_requested;
    decide(self, TaskEvent::RETRY, [&](Body b) {
      auto r = b.initTaskRetryScheduled();
      r.setNextAttempt(st.model.attempt + 1);
      r.setBackoffUs(decision.backoff.count());
      auto cause = r.initCause();
      cause.setReason(failure.reason);
      cause.setDetails(failure.details);
      cause.setNonRetryable(failure.non_retryable);
    });
    // A pause was asked for while the attempt ran: the next attempt waits for a resume.
    if (pause_instead) decide(self, TaskEvent::PAUSE, [](Body b) { b.setTaskPauseRequested(); });
  } else if (timeout) {
    decide(self, TaskEvent::TIMEOUT, [&](Body b) {
      auto t = b.initTaskTimedOut();
      t.setKind(wire_kind(*timeout));
      t.setInvocationId(invocation);
    });
  } else {
    decide(self, TaskEvent::FAILED, [&](Body b) {
      auto f = b.initTaskFailed();
      f.setInvocationId(invocation);
      auto details = f.initFailure();
      details.setReason(failure.reason);
      details.setDetails(failure.details.empty() ? "not retried: " + decision.why_not
                                                 : failure.details + " (not retried: " +
                                                       decision.why_not + ")");
      details.setNonRetryable(failure.non_retryable);
    });
  }
}

/// How long an invocation that never started waits before it is dispatched again: at once the
/// first time, then doubling from 100 ms up to 5 s, so a worker that keeps refusing is not
/// asked in a tight loop.
Duration never_started_backoff(uint32_t in_a_row) {
  if (in_a_row <= 1) return Duration::zero();
  const auto backoff = std::chrono::milliseconds(100) * (int64_t{1} << std::min<uint32_t>(in_a_row - 2, 6));
  return std::min<Duration>(backoff, std::chrono::seconds(5));
}

/// After a failover of an invocation that never started, or that its worker interrupted to shut
/// down: the same attempt is dispatched again (a retry that keeps the attempt, whatever the retry
/// policy says), or paused if a pause was asked for meanwhile.
void dispatch_again(Self self) {
  auto& st = self->state;
  const bool pause_instead = st.model.pause_requested;
  const bool interrupted = st.model.failover == Loss::INTERRUPTED;
  decide(self, TaskEvent::RETRY, [&](Body b) {
    auto r = b.initTaskRetryScheduled();
    r.setNextAttempt(st.model.attempt);
    r.setBackoffUs(interrupted ? 0 : never_started_backoff(st.model.never_started).count());
    auto cause = r.initCause();
    cause.setReason(interrupted ? "Interrupted" : "Failover");
    cause.setDetails(st.model.failure_details + (interrupted ? " (dispatched again, attempt " : " (it never started: dispatched again, attempt ") +
                     std::to_string(st.model.attempt) + " kept)");
  });
  if (pause_instead) decide(self, TaskEvent::PAUSE, [](Body b) { b.setTaskPauseRequested(); });
}

/// FAILOVER decided: an invocation that never started goes again under the same attempt; any
/// other is a failed attempt, retried or failed per the policy.
void after_failover(Self self) {
  auto& st = self->state;
  if (st.model.failover == Loss::NEVER_STARTED || st.model.failover == Loss::INTERRUPTED) {
    dispatch_again(self);
    return;
  }
  attempt_failed(self, AttemptFailure{"Failover", false, false, st.model.failure_details}, std::nullopt);
}

/// The current invocation was lost with its executor: FAILOVER with what is known of it, then
/// dispatched again or retried (after_failover).
void fail_over(Self self, const std::string& why, Loss loss) {
  auto& s = self->state;
  const std::string lost = s.model.invocation_id;
  const std::string executor = s.model.executor;
  if (s.model.kill_requested) {
    // Nothing runs it any more: the kill is done.
    decide(self, TaskEvent::KILLED, [&](Body b) { b.initTaskKilled().setInvocationId(lost); });
    return;
  }
  // The task knows better than its executor's actor whether the invocation had started.
  if (loss == Loss::MAY_HAVE_STARTED && s.model.state == TaskState::RUNNING) loss = Loss::WHILE_RUNNING;
  // A session's worker was lost: its session fails or moves (re-established or recreated), and
  // what ran there is interrupted, not failed: it runs again in the session under its attempt.
  if ((loss == Loss::MAY_HAVE_STARTED || loss == Loss::WHILE_RUNNING) && !session_of(s).empty()) {
    loss = Loss::INTERRUPTED;
  }
  if (decide(self, TaskEvent::FAILOVER, [&](Body b) {
        auto f = b.initTaskFailover();
        f.setWorkerShard(executor);
        f.setInvocationId(lost);
        f.setReason("invocation " + lost + " on " + executor + " " + std::string(loss_name(loss)) + ": " + why);
        f.setKind(static_cast<schema::FailoverKind>(loss));
      })) {
    after_failover(self);
  }
}

/// The attempt ran out of time (`kind`: any timeout but scheduleToClose). If the task's whole
/// time has run out too, that ends it instead: timers due within moments of each other fire in
/// either order, and the task's own deadline is the one that leaves nothing to retry.
void attempt_timed_out(Self self, TimerKind kind) {
  auto& s = self->state;
  const auto& whole = s.task().timeouts.schedule_to_close;
  if (whole && timer_applies(TimerKind::SCHEDULE_TO_CLOSE, s.model) &&
      s.model.elapsed(s.wiring->now_us()) >= *whole) {
    kind = TimerKind::SCHEDULE_TO_CLOSE;
  }
  attempt_failed(self, AttemptFailure{timeout_reason(kind), false, kind == TimerKind::SCHEDULE_TO_CLOSE, {}}, kind);
}

/// The first report on a revived invocation whose startToClose is held (see HeldDeadline)
/// settles the hold. True if it timed the attempt out, so the report itself counts for nothing.
bool timed_out_after_hold(Self self, const TaskReport& report) {
  auto& s = self->state;
  const int64_t deadline = s.held_deadline->deadline_us;
  s.held_deadline.reset();
  // A loss fails over as it would have; a kill under way ends the task whatever the report.
  if (report.kind == TaskReport::LOST || !timer_applies(TimerKind::START_TO_CLOSE, s.model)) return false;
  const int64_t now = s.wiring->now_us();
  const bool runs = report.kind == TaskReport::STARTED || report.kind == TaskReport::HEARTBEAT;
  const int64_t ended_at = report.ended_at_us != 0 ? std::min(report.ended_at_us, now) : now;
  if ((runs ? now : ended_at) < deadline) {
    if (runs) arm(self, TimerKind::START_TO_CLOSE, Duration(deadline - now));  // the designed deadline again
    return false;
  }
  attempt_timed_out(self, TimerKind::START_TO_CLOSE);
  return true;
}

/// A report from the executor on this task's current invocation.
void on_report(Self self, const TaskReport& report) {
  auto& s = self->state;
  if (report.invocation_id.empty() || report.invocation_id != s.model.invocation_id) {
    return;  // a report on an invocation this task abandoned (retried, timed out, killed)
  }
  if (s.held_deadline && s.held_deadline->invocation_id == report.invocation_id &&
      timed_out_after_hold(self, report)) {
    return;
  }
  if (s.reattach_pending) {
    // The worker has it: from now on it heartbeats to this incarnation.
    s.reattach_pending = false;
    if (s.model.state == TaskState::RUNNING && !s.model.awaiting_completion) {
      arm(self, TimerKind::HEARTBEAT, *s.task().timeouts.heartbeat);
    }
  }
  switch (report.kind) {
    case TaskReport::STARTED:
      decide(self, TaskEvent::RUNNING,
             [&](Body b) { b.initTaskRunning().setInvocationId(report.invocation_id); });
      break;
    case TaskReport::HEARTBEAT:
      decide(self, TaskEvent::HEARTBEAT, [&](Body b) {
        auto h = b.initTaskHeartbeat();
        h.setInvocationId(report.invocation_id);
        h.setProgress(as_bytes(report.payload));
      });
      break;
    case TaskReport::HANDED_OFF:
      decide(self, TaskEvent::HANDED_OFF,
             [&](Body b) { b.initTaskAwaitingCompletion().setInvocationId(report.invocation_id); });
      break;
    case TaskReport::SUCCEEDED:
      if (report.payload.size() > s.wiring->limits.result_bytes) {
        // Recorded, it would travel with every status and result: the attempt fails instead,
        // and is not retried, since another attempt would most likely return as much.
        attempt_failed(self,
                       AttemptFailure{"ResultTooLarge", true, false,
                                      over_limit("the task's result", describe_bytes(report.payload.size()),
                                                 describe_bytes(s.wiring->limits.result_bytes), "result_size",
                                                 "return a reference to large data (a path or URL) instead of the "
                                                 "data, or raise the limit")},
                       std::nullopt);
        break;
      }
      decide(self, TaskEvent::SUCCEEDED, [&](Body b) {
        auto r = b.initTaskSucceeded();
        r.setInvocationId(report.invocation_id);
        r.setResult(as_bytes(report.payload));
      });
      break;
    case TaskReport::FAILED:
      attempt_failed(self,
                     AttemptFailure{report.reason, report.non_retryable, false, report.details},
                     std::nullopt);
      break;
    case TaskReport::CANCELLED:
      if (s.model.kill_requested) {
        decide(self, TaskEvent::KILLED, [&](Body b) {
          auto killed = b.initTaskKilled();
          killed.setInvocationId(report.invocation_id);
          killed.setNeverStarted(report.loss == Loss::NEVER_STARTED);
        });
      } else if (report.loss == Loss::NEVER_STARTED) {
        // Nobody here asked: its worker ended it without running it (a session task that came
        // after its session closed there, for a drain or a shutdown). That is no failure of it.
        fail_over(self, report.details.empty() ? "its worker never started it" : report.details, Loss::NEVER_STARTED);
      } else {
        attempt_failed(self, AttemptFailure{"Cancelled", false, false, {}}, std::nullopt);
      }
      break;
    case TaskReport::LOST:
      fail_over(self, report.details.empty() ? "the executor was lost" : report.details, report.loss);
      break;
    case TaskReport::INTERRUPTED:
      fail_over(self, report.details.empty() ? "its worker shut down before it finished" : report.details,
                Loss::INTERRUPTED);
      break;
  }
}

/// Carries on from a replayed state after a restart: timers armed afresh, an invocation that
/// was on an executor asked back from it.
void recover(Self self) {
  auto& s = self->state;
  s.recovered_at_event = s.model.applied;
  const auto& timeouts = s.task().timeouts;
  const int64_t now = s.wiring->now_us();
  auto rearm_task_timer = [&] {
    if (timeouts.schedule_to_close) {
      arm(self, TimerKind::SCHEDULE_TO_CLOSE, *timeouts.schedule_to_close - s.model.elapsed(now));
    }
  };
  switch (s.model.state) {
    case TaskState::SUBMITTED:
      // Decided here, not sent to itself: a pause the workflow sends right after the
      // recovery must find the task started, not overtake the start. (A retried task whose
      // failed attempt may still be ending on its executor waits for that first.)
      dispatch_when_settled(self, TaskEvent::START);
      break;
    case TaskState::FAILOVER:
      // The restart came between FAILOVER and its retry decision.
      rearm_task_timer();
      after_failover(self);
      break;
    case TaskState::DISPATCHING:
      rearm_task_timer();
      if (timeouts.schedule_to_start) arm(self, TimerKind::SCHEDULE_TO_START, *timeouts.schedule_to_start);
      enqueue(self, [self](const std::string& granted) {
        if (!granted.empty()) dispatch_to(self, granted);
      });
      break;
    case TaskState::DELAY_EXECUTION:
      rearm_task_timer();
      arm(self, TimerKind::BACKOFF, Duration(s.model.delay_until_us - now));
      break;
    case TaskState::DISPATCHED:
    case TaskState::RUNNING: {
      rearm_task_timer();
      if (s.model.awaiting_completion) {
        // Handed off: nothing runs on a worker; its token ends it (or a timeout, a kill).
        // startToClose counts from the dispatch, as without the restart, but a deadline that
        // passed while the scheduler was down, when no completion could reach it, is held for
        // the recovery window: whoever holds the token may try again meanwhile.
        if (timeouts.start_to_close) {
          const int64_t deadline = s.model.dispatched_us + timeouts.start_to_close->count();
          arm(self, TimerKind::START_TO_CLOSE,
              deadline > now ? Duration(deadline - now) : s.wiring->recovery_window);
        }
        if (s.model.kill_requested) arm(self, TimerKind::KILL_GRACE, kill_grace(s));
        break;
      }
      // The invocation may still run on its worker: ask the executor to take it back
      // (Bistro's "unsure if running"); it reports LOST if the worker does not have it.
      // startToClose counts from the recorded dispatch, as it would have without the restart (a
      // designed timeout still fires), but a deadline that passed while nobody could hear the
      // outcome is held for the worker's word (HeldDeadline); the heartbeat timeout counts from
      // the worker's re-attachment.
      if (timeouts.start_to_close) {
        const int64_t deadline = s.model.dispatched_us + timeouts.start_to_close->count();
        const int64_t hold_until = now + s.wiring->recovery_window.count();
        if (deadline < hold_until) {
          s.held_deadline = TaskActorState::HeldDeadline{s.model.invocation_id, deadline};
          arm(self, TimerKind::START_TO_CLOSE, Duration(hold_until - now));
        } else {
          arm(self, TimerKind::START_TO_CLOSE, Duration(deadline - now));
        }
      }
      s.reattach_pending = s.model.state == TaskState::RUNNING && timeouts.heartbeat.has_value();
      if (s.model.kill_requested) arm(self, TimerKind::KILL_GRACE, kill_grace(s));
      self->send(s.wiring->executor, adopt_atom::value, make_invocation(self),
                 caf::actor_cast<task_port>(self));
      if (s.model.kill_requested) {
        self->send(s.wiring->executor, cancel_atom::value, s.model.invocation_id, s.model.executor,
                   int64_t{kill_grace(s).count()});
      }
      break;
    }
    default:
      break;  // paused or finished: nothing to carry on
  }
}

/// Reports on the current invocation come to this actor again, not through the directory.
void unpark(Self self) {
  auto& s = self->state;
  s.parked = false;
  if (!TaskMachine::is_on_executor(s.model.state) || s.model.awaiting_completion) return;
  self->request(s.wiring->executor, caf::infinite, park_atom::value, s.model.invocation_id, s.model.executor,
                caf::actor_cast<task_port>(self))
      .then([](bool) {}, [](const caf::error&) {});  // not held any more: its last report comes round
}

/// Carries on from a replayed state after passivation: nothing was lost, so every timer is armed
/// for the time its history leaves it, and the executor's reports come straight here again.
void awaken(Self self) {
  auto& s = self->state;
  if (!may_passivate(s.model)) {
    recover(self);  // not a state a task passivates in: treat it as a restart
    return;
  }
  const int64_t now = s.wiring->now_us();
  for (const auto& timer : due_timers(s.model, s.task().timeouts, now)) {
    arm(self, timer.kind, Duration(timer.at_us - now));
  }
  unpark(self);
}

/// Asked by its workflow to passivate: agrees (replying when its next timer is due, 0 for none)
/// if nothing of it runs here, after telling the executor where reports go from now on.
caf::result<int64_t> passivate(Self self, const task_port& router) {
  auto& s = self->state;
  auto busy = [&] {
    return to_caf(fail(Errc::NOT_ALLOWED_IN_STATE, "task '" + s.model.name + "' is busy (" +
                                                       std::string(TaskMachineTraits::name(s.model.state)) + ")"));
  };
  if (!may_passivate(s.model) || s.pipeline.waiting() > 0 || s.settling) return busy();
  if (s.recovered_at_event && *s.recovered_at_event == s.model.applied) return busy();
  const bool on_executor = TaskMachine::is_on_executor(s.model.state) && !s.model.awaiting_completion;
  if (!on_executor) {
    s.frozen = true;
    return next_due_us(s.model, s.task().timeouts, s.wiring->now_us());
  }
  auto promise = self->make_response_promise<int64_t>();
  const uint64_t applied = s.model.applied;
  const uint64_t thaws = s.thaws;
  // Reports the executor sent before it parked the invocation arrive ahead of its answer.
  self->request(s.wiring->executor, caf::infinite, park_atom::value, s.model.invocation_id, s.model.executor, router)
      .then(
          [self, promise, applied, thaws](bool parked) mutable {
            auto& st = self->state;
            if (!parked || st.model.applied != applied || st.pipeline.waiting() > 0 || st.thaws != thaws) {
              if (parked) unpark(self);
              promise.deliver(to_caf(fail(Errc::NOT_ALLOWED_IN_STATE, "task '" + st.model.name + "' moved on")));
              return;
            }
            st.parked = true;
            st.frozen = true;
            promise.deliver(next_due_us(st.model, st.task().timeouts, st.wiring->now_us()));
          },
          [promise](const caf::error& e) mutable { promise.deliver(e); });
  return promise;
}

/// The state `promise`'s requester is answered with once what was decided is durable.
caf::result<std::string> answer_when_durable(Self self) {
  auto promise = self->make_response_promise<std::string>();
  self->state.pipeline.after_pending([promise, state = std::string(TaskMachineTraits::name(self->state.model.state))]() mutable {
    promise.deliver(state);
  });
  return promise;
}

/// A task that has ended (or whose end is being written) has told its workflow so, with its
/// model: a command reaching it now is answered as if it had gone down, and the workflow, which
/// has its end by then, records the command on that model. Recorded here instead, it would
/// follow the end the workflow already acts on, and the two would part.
bool has_ended(const TaskActorState& s) { return s.ended || TaskMachine::is_terminal(s.model.state); }

/// An operator's skipTask: FORCED_SUCCESS, unless an attempt is on an executor.
caf::result<std::string> skip(Self self, const std::string& reason) {
  auto& s = self->state;
  if (has_ended(s)) return caf::make_error(caf::sec::request_receiver_down);
  const std::string state(TaskMachineTraits::name(s.model.state));
  if (TaskMachine::is_on_executor(s.model.state)) {
    return to_caf(fail(Errc::NOT_ALLOWED_IN_STATE,
                       "task '" + s.model.name + "' is " + state + " on worker " + s.model.executor + " (attempt " +
                           std::to_string(s.model.attempt) +
                           "): a task on a worker cannot be skipped; wait for its attempt to end, or stop the workflow"));
  }
  if (!decide(self, TaskEvent::FORCE, [&](Body b) { b.initTaskForcedSuccess().setText(reason); })) {
    return to_caf(fail(Errc::NOT_ALLOWED_IN_STATE, "task '" + s.model.name + "' cannot be skipped while " + state));
  }
  return answer_when_durable(self);
}

/// An operator's updateTask: the options the next attempt has, checked as a definition's.
caf::result<std::string> update_options(Self self, const TaskOptionsPatch& patch) {
  auto& s = self->state;
  if (has_ended(s)) return caf::make_error(caf::sec::request_receiver_down);
  if (s.moving) {
    // One move at a time: a slot granted in the list it moves to must be the one its options name.
    return to_caf(fail(Errc::NOT_ALLOWED_IN_STATE, "task '" + s.model.name +
                                                       "' is moving to the task list an update just gave it: "
                                                       "try again once it has"));
  }
  auto resolved = resolve_patch(s.model.effective(s.spec->tasks[s.index], true), patch);
  if (!resolved) return to_caf(resolved.error());
  if (!decide(self, TaskEvent::UPDATE, [&](Body b) { write_options(b.initTaskOptionsUpdated(), *resolved); })) {
    return to_caf(fail(Errc::NOT_ALLOWED_IN_STATE, "task '" + s.model.name + "' cannot be updated while " +
                                                       std::string(TaskMachineTraits::name(s.model.state))));
  }
  return answer_when_durable(self);
}

}  // namespace

task_actor::behavior_type task_behavior(task_actor::stateful_pointer<TaskActorState> self,
                                        TaskSetup setup) {
  auto& st = self->state;
  st.workflow_id = std::move(setup.workflow_id);
  st.spec = std::move(setup.spec);
  st.index = setup.index;
  st.model = std::move(setup.model);
  st.owner = std::move(setup.owner);
  st.wiring = std::move(setup.wiring);
  st.workflow_input = std::move(setup.workflow_input);
  refresh_options(st);
  if (const auto& roster = st.wiring->roster) {
    st.seat = RosterSeat(roster, {"task", st.workflow_id + "/" + st.model.name, st.wiring->now_us(), self->address()});
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
      [=](start_atom) { dispatch_when_settled(self, TaskEvent::START); },
      [=](pause_atom) { decide(self, TaskEvent::PAUSE, [](Body b) { b.setTaskPauseRequested(); }); },
      [=](kill_atom, bool immediate) {
        decide(self, TaskEvent::KILL, [immediate](Body b) {
          auto reason = b.initTaskKillRequested();
          reason.setText(immediate ? "workflow killed" : "workflow stop");
          reason.setImmediate(immediate);
        });
      },
      [=](kill_atom, session_atom, bool immediate, const std::string& why) {
        decide(self, TaskEvent::KILL, [&](Body b) {
          auto reason = b.initTaskKillRequested();
          reason.setText(why);
          reason.setImmediate(immediate);
          reason.setNeverAttempted(true);
        });
      },
      [=](grant_atom, const std::string& executor_name) -> bool {
        if (self->state.model.state != TaskState::DISPATCHING) return false;  // withdrew meanwhile
        if (self->state.moving) return false;  // a slot of the list it left
        return dispatch_to(self, executor_name);
      },
      [=](report_atom, TaskReport& report) { on_report(self, report); },
      [=](update_atom, TaskReport& report) -> caf::result<bool> {
        if (report.invocation_id.empty()) return false;
        if (report.invocation_id != self->state.model.invocation_id) {
          // Not the current invocation: one this task abandoned (retried, timed out, failed
          // over), whose outcome no longer matters, so the sender may forget it.
          return true;
        }
        auto promise = self->make_response_promise<bool>();
        on_report(self, report);
        // Answer once every event the report caused is durable.
        self->state.pipeline.after_pending([promise]() mutable { promise.deliver(true); });
        return promise;
      },
      [=](complete_atom, TaskReport& report) -> caf::result<bool> {
        auto& s = self->state;
        if (report.invocation_id.empty() || report.invocation_id != s.model.invocation_id) {
          return to_caf(fail(Errc::NOT_FOUND, "invocation '" + report.invocation_id + "' of task '" + s.model.name +
                                                  "' is no longer current: it ended, timed out or was retried"));
        }
        if (!s.model.awaiting_completion) {
          return to_caf(fail(Errc::NOT_ALLOWED_IN_STATE,
                             "task '" + s.model.name + "' has not handed off yet: its invocation is still running"));
        }
        auto promise = self->make_response_promise<bool>();
        on_report(self, report);
        self->state.pipeline.after_pending([promise]() mutable { promise.deliver(true); });
        return promise;
      },
      [=](timeout_atom, uint8_t raw_kind, uint64_t generation) {
        auto& s = self->state;
        const auto kind = static_cast<TimerKind>(raw_kind);
        if (raw_kind >= timer_kinds || s.generation[raw_kind] != generation) return;  // disarmed
        if (s.frozen) {
          s.kept_timeouts.emplace_back(raw_kind, generation);
          return;
        }
        // Disarming happens once the event that stops a timer is durable; until then the state
        // already says whether the timer still means anything.
        if (!timer_applies(kind, s.model)) return;
        if (kind == TimerKind::START_TO_CLOSE) s.held_deadline.reset();  // the worker never said
        switch (kind) {
          case TimerKind::SCHEDULE_TO_CLOSE:
            attempt_failed(self, AttemptFailure{timeout_reason(kind), false, true, {}}, kind);
            break;
          case TimerKind::SCHEDULE_TO_START:
          case TimerKind::START_TO_CLOSE:
          case TimerKind::HEARTBEAT:
            attempt_timed_out(self, kind);
            break;
          case TimerKind::BACKOFF:
            dispatch_when_settled(self, TaskEvent::DISPATCH);
            break;
          case TimerKind::KILL_GRACE: {
            const std::string invocation = s.model.invocation_id;
            decide(self, TaskEvent::KILLED, [&](Body b) { b.initTaskKilled().setInvocationId(invocation); });
            break;
          }
        }
      },
      [=](recover_atom) { recover(self); },
      [=](awaken_atom) { awaken(self); },
      [=](passivate_atom, const task_port& router) { return passivate(self, router); },
      [=](thaw_atom) {
        auto& s = self->state;
        s.frozen = false;
        ++s.thaws;
        // A park still on its way is undone by its answer (it sees the thaw).
        if (s.parked) unpark(self);
        for (auto [kind, generation] : s.kept_timeouts) self->send(self, timeout_atom::value, kind, generation);
        s.kept_timeouts.clear();
      },
      [=](skip_atom, const std::string& reason) { return skip(self, reason); },
      [=](options_atom, const TaskOptionsPatch& patch) { return update_options(self, patch); },
      [=](describe_atom) { return self->state.model.canonical(); },
      [=](probe_atom) {
        const auto& s = self->state;
        const auto& session = s.spec->tasks[s.index].session;
        TaskActorFacts facts{s.pipeline.waiting(), s.settling, s.frozen,
                             session ? s.spec->sessions[*session].name : std::string()};
        auto probe = std::make_shared<ActorProbe>(probe_task(s.model, s.task(), facts, s.wiring->now_us()));
        probe->mailbox = mailbox_depth(self);
        return ProbeAnswer(std::move(probe));
      },
  };
}

task_actor spawn_task(caf::local_actor* parent, TaskSetup setup) {
  // Linked: a task instance does not outlive the workflow actor that owns it.
  return parent->spawn<caf::linked>(task_behavior, std::move(setup));
}

task_actor spawn_task(caf::actor_system& system, TaskSetup setup) {
  return system.spawn(task_behavior, std::move(setup));
}

}  // namespace troupe::actors
