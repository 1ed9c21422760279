// The dispatcher: routing by task list and by shard, and worker registration.
#include "actors/system/dispatcher.hpp"

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/matching/wait_board.hpp"
#include "actors/meters.hpp"
#include "actors/session/session_placement.hpp"
#include "actors/system/actor_roster.hpp"
#include "actors/worker/recorded_answers.hpp"
#include "actors/worker/standing_machine.hpp"
#include "actors/worker/worker_book.hpp"
#include "actors/worker/worker_orders.hpp"
#include "schema/duration.hpp"
#include "schema/node_log.hpp"

namespace troupe::actors {
namespace {

struct DispatcherState {
  static inline const char* name = "dispatcher";
  DispatcherOptions options;
  std::map<std::string, matching_actor> matchers;
  std::map<std::string, worker_actor> workers;  ///< the live instance of each shard
  /// Every shard registered since this scheduler started: one registering again without a live
  /// instance had an earlier one that died or was replaced, so it is told to start clean.
  std::set<std::string> known_shards;
  /// The instance last refused each shard: it retries every heartbeat, and is logged once.
  std::map<std::string, std::string> refused_instances;
  /// Invocations revived tasks want back, by the shard that ran them, until it registers.
  std::map<std::string, std::vector<std::pair<Invocation, task_port>>> adoptions;
  caf::actor_clock::time_point recovery_ends;
  /// Questions whether an invocation is over, about shards that have not registered since a
  /// restart: answered when the recovery window closes (see settled_atom).
  std::vector<std::tuple<std::string, std::string, caf::response_promise>> settle_waiters;
  /// Cancellations of invocations whose shard has not registered since a restart, by shard:
  /// passed on when it does (within the recovery window), so what a task stopped right after
  /// the restart does not run on until the window closes.
  std::map<std::string, std::vector<std::pair<std::string, int64_t>>> pending_cancels;
  /// Operators' orders for workers with no live instance, answered once their records are
  /// durable.
  RecordedAnswers answers;

