// The worker actor: the health table wired to timers, the worker's invocations, and the checks
// that make a worker's reports trustworthy (only on invocations it was given, acked once
// durable, duplicates recognised by invocation id). Its standing (drains, quarantine) is in
// worker_standing.cpp.
#include "actors/worker/worker_actor.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include <caf/actor_system.hpp>

#include "actors/worker/worker_actor_state.hpp"
#include "actors/worker/worker_book.hpp"
#include "schema/duration.hpp"
#include "schema/node_log.hpp"

namespace troupe::actors {
namespace worker_detail {

void quit_if_done(Self self) {
  auto& st = self->state;
  if (!HealthMachine::is_terminal(st.health) || !st.given.empty() || !st.orphans.empty()) return;
  check_idle(self);  // a drain of a worker that died running nothing of ours is over
  if (!st.answers.empty()) return;  // an operator's answer waits for its write; that ends it
  for (auto& [id, waiting] : std::exchange(st.settle_waiters, {})) {
    for (auto& promise : waiting) promise.deliver(true);
  }
  self->quit();
}

namespace {

constexpr size_t remembered_finished = 65536;

void handle(Self self, HealthEvent event);

void remember_finished(Self self, const std::string& id) {
  auto& st = self->state;
  if (!st.finished.insert(id).second) return;
  st.finished_order.push_back(id);
  if (st.finished_order.size() > remembered_finished) {
    st.finished.erase(st.finished_order.front());
    st.finished_order.pop_front();
  }
}

/// Invocation `id` is over here: whoever waits for that may go on.
void settled(Self self, const std::string& id) {
  auto waiting = self->state.settle_waiters.find(id);
  if (waiting == self->state.settle_waiters.end()) return;
  for (auto& promise : waiting->second) promise.deliver(true);
  self->state.settle_waiters.erase(waiting);
}


/// The invocation is over for this worker: forget it and give its slot back.
void finish(Self self, const std::string& id) {
  auto& st = self->state;
  auto it = st.given.find(id);
  if (it == st.given.end()) return;
  auto matcher = st.setup.matchers.find(it->second.task_list);
  if (matcher != st.setup.matchers.end() && it->second.holds_slot) {
    self->send(matcher->second, release_atom::value, st.setup.info.shard_id);
  }
  st.given.erase(it);
  st.cancel_requested.erase(id);
  remember_finished(self, id);
  settled(self, id);
  check_idle(self);
  quit_if_done(self);
}

/// Tells the invocation's task it was lost with this worker, and forgets it.
void lose(Self self, const std::string& id, const std::string& why, Loss loss) {
  auto& st = self->state;
  auto it = st.given.find(id);
  if (it == st.given.end()) return;
  self->send(it->second.task, report_atom::value,
             TaskReport{id, TaskReport::LOST, {}, "Failover", why, false, loss});
  remember_recent(self, id, it->second, "LOST");
  finish(self, id);
}

/// What a lost worker's invocation is known to have done.
Loss loss_of(const Given& given) {
  if (given.ended) return Loss::RESULT_LOST;
  if (given.started) return Loss::WHILE_RUNNING;
  return Loss::MAY_HAVE_STARTED;
}

/// Whether this instance held its shard when `fence` was dispatched to the shard by an earlier
/// incarnation: it had registered with that incarnation by then, and a shard has one live
/// instance at a time. If it did and does not have the invocation, the invocation never
/// reached a worker.
bool held_shard_at(const WorkerInfo& info, const Fence& fence) {
  for (const auto& registered : info.registrations) {
    if (registered.epoch == fence.epoch && registered <= fence) return true;
  }
  return false;
}

/// Counts adopted invocations in their task lists' credit. Only once the worker has joined
/// them (a claim before the join would find no credit to take from).
void claim_adopted(Self self) {
  auto& st = self->state;
  if (st.health != HealthState::HEALTHY && st.health != HealthState::UNHEALTHY) return;
  for (auto& [id, given] : st.given) {
    if (given.holds_slot) continue;
    auto matcher = st.setup.matchers.find(given.task_list);
    if (matcher == st.setup.matchers.end()) continue;
    self->send(matcher->second, claim_atom::value, st.setup.info.shard_id);
    given.holds_slot = true;
  }
}

}  // namespace

void offer_slots(Self self, bool accept) {
  auto& st = self->state;
  for (const auto& [list, slots] : st.setup.info.task_lists) {
    auto matcher = st.setup.matchers.find(list);
    if (matcher == st.setup.matchers.end()) continue;
    self->send(matcher->second, join_atom::value, st.setup.info.shard_id, accept ? slots : 0u,
               st.setup.rate);
  }
  if (st.setup.sessions_accepting) st.setup.sessions_accepting(accept);
  claim_adopted(self);
}

namespace {


void arm_health_timer(Self self) {
  auto& st = self->state;
  const auto since = self->clock().now() - st.last_heartbeat;
  auto delay = until_health_timeout(st.health, std::chrono::duration_cast<Duration>(since), st.setup.timeouts);
  if (!delay) return;
  self->delayed_send(self, *delay, timeout_atom::value, ++st.timer_generation);
}

void query_running_tasks(Self self) {
  auto& st = self->state;
  if (st.querying) return;
  st.querying = true;
  auto me = caf::actor_cast<worker_actor>(self);
  const uint64_t epoch = st.link_epoch;
  st.setup.link->get_running_tasks([me, epoch](Result<RunningTasks> running) {
    if (running) {
      caf::anon_send(me, associate_atom::value, epoch, true, std::move(running->ids), std::move(running->ended),
                     std::move(running->sessions), std::string());
    } else {
      caf::anon_send(me, associate_atom::value, epoch, false, std::vector<std::string>(), std::vector<std::string>(),
                     std::vector<std::string>(), running.error().message);
    }
  });
}

void handle(Self self, HealthEvent event) {
  auto& st = self->state;
  auto t = HealthMachine::transition(st.health, event);
  if (!t || t->ignored) return;
  const HealthState from = std::exchange(st.health, t->to);
  if (event == HealthEvent::STOPPED) st.said_stopped = true;
  if (event == HealthEvent::REPLACED) st.replaced = true;
  if (from != st.health) {
    log_of(st).debug("worker health changed", {{"worker", st.setup.info.shard_id},
                                               {"from", HealthMachineTraits::name(from)},
                                               {"to", HealthMachineTraits::name(st.health)},
                                               {"event", HealthMachineTraits::name(event)}});
    if (st.setup.book) {
      st.setup.book->health_changed(st.setup.info.shard_id, from, st.health);
      record_status(self);
    }
    log_status(self, HealthMachineTraits::name(event));
  }
  for (HealthAction action : t->actions) {
    switch (action) {
      case HealthAction::ARM_HEALTH_TIMER: arm_health_timer(self); break;
      case HealthAction::QUERY_RUNNING_TASKS: query_running_tasks(self); break;
      case HealthAction::RECONCILE: break;  // done with the answer, in the associate handler
      // Slots go to its task lists only while its standing allows it too.
      case HealthAction::ACCEPT_TASKS: offer_slots(self, StandingMachine::accepts_tasks(st.standing)); break;
      case HealthAction::STOP_ASSIGNING: offer_slots(self, false); break;
      case HealthAction::REQUEST_SUICIDE:
        st.setup.link->request_suicide("the scheduler declared worker " + st.setup.info.shard_id + " " +
                                       std::string(HealthMachineTraits::name(st.health)));
        break;
      case HealthAction::FAIL_OVER_INVOCATIONS: {
        const std::string why = "worker " + st.setup.info.describe() +
                                (event == HealthEvent::REPLACED  ? " was replaced by a new instance"
                                 : event == HealthEvent::STOPPED ? " stopped before this outcome reached the scheduler"
                                                                 : " was lost and its lease ran out");
        std::vector<std::pair<std::string, Loss>> lost;
        for (const auto& [id, given] : st.given) lost.emplace_back(id, loss_of(given));
        if (!lost.empty() || !st.orphans.empty()) {
          log_of(st).warn("failing over a worker's invocations", {{"worker", st.setup.info.shard_id},
                                                                   {"invocations", lost.size()},
                                                                   {"unclaimed", st.orphans.size()},
                                                                   {"why", why}});
        }
        for (const auto& [id, loss] : lost) lose(self, id, why, loss);
        // What it ran that nobody claimed died with it too.
        for (const auto& id : std::exchange(st.orphans, {})) settled(self, id);
        check_idle(self);
        break;
      }
      case HealthAction::STOP_HEALTH_TIMER: ++st.timer_generation; break;
      case HealthAction::LEAVE_TASK_LISTS:
        for (const auto& [list, matcher] : st.setup.matchers) {
          self->send(matcher, leave_atom::value, st.setup.info.shard_id);
        }
        if (event == HealthEvent::STOPPED) {
          log_of(st).info("worker stopped", {{"worker", st.setup.info.shard_id},
                                             {"host", st.setup.info.hostname},
                                             {"pid", st.setup.info.pid}});
          break;
        }
        // What it was given fails over once its lease runs out, unless it reports first (a
        // replaced instance's goes at once).
        log_of(st).warn("worker lost", {{"worker", st.setup.info.shard_id},
                                        {"host", st.setup.info.hostname},
                                        {"pid", st.setup.info.pid},
                                        {"event", HealthMachineTraits::name(event)},
                                        {"invocations", st.given.size()},
                                        {"lease", format_duration(st.setup.timeouts.lease)}});
        break;
    }
  }
  // A drain waits for what it runs; the worker has said what that is only now.
  if (event == HealthEvent::ASSOCIATED) check_idle(self);
  quit_if_done(self);
}

/// Hands the outcome of a given invocation to its task; once the task says it is durable (or
/// has ended, so its outcome was decided and is durable), the invocation is over for this
/// worker and `durable` runs.
void settle(Self self, const task_port& task, TaskReport report, std::function<void()> durable) {
  auto over = [self, id = report.invocation_id, durable] {
    finish(self, id);
    durable();
  };
  self->request(task, caf::infinite, update_atom::value, std::move(report))
      .then([over](bool) { over(); }, [over](const caf::error&) { over(); });
}

/// Queues the acknowledgement of an outcome that came in a runTask answer. Outcomes made
/// durable by one group commit arrive here together: they leave in one call, sent once the
/// mailbox has had its turn.
void acknowledge(Self self, const std::string& id) {
  auto& st = self->state;
  st.acks.push_back(id);
  if (st.acks.size() == 1) self->send(self, acknowledge_atom::value);
}

/// Asks the worker about invocations whose runTask outcome is unknown.
void resolve_unsure(Self self) {
  auto& st = self->state;
  std::vector<std::string> unsure;
  for (const auto& [id, given] : st.given) {
    if (given.unsure) unsure.push_back(id);
  }
  if (unsure.empty()) return;
  auto me = caf::actor_cast<worker_actor>(self);
  st.setup.link->notify_if_not_running(unsure, st.setup.fences->next(),
                                       [me, asked = unsure](Result<std::vector<std::string>> not_running) {
                                         if (not_running) {
                                           caf::anon_send(me, notify_atom::value, true, asked,
                                                          std::move(*not_running));
                                         } else {
                                           caf::anon_send(me, notify_atom::value, false, asked,
                                                          std::vector<std::string>());
                                         }
                                       });
}

/// Sends a granted invocation to the worker (or loses it, never sent, if the worker must die);
/// the link's callback tells the actor what the answer said.
void send_run(Self self, const Invocation& invocation, task_port task) {
  auto& s = self->state;
  const std::string id = invocation.invocation_id;
  Given given{task, invocation.task_list, false};
  given.fence = invocation.fence;
  given.task_name = invocation.workflow_id + "/" + invocation.task_name;
  given.attempt = invocation.attempt;
  s.given[id] = std::move(given);
  if (HealthMachine::is_leaving(s.health) || !StandingMachine::accepts_tasks(s.standing)) {
    // Granted before the worker left its task lists (or withdrew its slots): never sent.
    const std::string why = s.health == HealthState::STOPPING ? " is shutting down"
                            : HealthMachine::is_leaving(s.health)
                                ? " must die"
                                : " is " + std::string(StandingMachineTraits::name(s.standing));
    lose(self, id, "worker " + s.setup.info.shard_id + why, Loss::NEVER_STARTED);
    return;
  }
  auto me = caf::actor_cast<worker_actor>(self);
  s.setup.link->run_task(invocation, [me, id](Result<RunAnswer> sent) {
    if (sent && sent->ended && sent->outcome) {
      // Ended already, and the answer says how: its outcome settles it, with no start of
      // its own.
      caf::anon_send(me, update_atom::value, *sent->outcome);
      return;
    }
    Sent outcome = Sent::STARTED;
    std::string error;
    if (!sent) {
      outcome = sent.error().code == Errc::UNAVAILABLE ? Sent::UNKNOWN : Sent::REFUSED;
      error = sent.error().message;
    } else if (sent->ended) {
      outcome = Sent::ENDED;
    }
    caf::anon_send(me, sent_atom::value, id, static_cast<uint8_t>(outcome), error);
  });
}

/// What runTask's answer said of a given invocation (see Sent).
void on_sent(Self self, const std::string& id, uint8_t raw, const std::string& error) {
  auto& s = self->state;
  auto it = s.given.find(id);
  if (it == s.given.end()) return;
  switch (static_cast<Sent>(raw)) {
    case Sent::STARTED:
      // The worker accepted the invocation and started it: that is the task's start.
      it->second.unsure = false;
      it->second.started = true;
      self->send(it->second.task, report_atom::value, TaskReport{id, TaskReport::STARTED, {}, {}, {}, false});
      found_running(self, id);
      break;
    case Sent::ENDED:
      it->second.unsure = false;
      it->second.ended = true;  // its outcome follows; no start of its own
      break;
    case Sent::REFUSED:
      lose(self, id, "worker " + s.setup.info.shard_id + " refused the invocation: " + error,
           Loss::NEVER_STARTED);
      break;
    case Sent::UNKNOWN:
    default:  // not a Sent: nothing is known of it, so ask the worker
      it->second.unsure = true;
      resolve_unsure(self);
      break;
  }
}

/// notifyIfTasksNotRunning answered: what it asked about runs, or never arrived.
void on_notified(Self self, bool ok, const std::vector<std::string>& asked,
                 const std::vector<std::string>& not_running) {
  auto& s = self->state;
  if (!ok) return;  // asked again on the next heartbeat
  std::set<std::string> gone(not_running.begin(), not_running.end());
  // Only what this notify asked about is settled: an invocation that became unsure after
  // it went out waits for a later answer (or the next heartbeat's question).
  for (const auto& id : asked) {
    auto it = s.given.find(id);
    if (it == s.given.end() || gone.count(id) || !it->second.unsure) continue;
    it->second.unsure = false;  // it runs
    found_running(self, id);
  }
  for (const auto& id : not_running) {
    auto it = s.given.find(id);
    if (it == s.given.end()) continue;
    // It was sent to this instance (or, adopted, to the shard while this instance held
    // it), which keeps every invocation it was given until its outcome is acknowledged:
    // not having it means it never arrived.
    if (!it->second.adopted || held_shard_at(s.setup.info, it->second.fence)) {
      lose(self, id, "worker " + s.setup.info.shard_id + " never received it", Loss::NEVER_STARTED);
    } else {
      lose(self, id,
           "worker " + s.setup.info.describe() + " does not have it, and another instance of the shard may have run it",
           loss_of(it->second));
    }
  }
}

/// getRunningTasks answered: reconcile what the worker runs with what it was given.
void on_associated(Self self, uint64_t epoch, bool ok, const std::vector<std::string>& running,
                   const std::vector<std::string>& ended, const std::vector<std::string>& sessions,
                   const std::string& error) {
  auto& s = self->state;
  if (epoch != s.link_epoch) return;
  s.querying = false;
  if (!ok) {
    log_of(s).warn("could not ask a worker what it runs; asking again on its next heartbeat",
                   {{"worker", s.setup.info.shard_id}, {"error", error}});
    return;  // asked again on the next heartbeat while NEW
  }
  // Reconcile: what it runs that it was not given is not the scheduler's (it was told
  // to start clean), unless a task revived after a restart may still adopt it; what it
  // was given and does not run is lost unless its outcome is still on its way (unsure
  // until notifyIfTasksNotRunning says).
  std::set<std::string> runs(running.begin(), running.end());
  s.outcomes_on_the_way = std::set<std::string>(ended.begin(), ended.end());
  const auto now = self->clock().now();
  for (const auto& id : running) {
    if (s.given.count(id)) continue;
    if (now < s.setup.orphans_kept_until && !(s.setup.workflow_closed && s.setup.workflow_closed(id))) {
      if (s.orphans.empty()) self->delayed_send(self, s.setup.orphans_kept_until - now, wake_atom::value);
      s.orphans.insert(id);
    } else {
      s.setup.link->cancel_task(id, Duration(0));
    }
  }
  for (auto& [id, given] : s.given) {
    if (!runs.count(id)) {
      given.unsure = true;
    } else if (given.adopted && given.unsure) {
      given.unsure = false;  // adopted before this answer, and the worker has it: it started
      given.started = true;
      given.ended = s.outcomes_on_the_way.erase(id) > 0;
      // One that ended is not said to run: its task waits for the outcome instead.
      if (!given.ended) self->send(given.task, report_atom::value, TaskReport{id, TaskReport::STARTED, {}, {}, {}, false});
    }
  }
  // An interrupt the drain sent may have been lost with the worker's connection (or an earlier
  // scheduler): everything the worker still runs hears it again.
  for (const auto& id : running) {
    auto it = s.given.find(id);
    if ((it != s.given.end() && !it->second.ended) || s.orphans.count(id)) found_running(self, id);
  }
  // Before it takes sessions (ASSOCIATED offers its slots): the sessions it holds keep theirs.
  // Counted here too until the dispatcher's count comes back: a draining worker holding
  // sessions is not idle.
  if (s.setup.sessions_found) s.setup.sessions_found(sessions);
  s.sessions_held = std::max<uint32_t>(s.sessions_held, static_cast<uint32_t>(sessions.size()));
  handle(self, HealthEvent::ASSOCIATED);
  // Questions asked before it said what it runs: over unless held.
  std::vector<std::string> unheld;
  for (const auto& [id, waiting] : s.settle_waiters) {
    if (!s.given.count(id) && !s.orphans.count(id)) unheld.push_back(id);
  }
  for (const auto& id : unheld) settled(self, id);
  resolve_unsure(self);
}

/// The worker as a probe shows it: its view, and what its health waits for.
ProbeAnswer probe_of(Self self) {
  const auto& st = self->state;
  const WorkerView view = view_of(self);
  auto probe = std::make_shared<ActorProbe>();
  probe->kind = "worker";
  probe->id = view.shard_id;
  probe->state = view.status;
  probe->mailbox = mailbox_depth(self);
  probe->field("health", view.health);
  probe->field("instance", st.setup.info.describe());
  probe->field("running", std::to_string(view.running.size()));
  for (const auto& list : view.task_lists) {
    probe->field("task list " + list.name, std::to_string(list.used) + " of " + std::to_string(list.slots) + " slots");
  }
  if (st.setup.info.max_concurrent_sessions) {
    probe->field("sessions", std::to_string(st.sessions_held) + " of " +
                                 std::to_string(st.setup.info.max_concurrent_sessions));
  }
  if (view.last_heartbeat_age_us >= 0) {
    probe->field("last heartbeat", std::to_string(view.last_heartbeat_age_us / 1000) + "ms ago");
  }
  if (st.drain.deadline_us) probe->timers.push_back({"drain deadline", st.drain.deadline_us});
  if (st.quarantined_until_us) probe->timers.push_back({"quarantine ends", st.quarantined_until_us});
  if (st.health == HealthState::UNHEALTHY || st.health == HealthState::NEW) {
    probe->waits_for = "a heartbeat from its process (" + std::string(HealthMachineTraits::name(st.health)) + ")";
  }
  return probe;
}

worker_actor::behavior_type worker(Self self, WorkerSetup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  if (!st.setup.fences) st.setup.fences = std::make_shared<FenceCounter>();
  st.last_heartbeat = self->clock().now();
  if (st.setup.roster) {
    st.seat = RosterSeat(st.setup.roster, {"worker", st.setup.info.shard_id, wall_clock_us(), self->address()});
  }
  load_standing(self);
  // A drained or quarantined shard comes back so: its first change is from that status.
  st.logged_status = status_of(self);
  record_status(self);
  // The registration counts as the first heartbeat; NEW asks for the running tasks.
  handle(self, HealthEvent::HEARTBEAT);
  query_running_tasks(self);
  arm_health_timer(self);
  return {
      [=](run_atom, Invocation& invocation, task_port task) {
        send_run(self, invocation, std::move(task));
      },
      [=](sent_atom, const std::string& id, uint8_t raw, const std::string& error) {
        on_sent(self, id, raw, error);
      },
      [=](notify_atom, bool ok, const std::vector<std::string>& asked,
          const std::vector<std::string>& not_running) { on_notified(self, ok, asked, not_running); },
      [=](adopt_atom, Invocation& invocation, task_port task) {
        auto& s = self->state;
        const std::string id = invocation.invocation_id;
        if (s.given.count(id)) return;
        const bool held = s.orphans.erase(id) > 0;
        Given given{std::move(task), invocation.task_list, !held, true, false};
        given.started = held;
        given.ended = held && s.outcomes_on_the_way.erase(id) > 0;
        given.fence = invocation.fence;
        given.task_name = invocation.workflow_id + "/" + invocation.task_name;
        given.attempt = invocation.attempt;
        // One that ended is not said to run: its task waits for the outcome instead.
        const bool runs = held && !given.ended;
        if (runs) self->send(given.task, report_atom::value, TaskReport{id, TaskReport::STARTED, {}, {}, {}, false});
        s.given.emplace(id, std::move(given));
        if (runs) found_running(self, id);
        claim_adopted(self);
        // While NEW, the answer to getRunningTasks settles it; once HEALTHY, a notify does.
        if (s.health == HealthState::HEALTHY) resolve_unsure(self);
      },
      [=](settled_atom, const std::string& id, const std::string&) -> caf::result<bool> {
        auto& s = self->state;
        // Until the worker has said what it runs (NEW), an invocation it does not hold yet may
        // still be among its orphans: the answer waits for the association.
        if (s.health != HealthState::NEW && !s.given.count(id) && !s.orphans.count(id)) return true;
        auto promise = self->make_response_promise<bool>();
        s.settle_waiters[id].push_back(promise);
        return promise;
      },
      [=](park_atom, const std::string& id, const std::string&, task_port to) {
        auto it = self->state.given.find(id);
        if (it == self->state.given.end()) return false;
        it->second.task = std::move(to);
        return true;
      },
      [=](wake_atom) {
        auto& s = self->state;
        if (self->clock().now() < s.setup.orphans_kept_until) return;  // the window was extended
        // Killed without grace: over as far as anyone waiting for it is concerned.
        for (const auto& id : s.orphans) {
          s.setup.link->cancel_task(id, Duration(0));
          settled(self, id);
        }
        s.orphans.clear();
        check_idle(self);
        quit_if_done(self);
      },
      [=](recovered_atom, int64_t remaining_us) {
        auto& s = self->state;
        const auto remaining = std::max<Duration>(Duration(remaining_us), Duration(0));
        s.setup.orphans_kept_until = self->clock().now() + remaining;
        if (!s.orphans.empty()) self->delayed_send(self, remaining, wake_atom::value);
      },
      [=](cancel_atom, const std::string& id, const std::string&, int64_t grace_us) {
        auto& s = self->state;
        if (s.orphans.count(id)) {
          // Not claimed (its task moved on before the worker came back): stop it now rather
          // than when the recovery window closes.
          s.setup.link->cancel_task(id, Duration(grace_us));
          return;
        }
        if (!s.given.count(id)) return;
        s.cancel_requested.insert(id);
        s.setup.link->cancel_task(id, Duration(grace_us));
      },
      [=](heartbeat_atom, Reply<HealthState>& reply) {
        auto& s = self->state;
        s.last_heartbeat = self->clock().now();
        handle(self, HealthEvent::HEARTBEAT);
        arm_health_timer(self);
        if (s.health == HealthState::HEALTHY) resolve_unsure(self);
        reply.deliver(s.health);
      },
      [=](stop_atom, const std::string& why, int64_t grace_us) {
        auto& s = self->state;
        if (auto t = HealthMachine::transition(s.health, HealthEvent::STOP_REQUESTED); t && !t->ignored) {
          log_of(s).info("worker shutting down: no new tasks; what runs gets its grace to finish",
                         {{"worker", s.setup.info.shard_id},
                          {"why", why},
                          {"running", s.given.size()},
                          {"grace", format_duration(Duration(grace_us))}});
        }
        handle(self, HealthEvent::STOP_REQUESTED);
      },
      [=](finished_atom) { handle(self, HealthEvent::STOPPED); },
      [=](report_atom, TaskReport& report, Reply<bool>& reply) {
        auto& s = self->state;
        auto it = s.given.find(report.invocation_id);
        if (it == s.given.end()) {
          if (s.finished.count(report.invocation_id)) {
            reply.deliver(true);  // a late heartbeat of an invocation that is over: stop it
          } else {
            reply.deliver(fail(Errc::NOT_FOUND, "invocation '" + report.invocation_id +
                                                    "' was not given to worker " + s.setup.info.shard_id));
          }
          return;
        }
        it->second.unsure = false;
        it->second.started = true;
        if (report.kind == TaskReport::HEARTBEAT || report.kind == TaskReport::STARTED) {
          self->send(it->second.task, report_atom::value, report);
        }
        reply.deliver(s.cancel_requested.count(report.invocation_id) > 0);
      },
      [=](update_atom, TaskReport& report, Reply<bool>& reply) {
        auto& s = self->state;
        const std::string id = report.invocation_id;
        auto it = s.given.find(id);
        if (it == s.given.end()) {
          if (s.finished.count(id)) {
            reply.deliver(true);  // a duplicate: acknowledged before
          } else if (self->clock().now() < s.setup.orphans_kept_until) {
            // After a restart, before its task was revived and adopted it: the worker keeps the
            // outcome and retries.
            reply.deliver(fail(Errc::UNAVAILABLE, "the scheduler is recovering; invocation '" + id +
                                                      "' is not known yet, retry"));
          } else {
            log_of(s).warn("ignored a worker's report on an invocation it was not given (a late report from a lost worker?)",
                           {{"worker", s.setup.info.shard_id}, {"invocation", id}});
            reply.deliver(fail(Errc::NOT_FOUND, "invocation '" + id + "' was not given to worker " +
                                                    s.setup.info.shard_id));
          }
          return;
        }
        count_outcome(self, it->second, report);
        auto deliver = std::make_shared<Reply<bool>>(std::move(reply));
        settle(self, it->second.task, std::move(report), [deliver] { deliver->deliver(true); });
      },
      [=](update_atom, TaskReport& report) {
        auto& s = self->state;
        const std::string id = report.invocation_id;
        auto it = s.given.find(id);
        if (it == s.given.end()) {
          // Lost or finished meanwhile: nobody waits for this outcome any more.
          acknowledge(self, id);
          return;
        }
        count_outcome(self, it->second, report);
        settle(self, it->second.task, std::move(report), [self, id] { acknowledge(self, id); });
      },
      [=](acknowledge_atom) {
        auto& s = self->state;
        if (!s.acks.empty()) s.setup.link->acknowledge(std::exchange(s.acks, {}));
      },
      [=](register_atom, std::shared_ptr<WorkerLink>& link) {
        auto& s = self->state;
        s.setup.link = std::move(link);
        ++s.link_epoch;
        s.querying = false;
        // The registration wrote STARTED to the record: the status is written again if it is not.
        s.recorded_status = worker_status_started;
        record_status(self);
        if (HealthMachine::is_terminal(s.health)) {
          // Its first heartbeat's reply tells it to die. Until then it counts the accepted
          // registration as an acknowledged heartbeat, as it counts a registration: its tasks may
          // run for a lease from now, so they fail over no earlier than that (as after a
          // heartbeat it sends while MUST_DIE).
          s.last_heartbeat = self->clock().now();
          arm_health_timer(self);
          return;
        }
        s.last_heartbeat = self->clock().now();
        handle(self, HealthEvent::HEARTBEAT);
        query_running_tasks(self);
      },
      [=](describe_atom) {
        return caf::make_result(static_cast<uint8_t>(self->state.health), self->state.setup.info.instance_id);
      },
      [=](kill_atom, const std::string&, bool replaced) {
        handle(self, replaced ? HealthEvent::REPLACED : HealthEvent::SUICIDE);
      },
      [=](associate_atom, uint64_t epoch, bool ok, const std::vector<std::string>& running,
          const std::vector<std::string>& ended, const std::vector<std::string>& sessions,
          const std::string& error) { on_associated(self, epoch, ok, running, ended, sessions, error); },
      [=](timeout_atom, uint64_t generation) {
        auto& s = self->state;
        if (generation != s.timer_generation) return;
        const auto since = std::chrono::duration_cast<Duration>(self->clock().now() - s.last_heartbeat);
        if (auto event = health_timeout_event(s.health, since, s.setup.timeouts)) {
          handle(self, *event);
        } else {
          if (s.health == HealthState::NEW) query_running_tasks(self);
          arm_health_timer(self);
        }
      },
      [=](operate_atom, const WorkerOrder& order) { return answer_order(self, order); },
      [=](persisted_atom, uint64_t ticket, const caf::error& failed) { on_recorded(self, ticket, failed); },
      [=](view_atom) { return view_of(self); },
      [=](wake_atom, uint8_t timer, uint64_t generation) { on_standing_timer(self, timer, generation); },
      [=](open_atom, SessionOpen& session) { return open_session(self, std::move(session)); },
      [=](close_atom, const std::string& session) { return close_session(self, session); },
      [=](cancel_atom, session_atom, const std::string& action) {
        self->state.setup.link->cancel_task(action, self->state.setup.kill_grace);
      },
      [=](session_atom, uint64_t call, bool ran, TaskReport& outcome, const caf::error& failed) {
        session_answered(self, call, ran, std::move(outcome), failed);
      },
      [=](session_atom, uint32_t held) {
        self->state.sessions_held = held;
        if (held == 0) check_idle(self);
      },
      [=](probe_atom) { return probe_of(self); },
  };
}

}  // namespace
}  // namespace worker_detail

worker_actor spawn_worker(caf::actor_system& system, WorkerSetup setup) {
  return system.spawn(worker_detail::worker, std::move(setup));
}

}  // namespace troupe::actors
