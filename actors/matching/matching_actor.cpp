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

namespace troupe::actors {
namespace {

struct MatchingState {
  static inline const char* name = "matching";
  std::string task_list;
  ReadyQueue queue;
  /// A queued task and the worker its last attempt failed on (empty: none).
  struct Waiting {
    task_port task;
    std::string avoid;
  };
  std::map<std::string, Waiting> tasks;  // by queue key
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
};

using Self = matching_actor::stateful_pointer<MatchingState>;

std::string key_of(const task_port& task) { return std::to_string(task.id()); }

void release(Self self, const std::string& shard);

/// Posts why the list's tasks wait if that changed since the last post: a few comparisons
/// otherwise, so every handler that may change it calls this.
void post_wait(Self self) {
  auto& st = self->state;
  if (!st.waits) return;
  ListWait now;
  now.workers = static_cast<uint32_t>(st.credit.worker_count());
  now.offering = static_cast<uint32_t>(st.credit.offering_count());
  now.list_rate = st.limits.rate;
  if (!st.queue.empty()) now.hold = st.credit.hold(self->clock().now());
  if (now == st.posted) return;
  st.posted = now;
  st.waits->post(st.task_list, now);
}

/// Grants slots while a task waits and a worker can take one; arms a wake-up when only the
/// rate limit stands in the way.
void match(Self self) {
  auto& st = self->state;
  const auto now = self->clock().now();
  while (!st.queue.empty()) {
    auto it = st.tasks.find(st.queue.peek()->key);
    auto worker = st.credit.assign(now, it->second.avoid);
    if (!worker) {
      auto at = st.credit.next_assign_time(now);
      if (at && !st.wake_armed) {
        st.wake_armed = true;
        self->delayed_send(self, *at - now, wake_atom::value, ++st.wake_generation);
      }
      post_wait(self);
      return;
    }
    (void)st.queue.pop();
    task_port task = std::move(it->second.task);
    st.tasks.erase(it);
    self->request(task, caf::infinite, grant_atom::value, *worker)
        .then([self, shard = *worker](bool taken) {
                if (!taken) release(self, shard);
              },
              [self, shard = *worker](const caf::error&) { release(self, shard); });
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
                                       std::shared_ptr<WaitBoard> waits) {
  auto& st = self->state;
  st.task_list = std::move(task_list);
  st.limits = limits;
  st.waits = std::move(waits);
  if (limits.rate > 0) {
    auto bucket = TokenBucket::create(limits.rate, std::max<uint32_t>(1, limits.burst));
    if (bucket) st.credit = CreditPool(*bucket);
  }
  return {
      [=](enqueue_atom, task_port task, int32_t priority, const std::string&, std::string& avoid) -> std::string {
        auto& s = self->state;
        if (s.queue.empty()) {
          // Nothing waits ahead of it: a free slot is the task's in the answer, without a grant
          // (and without a record of the task waiting).
          if (auto worker = s.credit.assign(self->clock().now(), avoid)) return *worker;
        }
        const std::string key = key_of(task);
        if (s.queue.push(key, priority)) {
          s.tasks.emplace(key, MatchingState::Waiting{std::move(task), std::move(avoid)});
          match(self);
        }
        return std::string();
      },
      [=](withdraw_atom, const task_port& task, const std::string&) {
        auto& s = self->state;
        const std::string key = key_of(task);
        if (s.queue.remove(key)) s.tasks.erase(key);
        post_wait(self);
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
  };
}

}  // namespace

matching_actor spawn_matching(caf::actor_system& system, std::string task_list, MatchingLimits limits,
                              std::shared_ptr<WaitBoard> waits) {
  return system.spawn(matching, std::move(task_list), limits, std::move(waits));
}

}  // namespace troupe::actors
