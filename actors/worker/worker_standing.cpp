// The worker actor's standing half: the shard's standing table (drains, quarantine) wired to
// timers and to the invocations the worker holds, the shard's record, and the operators' view
// and orders. The health half and the worker protocol are in worker_actor.cpp.
#include <algorithm>
#include <chrono>
#include <utility>

#include "actors/worker/worker_actor_state.hpp"
#include "actors/worker/worker_book.hpp"
#include "actors/worker/worker_orders.hpp"
#include "schema/duration.hpp"
#include "schema/node_log.hpp"

namespace troupe::actors::worker_detail {
namespace {

constexpr size_t remembered_recent = 20;

/// Writes the shard's standing, drain, quarantine and failures to its record (and its status);
/// `recorded` is told when the write is over. False (nothing written, `recorded` never called)
/// without a book, or once a new instance keeps the record.
bool record_standing(Self self, storage::DoneCallback recorded = {}) {
  auto& st = self->state;
  if (!st.setup.book || st.replaced) return false;
  std::vector<storage::WorkerFailureRecord> failures(st.streak.failures().begin(), st.streak.failures().end());
  st.recorded_status = status_of(self);
  return st.setup.book->update(st.setup.info.shard_id, st.setup.info.instance_id, [&](storage::WorkerRecord& record) {
    record.standing = std::string(StandingMachineTraits::name(st.standing));
    record.drain = st.standing == Standing::DRAINING || st.standing == Standing::DRAINED ? st.drain
                                                                                        : storage::WorkerDrainRecord{};
    record.quarantined_until_us = st.standing == Standing::QUARANTINED ? st.quarantined_until_us : 0;
    record.quarantines = st.streak.quarantines();
    record.failures = std::move(failures);
    record.status = st.recorded_status;
  }, std::move(recorded));
}

std::string outcome_name(const TaskReport& report) {
  switch (report.kind) {
    case TaskReport::SUCCEEDED: return "SUCCEEDED";
    case TaskReport::FAILED: return "FAILED (" + report.reason + ")";
    case TaskReport::CANCELLED: return "CANCELLED";
    case TaskReport::LOST: return "LOST";
    case TaskReport::HANDED_OFF: return "HANDED_OFF";
    case TaskReport::INTERRUPTED: return "INTERRUPTED";
    default: return "?";
  }
}

void arm_standing_timer(Self self, WorkerTimer timer, int64_t at_us) {
  auto& st = self->state;
  const auto delay = std::chrono::microseconds(std::max<int64_t>(0, at_us - now_us(self)));
  self->delayed_send(self, delay, wake_atom::value, static_cast<uint8_t>(timer), ++st.standing_timer_generation);
}

/// Stops invocation `id` for a drain: it ends INTERRUPTED and runs again elsewhere under the
/// same attempt.
void interrupt(Self self, const std::string& id) {
  auto& st = self->state;
  st.setup.link->interrupt_task(id, st.setup.kill_grace, "worker " + st.setup.info.shard_id + " is drained");
}

/// Stops everything the worker runs: what it was given, and what it runs that no task has taken
/// back yet after a scheduler restart (its outcome waits for the task that does).
void interrupt_running(Self self) {
  for (const auto& [id, given] : self->state.given) {
    if (!given.ended) interrupt(self, id);
  }
  for (const auto& id : self->state.orphans) interrupt(self, id);
}

/// Whether the drain under way stops what the worker runs rather than waiting for it: an
/// immediate one, or one whose deadline passed (perhaps while the scheduler was down).
bool interrupts_now(Self self) {
  const auto& st = self->state;
  return st.standing == Standing::DRAINING &&
         (st.drain.immediate || (st.drain.deadline_us > 0 && now_us(self) >= st.drain.deadline_us));
}

/// An operator's order, as the standing table takes it (worker_orders.hpp); refused without
/// effect when the worker's standing does not take it.
Result<void> obey(Self self, const WorkerOrder& order) {
  auto& st = self->state;
  auto event = event_of(order);
  if (!event) return event.error();
  if (auto taken = admissible(st.standing, order); !taken) return taken.error();
  apply_to_drain(st.drain, st.standing, order, now_us(self));
  handle(self, *event);
  return ok();
}

}  // namespace

int64_t now_us(Self self) {
  if (self->state.setup.now_us) return self->state.setup.now_us();
  return wall_clock_us();
}

std::string status_of(Self self) {
  auto& st = self->state;
  return std::string(worker_status(st.health, st.standing, st.said_stopped));
}

const NodeLog& log_of(const WorkerActorState& st) { return log_or_none(st.setup.log); }

void log_status(Self self, std::string_view why) {
  auto& st = self->state;
  if (st.replaced) return;  // the shard's new instance speaks for it
  std::string status = status_of(self);
  if (status == st.logged_status) return;
  const bool bad = status == "NOT_RESPONDING";
  log_of(st).write(bad ? LogLevel::WARN : LogLevel::INFO, "worker status changed",
                   {{"worker", st.setup.info.shard_id},
                    {"from", st.logged_status},
                    {"to", status},
                    {"health", HealthMachineTraits::name(st.health)},
                    {"standing", StandingMachineTraits::name(st.standing)},
                    {"why", why}});
  st.logged_status = std::move(status);
}

void record_status(Self self) {
  auto& st = self->state;
  if (!st.setup.book || st.replaced) return;
  std::string status = status_of(self);
  if (status == st.recorded_status) return;
  st.recorded_status = status;
  st.setup.book->set_status(st.setup.info.shard_id, st.setup.info.instance_id, std::move(status));
}

void remember_recent(Self self, const std::string& id, const Given& given, std::string outcome) {
  auto& st = self->state;
  st.recent.push_back({id, given.task_name, given.attempt, std::move(outcome), now_us(self)});
  if (st.recent.size() > remembered_recent) st.recent.pop_front();
}

void count_outcome(Self self, const Given& given, const TaskReport& report) {
  auto& st = self->state;
  remember_recent(self, report.invocation_id, given, outcome_name(report));
  if (st.replaced) return;  // the shard's new instance keeps the streak
  if (report.kind == TaskReport::SUCCEEDED || report.kind == TaskReport::HANDED_OFF) {
    if (st.streak.failures().empty() && st.streak.quarantines() == 0) return;
    st.streak.succeeded();
    record_standing(self);
  } else if (report.kind == TaskReport::FAILED) {
    const bool streak = st.streak.failed({given.task_name, report.reason, now_us(self)}, st.setup.quarantine);
    // A streak that changes the standing is recorded with it; otherwise the failure alone.
    if (!streak || StandingMachine::transition(st.standing, StandingEvent::FAILURE_STREAK).ignored) {
      record_standing(self);
    } else {
      handle(self, StandingEvent::FAILURE_STREAK);
    }
  }
}

void found_running(Self self, const std::string& id) {
  if (interrupts_now(self)) interrupt(self, id);
}

bool runs_nothing(Self self) {
  const auto& st = self->state;
  // Not before the worker said what it runs: its association checks then.
  // A dead instance holds no session any more (the dispatcher frees their slots once its actor
  // has ended).
  const bool holds_sessions = st.sessions_held > 0 && !HealthMachine::is_terminal(st.health);
  return st.health != HealthState::NEW && st.given.empty() && st.orphans.empty() && !holds_sessions;
}

void tell_session_drain(Self self) {
  auto& st = self->state;
  SessionDrain drain = SessionDrain::NONE;
  if (st.standing == Standing::DRAINED || interrupts_now(self)) {
    drain = SessionDrain::NOW;
  } else if (st.standing == Standing::DRAINING) {
    drain = SessionDrain::AFTER_RUNNING_ACTION;
  }
  if (drain == st.session_drain_told) return;
  st.session_drain_told = drain;
  if (st.setup.sessions_draining) st.setup.sessions_draining(drain);
}

void check_idle(Self self) {
  if (runs_nothing(self)) handle(self, StandingEvent::IDLE);
}

void handle(Self self, StandingEvent event) {
  auto& st = self->state;
  const StandingTransition t = StandingMachine::transition(st.standing, event);
  if (t.ignored) return;
  const Standing from = std::exchange(st.standing, t.to);
  // A timer of the standing left behind (a drain's deadline, a quarantine's end) is void.
  if (from != st.standing) ++st.standing_timer_generation;
  bool idle_now = false;
  for (StandingAction action : t.actions) {
    switch (action) {
      case StandingAction::STOP_ASSIGNING: offer_slots(self, false); break;
      case StandingAction::ACCEPT_TASKS:
        if (HealthMachine::accepts_tasks(st.health)) offer_slots(self, true);
        break;
      case StandingAction::INTERRUPT_RUNNING: interrupt_running(self); break;
      case StandingAction::ARM_DRAIN_DEADLINE:
        ++st.standing_timer_generation;  // an earlier drain's deadline is void, with or without a new one
        if (st.drain.deadline_us > 0) arm_standing_timer(self, WorkerTimer::DRAIN_DEADLINE, st.drain.deadline_us);
        break;
      case StandingAction::CHECK_IDLE: idle_now = runs_nothing(self); break;
      case StandingAction::END_DRAIN:
        if (st.drain.exit_when_drained && !HealthMachine::is_leaving(st.health)) {
          st.setup.link->request_stop("drained by an operator");
        }
        // Asked once: a later start of the worker stays up, drained.
        st.drain.exit_when_drained = false;
        break;
      case StandingAction::ARM_QUARANTINE_TIMER: {
        const Duration backoff = st.streak.start_quarantine(st.setup.quarantine);
        st.quarantined_until_us = now_us(self) + std::chrono::duration_cast<std::chrono::microseconds>(backoff).count();
        arm_standing_timer(self, WorkerTimer::QUARANTINE_OVER, st.quarantined_until_us);
        log_of(st).warn("worker quarantined: attempts of different tasks failed there in a row",
                        {{"worker", st.setup.info.shard_id},
                         {"for", format_duration(backoff)},
                         {"failed_attempts", st.streak.failures().size()},
                         {"tasks", st.streak.distinct_tasks()}});
        break;
      }
      case StandingAction::CLEAR_FAILURES: st.streak.clear(); break;
    }
  }
  record_standing(self);
  if (from != st.standing) log_status(self, StandingMachineTraits::name(event));
  tell_session_drain(self);
  if (idle_now) handle(self, StandingEvent::IDLE);
}

/// The shard's standing as its record keeps it: a drained or quarantined worker stays so
/// across its restarts and the scheduler's.
void load_standing(Self self) {
  auto& st = self->state;
  if (!st.setup.book) return;
  auto record = st.setup.book->find(st.setup.info.shard_id);
  if (!record) return;
  st.streak = FailureStreak(record->failures, record->quarantines, st.setup.quarantine);
  st.standing = StandingMachine::parse(record->standing).value_or(Standing::ACTIVE);
  st.drain = record->drain;
  st.quarantined_until_us = record->quarantined_until_us;
  // The registration just wrote the record's status: written again only if this one differs.
  st.recorded_status = record->status;
  if (st.standing == Standing::QUARANTINED) {
    arm_standing_timer(self, WorkerTimer::QUARANTINE_OVER, st.quarantined_until_us);
  } else if (st.standing == Standing::DRAINING && st.drain.deadline_us > 0) {
    arm_standing_timer(self, WorkerTimer::DRAIN_DEADLINE, st.drain.deadline_us);
  }
  tell_session_drain(self);
}

WorkerView view_of(Self self) {
  auto& st = self->state;
  WorkerView view;
  view.shard_id = st.setup.info.shard_id;
  if (st.setup.book) {
    if (auto record = st.setup.book->find(view.shard_id)) view.record = std::move(*record);
  }
  view.live = true;
  view.status = status_of(self);
  view.health = std::string(HealthMachineTraits::name(st.health));
  std::map<std::string, uint32_t> used;
  for (const auto& [id, given] : st.given) {
    view.running.push_back(id);
    ++used[given.task_list];
  }
  for (const auto& [list, slots] : st.setup.info.task_lists) view.task_lists.push_back({list, slots, used[list]});
  view.last_heartbeat_age_us =
      std::chrono::duration_cast<std::chrono::microseconds>(self->clock().now() - st.last_heartbeat).count();
  view.recent.assign(st.recent.begin(), st.recent.end());
  return view;
}

void on_standing_timer(Self self, uint8_t timer, uint64_t generation) {
  auto& s = self->state;
  if (generation != s.standing_timer_generation) return;
  switch (static_cast<WorkerTimer>(timer)) {
    case WorkerTimer::DRAIN_DEADLINE:
      if (s.standing == Standing::DRAINING) {
        log_of(s).warn("a worker's drain deadline passed: interrupting what it runs",
                       {{"worker", s.setup.info.shard_id}, {"invocations", s.given.size() + s.orphans.size()}});
      }
      handle(self, StandingEvent::DRAIN_NOW);
      return;
    case WorkerTimer::QUARANTINE_OVER: handle(self, StandingEvent::QUARANTINE_OVER); return;
  }
  log_of(s).error("ignored a worker's standing timer of unknown kind",
                  {{"worker", s.setup.info.shard_id}, {"kind", static_cast<int>(timer)}});
}

caf::result<WorkerView> answer_order(Self self, const WorkerOrder& order) {
  auto& st = self->state;
  if (auto obeyed = obey(self, order); !obeyed) return to_caf(obeyed.error());
  // Written once more, carrying the answer: the order's own writes came before it, and a shard's
  // records become durable in the order they were made.
  if (!st.setup.book) return view_of(self);  // nowhere to record it (tests that do not look)
  auto [ticket, recorded] = st.answers.next(caf::actor_cast<worker_actor>(self));
  if (!record_standing(self, std::move(recorded))) {
    return to_caf(fail(Errc::UNAVAILABLE, "worker '" + st.setup.info.shard_id +
                                              "' was replaced by a new instance as the order arrived, so it did "
                                              "not reach the worker's record: give it again"));
  }
  auto promise = self->make_response_promise<WorkerView>();
  st.answers.hold(ticket, promise, view_of(self));
  return promise;
}

void on_recorded(Self self, uint64_t ticket, const caf::error& failed) {
  self->state.answers.recorded(ticket, failed);
  quit_if_done(self);
}

}  // namespace troupe::actors::worker_detail
