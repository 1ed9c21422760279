// The matching actor: ReadyQueue + CreditPool wired to a mailbox. A grant is a request to the
// task, so a task that ended meanwhile bounces it and the slot comes back.
#include "actors/matching/matching_actor.hpp"

#include <map>

#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/matching/credit.hpp"
#include "actors/matching/ready_queue.hpp"
#include "actors/matching/wait_board.hpp"
#include "actors/system/actor_roster.hpp"
#include "schema/duration.hpp"
#include "schema/meters.hpp"

namespace troupe::actors {
namespace {

struct MatchingState {
  static inline const char* name = "matching";
  std::string task_list;
  ReadyQueue queue;
  /// A queued task, the worker its last attempt failed on (empty: none), and its session
  /// (empty: none).
  struct Waiting {
    task_port task;
    std::string avoid;
    std::string session;
  };
  std::map<std::string, Waiting> tasks;  // by queue key
  /// The tasks of each session, waiting for a slot on the session's worker (or for a worker).
  std::map<std::string, ReadyQueue> session_queues;
  /// The worker each open session is pinned to.
  std::map<std::string, std::string> pins;
  CreditPool credit;
  /// The worker actor whose credit each shard's entry holds. A shard's new instance joins
  /// with a new actor while the replaced one may still be on its way out; the old one's late
  /// leave and releases must not touch the newcomer's credit.
  std::map<std::string, caf::actor_addr> holders;
  uint64_t wake_generation = 0;
  bool wake_armed = false;
  MatchingLimits limits;
  /// Where why the waiting tasks wait is posted (nullptr: nowhere), and what was posted last.
  std::shared_ptr<WaitBoard> waits;
  ListWait posted;
  RosterSeat seat;
  /// Where the number of waiting tasks goes (nullptr: nowhere).
  std::shared_ptr<meters::Gauge> depth;
};

using Self = matching_actor::stateful_pointer<MatchingState>;

std::string key_of(const task_port& task) { return std::to_string(task.id()); }

void release(Self self, const std::string& shard);

/// Why the list's tasks wait now (hold NONE while none waits).
ListWait list_wait(Self self) {
  auto& st = self->state;
  ListWait now;
  now.workers = static_cast<uint32_t>(st.credit.worker_count());
  now.offering = static_cast<uint32_t>(st.credit.offering_count());
  now.list_rate = st.limits.rate;
  if (!st.queue.empty()) now.hold = st.credit.hold(self->clock().now());
  return now;
}

/// The task list for a probe: its queue by priority and its workers' credit.
TaskListView view_of(Self self) {
  const auto& st = self->state;
  TaskListView view;
  std::map<int32_t, uint64_t, std::greater<>> by_priority;
  for (const auto& entry : st.queue.entries()) ++by_priority[entry.priority];
  for (const auto& [priority, count] : by_priority) view.queued.push_back({priority, count});
  for (const auto& [session, queue] : st.session_queues) view.session_queued += queue.size();
  for (const auto& [shard, holder] : st.holders) {
    if (auto credit = st.credit.find_worker(shard)) view.workers.push_back({shard, credit->slots, credit->in_use});
  }
  view.rate = st.limits.rate;
  view.burst = st.limits.rate > 0 ? std::max<uint32_t>(1, st.limits.burst) : 0;
  view.wait_reason = wait_reason(st.task_list, list_wait(self));
  return view;
}

/// Posts why the list's tasks wait if that changed since the last post: a few comparisons
/// otherwise, so every handler that may change it calls this. So does every handler that may
/// change how many wait, so it also sets the depth gauge (one relaxed store).
void post_wait(Self self) {
  auto& st = self->state;
  if (st.depth) st.depth->set(static_cast<int64_t>(st.tasks.size()));
  if (!st.waits) return;
  ListWait now = list_wait(self);
  if (now == st.posted) return;
  st.posted = now;
  st.waits->post(st.task_list, now);
}

/// Grants `key`'s slot on `worker` (taken already).
void grant(Self self, const std::string& key, const std::string& worker) {
  auto& st = self->state;
  auto it = st.tasks.find(key);
  task_port task = std::move(it->second.task);
  st.tasks.erase(it);
  self->request(task, caf::infinite, grant_atom::value, worker)
      .then([self, shard = worker](bool taken) {
              if (!taken) release(self, shard);
            },
            [self, shard = worker](const caf::error&) { release(self, shard); });
}

/// Arms a wake-up for when the rate limits allow the next grant, if they are what stands in
/// the way.
void wake_when_allowed(Self self, caf::actor_clock::time_point now) {
  auto& st = self->state;
  auto at = st.credit.next_assign_time(now);
  if (at && !st.wake_armed) {
    st.wake_armed = true;
    self->delayed_send(self, *at - now, wake_atom::value, ++st.wake_generation);
  }
}

/// Grants the slots of pinned sessions' workers to their tasks, best first per session.
void match_sessions(Self self, caf::actor_clock::time_point now) {
  auto& st = self->state;
  for (auto& [session, queue] : st.session_queues) {
    auto pin = st.pins.find(session);
    if (pin == st.pins.end()) continue;
    while (!queue.empty()) {
      if (!st.credit.assign_to(pin->second, now)) {
        wake_when_allowed(self, now);
        break;
      }
      grant(self, queue.pop()->key, pin->second);
    }
  }
  std::erase_if(st.session_queues, [](const auto& entry) { return entry.second.empty(); });
}

/// Grants slots while a task waits and a worker can take one; arms a wake-up when only the
/// rate limit stands in the way.
void match(Self self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  if (!st.session_queues.empty()) match_sessions(self, now);
  while (!st.queue.empty()) {
    auto it = st.tasks.find(st.queue.peek()->key);
    auto worker = st.credit.assign(now, it->second.avoid);
    if (!worker) {
      wake_when_allowed(self, now);
      post_wait(self);
      return;
    }
    grant(self, st.queue.pop()->key, *worker);
  }
  post_wait(self);
}

void release(Self self, const std::string& shard) {
  if (self->state.credit.release(shard)) match(self);
}

/// Whether the message being handled comes from the worker actor holding `shard`'s credit.
bool from_holder(Self self, const std::string& shard) {
  auto it = self->state.holders.find(shard);
  return it != self->state.holders.end() &&
         it->second == caf::actor_cast<caf::actor_addr>(self->current_sender());
}

matching_actor::behavior_type matching(Self self, std::string task_list, MatchingLimits limits,
                                       std::shared_ptr<WaitBoard> waits, std::shared_ptr<ActorRoster> roster,
                                       std::shared_ptr<meters::Gauge> depth) {
  auto& st = self->state;
  st.task_list = std::move(task_list);
  if (roster) {
    st.seat = RosterSeat(roster, {"matching", st.task_list, wall_clock_us(), self->address()});
  }
  st.limits = limits;
  st.waits = std::move(waits);
  st.depth = std::move(depth);
  if (limits.rate > 0) {
    auto bucket = TokenBucket::create(limits.rate, std::max<uint32_t>(1, limits.burst));
    if (bucket) st.credit = CreditPool(*bucket);
  }
  return {
      [=](enqueue_atom, task_port task, int32_t priority, const std::string&, std::string& avoid,
          std::string& session) -> std::string {
        auto& s = self->state;
        if (!session.empty()) {
          const std::string key = key_of(task);
          auto pin = s.pins.find(session);
          auto& queue = s.session_queues[session];
          if (pin != s.pins.end() && queue.empty() && s.credit.assign_to(pin->second, self->clock().now())) {
            return pin->second;
          }
          if (queue.push(key, priority)) {
            s.tasks.emplace(key, MatchingState::Waiting{std::move(task), std::move(avoid), std::move(session)});
            match(self);
          }
          return std::string();
        }
        if (s.queue.empty()) {
          // Nothing waits ahead of it: a free slot is the task's in the answer, without a grant
          // (and without a record of the task waiting).
          if (auto worker = s.credit.assign(self->clock().now(), avoid)) return *worker;
        }
        const std::string key = key_of(task);
        if (s.queue.push(key, priority)) {
          s.tasks.emplace(key, MatchingState::Waiting{std::move(task), std::move(avoid), std::string()});
          match(self);
        }
        return std::string();
      },
      [=](withdraw_atom, const task_port& task, const std::string&) {
        auto& s = self->state;
        const std::string key = key_of(task);
        auto it = s.tasks.find(key);
        if (it != s.tasks.end()) {
          if (it->second.session.empty()) {
            (void)s.queue.remove(key);
          } else if (auto q = s.session_queues.find(it->second.session); q != s.session_queues.end()) {
            (void)q->second.remove(key);
          }
          s.tasks.erase(it);
        }
        post_wait(self);
      },
      [=](pin_atom, const std::string& session, const std::string& shard) {
        auto& s = self->state;
        if (shard.empty()) {
          s.pins.erase(session);
        } else {
          s.pins[session] = shard;
          match(self);
        }
      },
      [=](join_atom, const std::string& shard, uint32_t slots, double rate) {
        auto& s = self->state;
        if (!from_holder(self, shard)) {
          // A new instance of the shard: it starts with its own credit. What the old one held
          // is failed over by the old one's actor, whose later releases are ignored.
          s.credit.remove_worker(shard);
          s.holders[shard] = caf::actor_cast<caf::actor_addr>(self->current_sender());
        }
        if (s.credit.find_worker(shard)) {
          (void)s.credit.set_slots(shard, slots);
        } else {
          TokenBucket bucket;
          if (rate > 0) {
            if (auto b = TokenBucket::create(rate, std::max<uint32_t>(1, static_cast<uint32_t>(rate)))) bucket = *b;
          }
          (void)s.credit.add_worker(shard, slots, bucket);
        }
        match(self);
      },
      [=](leave_atom, const std::string& shard) {
        if (!from_holder(self, shard)) return;  // replaced already: its credit is gone
        self->state.credit.remove_worker(shard);
        self->state.holders.erase(shard);
        post_wait(self);
      },
      [=](release_atom, const std::string& shard) {
        if (from_holder(self, shard)) release(self, shard);
      },
      [=](claim_atom, const std::string& shard) {
        if (from_holder(self, shard) && self->state.credit.claim(shard)) post_wait(self);
      },
      [=](wake_atom, uint64_t generation) {
        if (generation != self->state.wake_generation) return;
        self->state.wake_armed = false;
        match(self);
      },
      [=](probe_atom) {
        auto probe = std::make_shared<ActorProbe>();
        probe->kind = "matching";
        probe->id = self->state.task_list;
        probe->mailbox = mailbox_depth(self);
        probe->task_list = view_of(self);
        const auto& view = *probe->task_list;
        uint64_t queued = view.session_queued;
        for (const auto& p : view.queued) queued += p.queued;
        probe->state = queued ? "TASKS_WAITING" : "IDLE";
        probe->field("queued", std::to_string(queued));
        probe->field("workers", std::to_string(view.workers.size()));
        probe->waits_for = view.wait_reason;
        return ProbeAnswer(std::move(probe));
      },
  };
}

}  // namespace

matching_actor spawn_matching(caf::actor_system& system, std::string task_list, MatchingLimits limits,
                              std::shared_ptr<WaitBoard> waits, std::shared_ptr<ActorRoster> roster,
                              std::shared_ptr<meters::Gauge> depth) {
  return system.spawn(matching, std::move(task_list), limits, std::move(waits), std::move(roster), std::move(depth));
}

}  // namespace troupe::actors