  // --- sessions ---
  SessionPlacement placement;
  /// Each live shard's registration: the instance and resource a placement reports.
  std::map<std::string, WorkerInfo> infos;
  /// Session actors waiting for a worker, by session key.
  struct Asking {
    caf::typed_response_promise<SessionPlace> promise;
    caf::actor session;
  };
  std::map<std::string, Asking> asking;
  /// Sessions placed on a worker, by key: told if that worker instance is lost.
  struct Placed {
    std::string shard;
    caf::actor_addr worker;
    caf::actor session;
    uint64_t id = 0;
  };
  uint64_t placements = 0;  ///< numbers placements (SessionPlace::id)
  std::map<std::string, Placed> placed;
  /// Earlier placements of a session placed again before it gave them back (an answer that
  /// crossed its withdrawal), by placement id with the session's key: each holds its slot
  /// until the session frees it or ends.
  std::map<uint64_t, std::pair<std::string, Placed>> superseded;
  /// Sessions revived after a restart waiting for their worker to register again, by shard.
  std::map<std::string, std::vector<std::pair<std::string, Asking>>> session_claims;
  /// The session actors monitored (once each): their down messages are told from workers'.
  std::set<caf::actor_addr> session_actors;
  /// What a drain does to the sessions on each live shard, as its worker actor last said.
  std::map<std::string, SessionDrain> session_drains;
  /// The session slots each live shard's worker actor was last told are held.
  std::map<std::string, uint32_t> held_told;
  /// Sessions live workers said they hold open that no session actor has placed or claimed
  /// there yet, by shard: their slots stay taken (a restarted scheduler's revived sessions
  /// claim them) until the recovery window closes; then they are closed on their worker.
  std::map<std::string, std::set<std::string>> found_sessions;
  bool found_wake_armed = false;
  /// The node said its revival is over (recovered_atom): until then a session a worker holds
  /// may belong to a workflow not revived yet, so none is closed as unclaimed.
  bool revived = false;
  /// Sessions closed on live workers because no session actor claimed them: a claim that comes
  /// too late is refused (its worker does not hold the session any more).
  std::map<std::string, std::set<std::string>> orphans_closed;
  RosterSeat seat;
};

using Self = dispatcher_actor::stateful_pointer<DispatcherState>;

matching_actor matcher_of(Self self, const std::string& task_list) {
  auto& st = self->state;
  auto it = st.matchers.find(task_list);
  if (it != st.matchers.end()) return it->second;
  MatchingLimits limits;
  if (auto l = st.options.task_lists.find(task_list); l != st.options.task_lists.end()) limits = l->second;
  auto depth = st.options.meters ? st.options.meters->queue_depths.gauge(task_list) : nullptr;
  auto matcher =
      spawn_matching(self->system(), task_list, limits, st.options.waits, st.options.roster, std::move(depth));
  self->link_to(matcher);
  st.matchers.emplace(task_list, matcher);
  return matcher;
}

/// A registration was accepted (whichever of Bistro's rules let it in): its record and journal
/// say so, durably, before its worker actor can journal a health change.
/// How a registration was taken, for the node's log.
enum class Registration { NEW, RECONNECTED, REPLACING };

void record_registration(Self self, const WorkerInfo& info, Registration how) {
  if (auto& book = self->state.options.book) book->registered(info);
  std::string slots;
  for (const auto& [list, n] : info.task_lists) slots += (slots.empty() ? "" : ",") + list + ":" + std::to_string(n);
  log_or_none(self->state.options.log)
      .info(how == Registration::NEW           ? "worker registered"
            : how == Registration::RECONNECTED ? "worker reconnected"
                                               : "worker registered, replacing an earlier instance",
            {{"worker", info.shard_id},
             {"host", info.hostname},
             {"pid", info.pid},
             {"worker_id", info.worker_id},
             {"instance", info.instance_id},
             {"task_lists", slots}});
}

/// A worker whose shard has no live instance, as its record says.
WorkerView offline_view(const std::string& shard, storage::WorkerRecord record) {
  WorkerView view;
  view.shard_id = shard;
  // No process holds the shard: it said it stopped, or it is not responding. Its standing
  // (drained, quarantined) is the record's, shown apart.
  view.status = record.status == "STOPPED" ? "STOPPED" : "NOT_RESPONDING";
  for (const auto& [list, slots] : record.task_lists) view.task_lists.push_back({list, slots, 0});
  view.record = std::move(record);
  return view;
}

/// An operator's order for a shard with no live instance (worker_orders.hpp's apply_offline);
/// its record keeps the standing for the worker's next start. `written` is told when the
/// record's write is over (unless the order is refused).
Result<WorkerView> obey_offline(Self self, const WorkerOrder& order, storage::DoneCallback written) {
  auto& book = self->state.options.book;
  auto record = book ? book->find(order.shard_id) : std::nullopt;
  if (!record) {
    std::string known;
    if (book) {
      if (auto all = book->all()) {
        for (const auto& entry : *all) known += (known.empty() ? "" : ", ") + entry.shard_id;
      }
    }
    return fail(Errc::NOT_FOUND, "no worker named '" + order.shard_id + "' has registered" +
                                     (known.empty() ? std::string(" (none has)") : "; known workers: " + known));
  }
  const auto& clock = self->state.options.now_us;
  // Right after a restart a worker that did not say it stopped may still run what a revived
  // task takes back once it registers again.
  const bool may_run = self->clock().now() < self->state.recovery_ends && record->status != "STOPPED";
  if (auto applied = apply_offline(*record, order, clock ? clock() : wall_clock_us(), may_run); !applied) {
    return applied.error();
  }
  // Its status stays what it was (STOPPED, NOT_RESPONDING): no process holds the shard.
  if (!book->update(order.shard_id, {}, [&](storage::WorkerRecord& stored) { stored = *record; }, std::move(written))) {
    return fail(Errc::NOT_FOUND, "worker '" + order.shard_id + "' has no record any more");
  }
  return offline_view(order.shard_id, std::move(*record));
}

/// Every worker the book knows (or the one named), each from its live instance if it has one.
void gather_views(Self self, const std::string& shard, caf::typed_response_promise<std::vector<WorkerView>> promise) {
  auto& st = self->state;
  std::vector<storage::WorkerEntry> entries;
  if (st.options.book) {
    if (shard.empty()) {
      auto all = st.options.book->all();
      if (!all) {
        promise.deliver(to_caf(all.error()));
        return;
      }
      entries = std::move(*all);
    } else if (auto record = st.options.book->find(shard)) {
      entries.push_back({shard, std::move(*record)});
    }
  }
  if (!shard.empty() && entries.empty()) {
    promise.deliver(to_caf(Error{Errc::NOT_FOUND, "no worker named '" + shard + "' has registered"}));
    return;
  }
  struct Gathering {
    std::vector<WorkerView> views;
    size_t waiting = 0;
  };
  auto gathering = std::make_shared<Gathering>();
  std::vector<std::pair<size_t, worker_actor>> asks;
  for (auto& entry : entries) {
    gathering->views.push_back(offline_view(entry.shard_id, std::move(entry.record)));
    if (auto live = st.workers.find(entry.shard_id); live != st.workers.end()) {
      asks.emplace_back(gathering->views.size() - 1, live->second);
    }
  }
  gathering->waiting = asks.size();
  if (asks.empty()) {
    promise.deliver(std::move(gathering->views));
    return;
  }
  for (const auto& [index, worker] : asks) {
    auto done = [gathering, promise, index = index](std::optional<WorkerView> view) mutable {
      if (view) gathering->views[index] = std::move(*view);
      if (--gathering->waiting == 0) promise.deliver(std::move(gathering->views));
    };
    // An instance that ends before it answers is shown as its record says.
    self->request(worker, std::chrono::seconds(5), view_atom::value)
        .then([done](WorkerView& view) mutable { done(std::move(view)); },
              [done](const caf::error&) mutable { done(std::nullopt); });
  }
}

/// Posts why each session still asking waits (and forgets those that do not), for status.
void post_session_waits(Self self, const std::vector<std::string>& answered) {
  auto& st = self->state;
  if (!st.options.waits) return;
  for (const auto& key : answered) st.options.waits->post_session(key, {});
  for (const auto& [key, asking] : st.asking) st.options.waits->post_session(key, st.placement.why_waiting(key));
}

/// Session `key` is placed (`placed`): a placement it had still holds its slot, under its id.
void record_placement(DispatcherState& st, const std::string& key, DispatcherState::Placed placed) {
  if (auto closed = st.orphans_closed.find(placed.shard); closed != st.orphans_closed.end()) closed->second.erase(key);
  if (auto found = st.found_sessions.find(placed.shard); found != st.found_sessions.end() && found->second.erase(key)) {
    st.placement.release(key, placed.shard);  // the placement holds a slot of its own
  }
  auto [it, fresh] = st.placed.try_emplace(key, placed);
  if (fresh) return;
  st.superseded.emplace(it->second.id, std::make_pair(key, it->second));
  it->second = std::move(placed);
}

/// Forgets what the dispatcher knew of the sessions on `shard` (its instance ended, or a new one
/// took the shard over): what it said it held gives its slots back.
void forget_shard_sessions(DispatcherState& st, const std::string& shard) {
  st.held_told.erase(shard);
  st.session_drains.erase(shard);
  st.orphans_closed.erase(shard);
  if (auto found = st.found_sessions.find(shard); found != st.found_sessions.end()) {
    for (const auto& key : found->second) st.placement.release(key, shard);
    st.found_sessions.erase(found);
  }
}

/// Tells each live worker actor how many of its session slots are held, where that changed (a
/// draining worker is DRAINED once none is).
void tell_sessions_held(Self self) {
  auto& st = self->state;
  for (const auto& [shard, worker] : st.workers) {
    const uint32_t held = st.placement.held(shard);
    auto [told, fresh] = st.held_told.try_emplace(shard, held);
    if (!fresh && told->second == held) continue;
    told->second = held;
    self->send(worker, session_atom::value, held);
  }
}

/// The session placed on `shard` hears that worker's drain, if it is drained.
void tell_drain(Self self, const caf::actor& session, const std::string& shard) {
  auto drain = self->state.session_drains.find(shard);
  if (drain == self->state.session_drains.end() || drain->second == SessionDrain::NONE) return;
  caf::anon_send(session, drain_atom::value, shard, drain->second == SessionDrain::NOW);
}

/// Places every waiting session some worker can take now.
void place_sessions(Self self) {
  auto& st = self->state;
  std::vector<std::string> answered;
  for (const auto& [key, shard] : st.placement.place()) {
    answered.push_back(key);
    auto asking = st.asking.find(key);
    auto worker = st.workers.find(shard);
    if (asking == st.asking.end() || worker == st.workers.end()) {
      st.placement.release(key, shard);  // nobody waits for it any more
      continue;
    }
    const WorkerInfo& info = st.infos[shard];
    const uint64_t id = ++st.placements;
    record_placement(st, key, DispatcherState::Placed{shard, worker->second.address(), asking->second.session, id});
    asking->second.promise.deliver(SessionPlace{shard, info.instance_id, info.resource_id, id});
    st.asking.erase(asking);
  }
  post_session_waits(self, answered);
  tell_sessions_held(self);
}

/// Session `key` is on live worker `shard` again: it holds its slot there.
void give_claim(Self self, const std::string& key, const std::string& shard, DispatcherState::Asking& asking) {
  auto& st = self->state;
  const WorkerInfo& info = st.infos[shard];
  // Full or not: the session is there already (a slot it held as found is now its claim's).
  if (auto found = st.found_sessions.find(shard); found == st.found_sessions.end() || found->second.erase(key) == 0) {
    (void)st.placement.claim(key, shard);
  }
  const uint64_t id = ++st.placements;
  record_placement(st, key, DispatcherState::Placed{shard, st.workers[shard].address(), asking.session, id});
  asking.promise.deliver(SessionPlace{shard, info.instance_id, info.resource_id, id});
  tell_drain(self, asking.session, shard);  // after the answer: the session is back there first
  tell_sessions_held(self);
}

/// Closes session `key` on live worker `shard`, which holds it for no session actor (its
/// workflow ended, or moved it, while this scheduler could not tell the worker).
/// Its slot (if `holds_slot`) is given back once the worker has closed it, so that the worker
/// never holds more sessions than it takes.
void close_orphan(Self self, const std::string& key, const std::string& shard, bool holds_slot) {
  auto& st = self->state;
  auto worker = st.workers.find(shard);
  if (worker == st.workers.end()) return;
  log_or_none(st.options.log).warn("closing a session no workflow claimed", {{"worker", shard}, {"session", key}});
  st.orphans_closed[shard].insert(key);
  const caf::actor_addr instance = worker->second.address();
  auto give_back = [self, key, shard, instance, holds_slot] {
    if (!holds_slot) return;
    auto& s = self->state;
    auto live = s.workers.find(shard);
    if (live == s.workers.end() || live->second.address() != instance) return;  // its slots went with it
    s.placement.release(key, shard);
    place_sessions(self);
  };
  self->request(worker->second, caf::infinite, close_atom::value, key)
      .then([give_back](bool, const TaskReport&) { give_back(); }, [give_back](const caf::error&) { give_back(); });
}

/// The sessions workers hold that no session claimed within the recovery window are closed
/// there, and their slots taken back.
void close_unclaimed(Self self) {
  auto& st = self->state;
  st.found_wake_armed = false;
  if (!st.revived) return;  // the revival's end arms it again
  if (const auto now = self->clock().now(); now < st.recovery_ends) {
    st.found_wake_armed = true;
    self->delayed_send(self, st.recovery_ends - now, wake_atom::value);  // extended
    return;
  }
  for (const auto& [shard, keys] : std::exchange(st.found_sessions, {})) {
    for (const auto& key : keys) close_orphan(self, key, shard, true);
  }
}

/// Worker `shard` says it holds `sessions` open: those placed or claimed there are known; the
/// others keep their slots for a revived session to claim within the recovery window, or, once
/// it closed, are closed there.
void hold_found_sessions(Self self, const std::string& shard, const std::vector<std::string>& sessions) {
  auto& st = self->state;
  const bool window_open = !st.revived || self->clock().now() < st.recovery_ends;
  for (const auto& key : sessions) {
    if (auto placed = st.placed.find(key); placed != st.placed.end() && placed->second.shard == shard) continue;
    if (auto found = st.found_sessions.find(shard); found != st.found_sessions.end() && found->second.count(key)) continue;
    // One its session looks for a worker for is no revived session's: it goes, and the session
    // may be placed here anew once it has.
    if (!window_open || st.asking.count(key) > 0) {
      close_orphan(self, key, shard, st.placement.claim(key, shard));
      continue;
    }
    if (st.placement.claim(key, shard)) st.found_sessions[shard].insert(key);
  }
  if (st.revived && window_open && !st.found_sessions.empty() && !st.found_wake_armed) {
    st.found_wake_armed = true;
    self->delayed_send(self, st.recovery_ends - self->clock().now(), wake_atom::value);
  }
  // Said even when the count did not change: the worker actor counted what it said it holds.
  st.held_told.erase(shard);
  tell_sessions_held(self);
}

/// Claims of sessions on `shard`, once the recovery window closed without it: refused.
void expire_claims(Self self, const std::string& shard) {
  auto& st = self->state;
  auto claims = st.session_claims.find(shard);
  if (claims == st.session_claims.end()) return;
  const auto now = self->clock().now();
  if (now < st.recovery_ends) {
    self->delayed_send(self, st.recovery_ends - now, timeout_atom::value, shard);  // extended
    return;
  }
  for (auto& [key, asking] : claims->second) {
    asking.promise.deliver(to_caf(Error{Errc::UNAVAILABLE, "worker " + shard + " did not register again within " +
                                                               format_duration(st.options.recovery_window) +
                                                               " of the scheduler's restart"}));
  }
  st.session_claims.erase(claims);
}

/// What a session actor asks for or holds goes back when it ends: the dispatcher monitors it.
void watch_session(Self self, const caf::actor& session) {
  if (self->state.session_actors.insert(session.address()).second) self->monitor(session);
}

/// A session actor ended (its session is over, or its workflow went): whatever it asked for or
/// held goes back. False if `gone` is no session actor.
bool session_gone(Self self, const caf::actor_addr& gone) {
  auto& st = self->state;
  if (st.session_actors.erase(gone) == 0) return false;
  bool found = false;
  std::erase_if(st.asking, [&](const auto& entry) {
    if (entry.second.session.address() != gone) return false;
    st.placement.withdraw(entry.first);
    if (st.options.waits) st.options.waits->post_session(entry.first, {});
    return found = true;
  });
  std::erase_if(st.placed, [&](const auto& entry) {
    if (entry.second.session.address() != gone) return false;
    st.placement.release(entry.first, entry.second.shard);
    return found = true;
  });
  std::erase_if(st.superseded, [&](const auto& entry) {
    if (entry.second.second.session.address() != gone) return false;
    st.placement.release(entry.second.first, entry.second.second.shard);
    return found = true;
  });
  for (auto& [shard, claims] : st.session_claims) {
    std::erase_if(claims, [&](const auto& claim) {
      if (claim.second.session.address() != gone) return false;
      return found = true;
    });
  }
  if (found) place_sessions(self);
  return true;
}

/// The worker actor `gone` ended: the sessions placed on its instance lost their worker.
void sessions_lost(Self self, const caf::actor_addr& gone) {
  auto& st = self->state;
  for (auto it = st.placed.begin(); it != st.placed.end();) {
    if (it->second.worker != gone) {
      ++it;
      continue;
    }
    caf::anon_send(it->second.session, lost_atom::value, it->second.shard,
               std::string("left the cluster (declared dead, stopped, or replaced by a new instance)"));
    st.placement.release(it->first, it->second.shard);
    it = st.placed.erase(it);
  }
  std::erase_if(st.superseded, [&](const auto& entry) {
    if (entry.second.second.worker != gone) return false;
    st.placement.release(entry.second.first, entry.second.second.shard);
    return true;
  });
}

worker_actor start_worker(Self self, WorkerInfo info, std::shared_ptr<WorkerLink> link, Registration how) {
  auto& st = self->state;
  record_registration(self, info, how);
  // What an earlier instance of the shard said or was told is not this one's.
  forget_shard_sessions(st, info.shard_id);
  {
    std::set<std::string> lists;
    for (const auto& [list, slots] : info.task_lists) lists.insert(list);
    st.placement.join(info.shard_id, info.resource_id, info.max_concurrent_sessions, std::move(lists));
    // It takes sessions once its actor says its health and standing let it take tasks.
    st.placement.accepting(info.shard_id, false);
    st.infos[info.shard_id] = info;
  }
  WorkerSetup setup;
  for (const auto& [list, slots] : info.task_lists) setup.matchers.emplace(list, matcher_of(self, list));
  if (auto r = st.options.worker_rates.find(info.shard_id); r != st.options.worker_rates.end()) {
    setup.rate = r->second;
  }
  setup.info = std::move(info);
  setup.link = std::move(link);
  setup.timeouts = st.options.timeouts;
  setup.fences = st.options.fences;
  setup.workflow_closed = st.options.workflow_closed;
  setup.orphans_kept_until = st.recovery_ends;
  setup.book = st.options.book;
  setup.quarantine = st.options.quarantine;
  setup.kill_grace = st.options.kill_grace;
  setup.now_us = st.options.now_us;
  setup.roster = st.options.roster;
  setup.log = st.options.log;
  setup.sessions_accepting = [me = caf::actor_cast<caf::actor>(self), shard = setup.info.shard_id,
                              instance = setup.info.instance_id](bool accepts) {
    caf::anon_send(me, accept_atom::value, shard, instance, accepts);
  };
  setup.sessions_draining = [me = caf::actor_cast<caf::actor>(self), shard = setup.info.shard_id,
                             instance = setup.info.instance_id](SessionDrain drain) {
    caf::anon_send(me, drain_atom::value, shard, instance, static_cast<uint8_t>(drain));
  };
  setup.sessions_found = [me = caf::actor_cast<caf::actor>(self), shard = setup.info.shard_id,
                          instance = setup.info.instance_id](std::vector<std::string> sessions) {
    caf::anon_send(me, claim_atom::value, shard, instance, std::move(sessions));
  };
  const std::string shard = setup.info.shard_id;
  auto worker = spawn_worker(self->system(), std::move(setup));
  self->monitor(worker);
  self->link_to(worker);  // a stopping scheduler stops its worker actors too
  st.workers[shard] = worker;
  if (auto waiting = st.adoptions.find(shard); waiting != st.adoptions.end()) {
    for (auto& [invocation, task] : waiting->second) {
      self->send(worker, adopt_atom::value, std::move(invocation), std::move(task));
    }
    st.adoptions.erase(waiting);
  }
  // Whoever waits for an invocation of this shard to be over asks its actor now, not when the
  // recovery window closes.
  std::vector<std::tuple<std::string, std::string, caf::response_promise>> others;
  for (auto& waiting : std::exchange(st.settle_waiters, {})) {
    auto& [id, executor, promise] = waiting;
    if (executor != shard) {
      others.push_back(std::move(waiting));
      continue;
    }
    self->request(worker, caf::infinite, settled_atom::value, id, executor)
        .then([promise = promise](bool) mutable { promise.deliver(true); },
              [promise = promise](const caf::error&) mutable { promise.deliver(true); });
  }
  st.settle_waiters = std::move(others);
  if (auto claims = st.session_claims.find(shard); claims != st.session_claims.end()) {
    for (auto& [key, asking] : claims->second) give_claim(self, key, shard, asking);
    st.session_claims.erase(claims);
  }
  if (auto cancels = st.pending_cancels.find(shard); cancels != st.pending_cancels.end()) {
    for (const auto& [id, grace_us] : cancels->second) self->send(worker, cancel_atom::value, id, shard, grace_us);
    st.pending_cancels.erase(cancels);
  }
  return worker;
}

void report_lost(Self self, const Invocation& invocation, const task_port& task, const std::string& why,
                 Loss loss) {
  self->send(task, report_atom::value,
             TaskReport{invocation.invocation_id, TaskReport::LOST, {}, "Failover", why, false, loss});
}

/// What a registering worker is told; the fence puts the registration above every dispatch
/// made before it.
RegistrationOutcome registered(Self self, worker_actor worker, bool start_clean) {
  auto& options = self->state.options;
  return RegistrationOutcome{std::move(worker), options.timeouts, start_clean, options.fences->next()};
}

/// The recovery window closed (or moved): questions held for it are asked of the workers that
/// registered meanwhile, or answered (no worker came back: nothing of it runs any more).
void settle_after_recovery(Self self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  if (now < st.recovery_ends) {
    self->delayed_send(self, st.recovery_ends - now, timeout_atom::value, std::string());  // extended
    return;
  }
  for (auto& [id, executor, promise] : std::exchange(st.settle_waiters, {})) {
    auto it = st.workers.find(executor);
    if (it == st.workers.end()) {
      promise.deliver(true);
      continue;
    }
    self->request(it->second, caf::infinite, settled_atom::value, id, executor)
        .then([promise = promise](bool) mutable { promise.deliver(true); },
              [promise = promise](const caf::error&) mutable { promise.deliver(true); });
  }
}

std::string health_name(uint8_t health) {
  return std::string(HealthMachineTraits::name(static_cast<HealthState>(health)));
}

dispatcher_actor::behavior_type dispatcher(Self self, DispatcherOptions options) {
  self->state.options = std::move(options);
  if (!self->state.options.fences) self->state.options.fences = std::make_shared<FenceCounter>();
  self->state.recovery_ends = self->clock().now() + self->state.options.recovery_window;
  if (auto& roster = self->state.options.roster) {
    self->state.seat = RosterSeat(roster, {"dispatcher", "dispatcher", wall_clock_us(), self->address()});
  }
  self->set_down_handler([self](const caf::down_msg& down) {
    if (session_gone(self, down.source)) return;
    sessions_lost(self, down.source);
    tell_sessions_held(self);
    auto& workers = self->state.workers;
    for (auto it = workers.begin(); it != workers.end(); ++it) {
      if (it->second.address() == down.source) {
        self->state.placement.leave(it->first);
        self->state.infos.erase(it->first);
        forget_shard_sessions(self->state, it->first);
        workers.erase(it);
        return;
      }
    }
  });
  return {
      [=](enqueue_atom, task_port task, int32_t priority, const std::string& list, const std::string& avoid,
          const std::string& session) -> caf::result<std::string> {
        return self->delegate(matcher_of(self, list), enqueue_atom::value, std::move(task), priority, list, avoid,
                              session);
      },
      [=](place_atom, SessionAsk& ask) -> caf::result<SessionPlace> {
        auto& st = self->state;
        // Read before the promise is made: making it takes over the message's sender.
        auto session = caf::actor_cast<caf::actor>(self->current_sender());
        watch_session(self, session);
        auto promise = self->make_response_promise<SessionPlace>();
        SessionRequest request{ask.key, ask.resource_id, {ask.task_lists.begin(), ask.task_lists.end()}, ask.avoid_shard,
                               ask.only_shard};
        st.placement.withdraw(ask.key);  // a repeated ask replaces the one before
        st.placement.request(std::move(request));
        st.asking[ask.key] = DispatcherState::Asking{promise, std::move(session)};
        place_sessions(self);
        return promise;
      },
      [=](claim_atom, const std::string& key, const std::string& shard) -> caf::result<SessionPlace> {
        auto& st = self->state;
        auto session = caf::actor_cast<caf::actor>(self->current_sender());
        watch_session(self, session);
        auto promise = self->make_response_promise<SessionPlace>();
        DispatcherState::Asking asking{promise, std::move(session)};
        if (auto closed = st.orphans_closed.find(shard); closed != st.orphans_closed.end() && closed->second.count(key)) {
          promise.deliver(to_caf(Error{Errc::UNAVAILABLE, "worker " + shard + " closed the session: nothing claimed it within " +
                                                              format_duration(st.options.recovery_window) +
                                                              " of the scheduler's restart"}));
          return promise;
        }
        if (st.workers.count(shard) > 0) {
          give_claim(self, key, shard, asking);
          return promise;
        }
        const auto now = self->clock().now();
        auto& claims = st.session_claims[shard];
        if (claims.empty()) self->delayed_send(self, now < st.recovery_ends ? st.recovery_ends - now : caf::timespan(0), timeout_atom::value, shard);
        claims.emplace_back(key, std::move(asking));
        return promise;
      },
      [=](withdraw_atom, const std::string& key) {
        auto& st = self->state;
        st.placement.withdraw(key);
        if (st.options.waits) st.options.waits->post_session(key, {});
        if (auto it = st.asking.find(key); it != st.asking.end()) {
          it->second.promise.deliver(to_caf(Error{Errc::CANCELLED, "the session stopped looking for a worker"}));
          st.asking.erase(it);
        }
      },
      [=](free_atom, const std::string& key, uint64_t id) {
        auto& st = self->state;
        if (auto it = st.placed.find(key); it != st.placed.end() && it->second.id == id) {
          st.placement.release(key, it->second.shard);
          st.placed.erase(it);
        } else if (auto earlier = st.superseded.find(id); earlier != st.superseded.end()) {
          // A placement the session turned down after it was placed again.
          st.placement.release(key, earlier->second.second.shard);
          st.superseded.erase(earlier);
        } else {
          return;  // freed already
        }
        place_sessions(self);
      },
      [=](open_atom, const std::string& shard, SessionOpen& session) -> caf::result<TaskReport> {
        auto it = self->state.workers.find(shard);
        if (it == self->state.workers.end()) {
          return to_caf(Error{Errc::UNAVAILABLE, "worker " + shard + " is gone"});
        }
        return self->delegate(it->second, open_atom::value, std::move(session));
      },
      [=](close_atom, const std::string& shard, const std::string& session) -> caf::result<bool, TaskReport> {
        auto it = self->state.workers.find(shard);
        if (it == self->state.workers.end()) {
          // Not answered for it: its loss (or, after a restart, its claim) decides.
          return to_caf(Error{Errc::UNAVAILABLE, "worker " + shard + " is not registered"});
        }
        return self->delegate(it->second, close_atom::value, session);
      },
      [=](cancel_atom, session_atom, const std::string& shard, const std::string& action) {
        // A worker not registered now runs nothing of the session that anyone waits for: its
        // loss (or, after a restart, its claim) decides.
        if (auto it = self->state.workers.find(shard); it != self->state.workers.end()) {
          self->send(it->second, cancel_atom::value, session_atom::value, action);
        }
      },
      [=](pin_atom, const std::string& session, const std::string& shard, const std::vector<std::string>& lists) {
        for (const auto& list : lists) self->send(matcher_of(self, list), pin_atom::value, session, shard);
      },
      [=](accept_atom, const std::string& shard, const std::string& instance, bool accepts) {
        auto& st = self->state;
        auto info = st.infos.find(shard);
        if (info == st.infos.end() || info->second.instance_id != instance) return;  // a replaced instance
        st.placement.accepting(shard, accepts);
        if (accepts) place_sessions(self);
      },
      [=](claim_atom, const std::string& shard, const std::string& instance, const std::vector<std::string>& sessions) {
        auto info = self->state.infos.find(shard);
        if (info == self->state.infos.end() || info->second.instance_id != instance) return;  // a replaced instance
        hold_found_sessions(self, shard, sessions);
      },
      [=](wake_atom) { close_unclaimed(self); },
      [=](probe_atom) {
        const auto& st = self->state;
        auto probe = std::make_shared<ActorProbe>();
        probe->kind = "dispatcher";
        probe->id = "dispatcher";
        probe->state = self->clock().now() < st.recovery_ends ? "RECOVERING" : "RUNNING";
        probe->mailbox = mailbox_depth(self);
        probe->field("live workers", std::to_string(st.workers.size()));
        probe->field("task lists", std::to_string(st.matchers.size()));
        probe->field("sessions placed", std::to_string(st.placed.size()));
        probe->field("sessions looking for a worker", std::to_string(st.asking.size()));
        size_t adoptions = 0;
        for (const auto& [shard, list] : st.adoptions) adoptions += list.size();
        if (adoptions) probe->field("invocations waiting for their worker to come back", std::to_string(adoptions));
        if (probe->state == "RECOVERING") {
          probe->waits_for = "the workers that ran revived invocations to register again (the recovery window)";
        }
        return ProbeAnswer(std::move(probe));
      },
      [=](drain_atom, const std::string& shard, const std::string& instance, uint8_t raw) {
        auto& st = self->state;
        auto info = st.infos.find(shard);
        if (info == st.infos.end() || info->second.instance_id != instance) return;  // a replaced instance
        st.session_drains[shard] = static_cast<SessionDrain>(raw);
        for (const auto& [key, placed] : st.placed) {
          if (placed.shard == shard) tell_drain(self, placed.session, shard);
        }
      },
      [=](withdraw_atom, task_port task, const std::string& list) {
        self->send(matcher_of(self, list), withdraw_atom::value, std::move(task), list);
      },
      [=](release_atom) {},
      [=](run_atom, Invocation& invocation, task_port task) {
        auto it = self->state.workers.find(invocation.executor);
        if (it == self->state.workers.end()) {
          report_lost(self, invocation, task, "worker " + invocation.executor + " is gone", Loss::NEVER_STARTED);
          return;
        }
        self->send(it->second, run_atom::value, std::move(invocation), std::move(task));
      },
      [=](cancel_atom, const std::string& id, const std::string& executor, int64_t grace_us) {
        auto& st = self->state;
        if (auto it = st.workers.find(executor); it != st.workers.end()) {
          self->send(it->second, cancel_atom::value, id, executor, grace_us);
        } else if (self->clock().now() < st.recovery_ends) {
          st.pending_cancels[executor].emplace_back(id, grace_us);
        }
      },
      [=](adopt_atom, Invocation& invocation, task_port task) {
        auto& st = self->state;
        if (auto it = st.workers.find(invocation.executor); it != st.workers.end()) {
          self->send(it->second, adopt_atom::value, std::move(invocation), std::move(task));
          return;
        }
        const auto now = self->clock().now();
        if (now >= st.recovery_ends) {
          report_lost(self, invocation, task,
                      "worker " + invocation.executor + " did not register again after the scheduler restarted",
                      Loss::MAY_HAVE_STARTED);
          return;
        }
        auto& waiting = st.adoptions[invocation.executor];
        if (waiting.empty()) self->delayed_send(self, st.recovery_ends - now, timeout_atom::value, invocation.executor);
        waiting.emplace_back(std::move(invocation), std::move(task));
      },
      [=](settled_atom, const std::string& id, const std::string& executor) -> caf::result<bool> {
        auto& st = self->state;
        if (auto it = st.workers.find(executor); it != st.workers.end()) {
          return self->delegate(it->second, settled_atom::value, id, executor);
        }
        // No live instance holds it. Before the recovery window closes its worker may still
        // come back with it (it outlives a restart on its lease): ask again then.
        const auto now = self->clock().now();
        if (now >= st.recovery_ends) return true;
        auto promise = self->make_response_promise<bool>();
        if (st.settle_waiters.empty()) self->delayed_send(self, st.recovery_ends - now, timeout_atom::value, std::string());
        st.settle_waiters.emplace_back(id, executor, promise);
        return promise;
      },
      [=](park_atom, const std::string& id, const std::string& executor,
          task_port to) -> caf::result<bool> {
        auto it = self->state.workers.find(executor);
        if (it == self->state.workers.end()) return false;  // its invocations are being lost
        return self->delegate(it->second, park_atom::value, id, executor, std::move(to));
      },
      [=](timeout_atom, const std::string& shard) {
        auto& st = self->state;
        if (shard.empty()) {
          settle_after_recovery(self);
          return;
        }
        expire_claims(self, shard);
        auto waiting = st.adoptions.find(shard);
        if (waiting == st.adoptions.end()) return;
        if (const auto now = self->clock().now(); now < st.recovery_ends) {
          self->delayed_send(self, st.recovery_ends - now, timeout_atom::value, shard);  // extended
          return;
        }
        for (const auto& [invocation, task] : waiting->second) {
          report_lost(self, invocation, task,
                      "worker " + shard + " did not register again within " +
                          format_duration(st.options.recovery_window) + " of the scheduler's restart",
                      Loss::MAY_HAVE_STARTED);
        }
        st.adoptions.erase(waiting);
      },
      [=](recovered_atom, uint64_t revived) {
        auto& st = self->state;
        const auto now = self->clock().now();
        st.recovery_ends = revived == 0 ? now : now + st.options.recovery_window;
        st.revived = true;
        if (!st.found_sessions.empty()) self->send(self, wake_atom::value);
        const int64_t remaining_us =
            std::chrono::duration_cast<std::chrono::microseconds>(st.recovery_ends - now).count();
        for (const auto& [shard, worker] : st.workers) self->send(worker, recovered_atom::value, remaining_us);
        if (revived == 0) {
          for (const auto& [shard, waiting] : st.adoptions) self->send(self, timeout_atom::value, shard);
          for (const auto& [shard, claims] : st.session_claims) self->send(self, timeout_atom::value, shard);
          if (!st.settle_waiters.empty()) self->send(self, timeout_atom::value, std::string());
        }
      },
      [=](operate_atom, const WorkerOrder& order) -> caf::result<WorkerView> {
        if (auto live = self->state.workers.find(order.shard_id); live != self->state.workers.end()) {
          return self->delegate(live->second, operate_atom::value, order);
        }
        auto [ticket, written] = self->state.answers.next(caf::actor_cast<dispatcher_actor>(self));
        auto view = obey_offline(self, order, std::move(written));
        if (!view) return to_caf(view.error());
        auto promise = self->make_response_promise<WorkerView>();
        self->state.answers.hold(ticket, promise, std::move(*view));
        return promise;
      },
      [=](persisted_atom, uint64_t ticket, const caf::error& failed) { self->state.answers.recorded(ticket, failed); },
      [=](view_atom, const std::string& shard) -> caf::result<std::vector<WorkerView>> {
        auto promise = self->make_response_promise<std::vector<WorkerView>>();
        gather_views(self, shard, promise);
        return promise;
      },
      [=](report_atom, const TaskReport&) {},
      [=](wake_atom, uint64_t) {},
      [=](register_atom, WorkerInfo& info, std::shared_ptr<WorkerLink>& link,
          Reply<RegistrationOutcome>& reply) {
        auto& st = self->state;
        auto existing = st.workers.find(info.shard_id);
        if (existing == st.workers.end()) {
          const bool known = !st.known_shards.insert(info.shard_id).second;
          auto worker = start_worker(self, std::move(info), std::move(link), Registration::NEW);
          reply.deliver(registered(self, worker, known));
          return;
        }
        auto current = existing->second;
        auto shared_reply = std::make_shared<Reply<RegistrationOutcome>>(std::move(reply));
        auto pending = std::make_shared<std::pair<WorkerInfo, std::shared_ptr<WorkerLink>>>(std::move(info), std::move(link));
        self->request(current, std::chrono::seconds(5), describe_atom::value)
            .then(
                [=](uint8_t health, const std::string& instance) {
                  auto& s = self->state;
                  auto& [info, link] = *pending;
                  const auto state = static_cast<HealthState>(health);
                  if (instance == info.instance_id) {
                    // The same process on a new connection.
                    record_registration(self, info, Registration::RECONNECTED);
                    self->send(current, register_atom::value, std::move(link));
                    shared_reply->deliver(registered(self, current, false));
                    return;
                  }
                  // One that is shutting down is going away: a new instance (its restart) takes over.
                  const bool replaceable = state == HealthState::MUST_DIE || state == HealthState::STOPPING ||
                                           (state == HealthState::UNHEALTHY && s.options.replace_unhealthy);
                  if (!replaceable) {
                    if (std::exchange(s.refused_instances[info.shard_id], info.instance_id) != info.instance_id) {
                      log_or_none(s.options.log)
                          .warn("worker registration refused: its shard is held by a live instance",
                                {{"worker", info.shard_id}, {"host", info.hostname}, {"pid", info.pid},
                                 {"held_by", instance}, {"health", health_name(health)}});
                    }
                    shared_reply->deliver(fail(
                        Errc::ALREADY_EXISTS,
                        "shard '" + info.shard_id + "' is held by another live worker instance (" +
                            health_name(health) + "); a new instance may take over once the old one is "
                            "declared dead"));
                    return;
                  }
                  self->send(current, kill_atom::value, std::string("replaced by a new instance"), true);
                  auto worker = start_worker(self, std::move(info), std::move(link), Registration::REPLACING);
                  shared_reply->deliver(registered(self, worker, true));
                },
                [=](const caf::error&) {
                  auto& [info, link] = *pending;
                  // The old instance's actor ended (MUST_DIE) before answering.
                  auto worker = start_worker(self, std::move(info), std::move(link), Registration::REPLACING);
                  shared_reply->deliver(registered(self, worker, true));
                });
      },
  };
}

}  // namespace

dispatcher_actor spawn_dispatcher(caf::actor_system& system, DispatcherOptions options) {
  return system.spawn(dispatcher, std::move(options));
}

}  // namespace troupe::actors
