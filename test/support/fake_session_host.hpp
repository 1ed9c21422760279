// A stand-in for the dispatcher's session side in actor tests: one worker (the fixture's
// executor, "local") with as many session slots as asked for, whose envEnter and envExit
// outcomes a seeded generator decides. A test can lose that worker (lost_atom): every session
// placed on it hears so, as from a worker that died, and the worker comes back as a new
// process. A test can drain that worker too (drain_atom, eventual or immediate): every session
// placed on it hears so, as from the dispatcher, and like a drained worker it takes no session
// until it is undrained (accept_atom): requests for a worker wait, or their creation timeout
// ends them. An envExit may take a while, so that a session moving off a drained worker (or
// closing) meets whatever happens meanwhile. Tasks run on the fixture's executor whatever the
// pinning says.
#pragma once

#include <caf/actor_cast.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <optional>
#include <random>
#include <string>

#include "actors/caf_types.hpp"
#include "actors/session/session_actor.hpp"
#include "actors/session/session_host.hpp"

namespace troupe::test {

using fake_session_host = actors::session_host::extend<
    caf::reacts_to<actors::lost_atom>,
    // the worker is drained (again: an eventual drain whose deadline passed is an immediate one)
    caf::reacts_to<actors::drain_atom, bool /* immediate */>,
    // the worker takes sessions again
    caf::reacts_to<actors::accept_atom>,
    // its own: a slow envExit ends (session key, which close)
    caf::reacts_to<actors::timeout_atom, std::string, uint64_t>>;

struct FakeSessionHostOptions {
  uint64_t seed = 0;
  int unplaced_one_in = 0;   ///< a request for a worker is never answered one time in N (0: never)
  int enter_fails_one_in = 0;  ///< envEnter fails one time in N
  int enter_hangs_one_in = 0;  ///< envEnter runs until cancelled one time in N
  int exit_fails_one_in = 0;   ///< envExit fails one time in N
  int exit_slow_one_in = 0;    ///< envExit takes 1-10s one time in N (0: never)
};

/// A close whose envExit takes a while: answered when it ends, or at once if it is cancelled.
struct SlowExit {
  uint64_t id = 0;
  caf::typed_response_promise<bool, actors::TaskReport> promise;
  actors::TaskReport outcome;
};

struct FakeSessionHostState {
  static inline const char* name = "fake_session_host";
  FakeSessionHostOptions options;
  std::mt19937_64 rng;
  uint32_t instance = 1;
  uint64_t next_id = 1;
  std::map<std::string, caf::strong_actor_ptr> placed;  ///< session key -> its actor
  /// Opens whose envEnter runs until cancelled: session key -> (envEnter's id, the answer).
  std::map<std::string, std::pair<std::string, caf::typed_response_promise<actors::TaskReport>>> hanging;
  /// The drain on the worker, if one is: whether it is immediate.
  std::optional<bool> drain;
  /// Requests for a worker that wait for the drain's end: session key -> (its actor, the answer).
  std::map<std::string, std::pair<caf::strong_actor_ptr, caf::typed_response_promise<actors::SessionPlace>>> waiting;
  /// Each opened session's envExit invocation id (empty: it has none), as its last open said.
  std::map<std::string, std::string> exit_ids;
  std::map<std::string, SlowExit> slow_exits;  ///< session key -> its close under way
  uint64_t next_close = 1;  ///< names each slow close: the timer of one cancelled or lost does nothing

  bool one_in(int n) { return n > 0 && rng() % static_cast<uint64_t>(n) == 0; }
  actors::SessionPlace place() {
    return actors::SessionPlace{"local", "i" + std::to_string(instance), "", next_id++};
  }
};

inline fake_session_host::behavior_type fake_session_host_behavior(
    fake_session_host::stateful_pointer<FakeSessionHostState> self, FakeSessionHostOptions options) {
  using namespace actors;
  self->state.options = options;
  self->state.rng.seed(options.seed);
  auto outcome = [](bool ok, const std::string& reason) {
    TaskReport report;
    report.kind = ok ? TaskReport::SUCCEEDED : TaskReport::FAILED;
    if (!ok) report.reason = reason;
    return report;
  };
  return {
      [=](place_atom, const SessionAsk& ask) -> caf::result<SessionPlace> {
        auto& st = self->state;
        if (st.one_in(st.options.unplaced_one_in)) {
          // Never answered: its creation timeout decides (the promise ends with this actor).
          auto never = self->make_response_promise<SessionPlace>();
          (void)never;
          return never;
        }
        if (st.drain) {
          // A drained worker takes no session: answered once it is undrained.
          auto later = self->make_response_promise<SessionPlace>();
          st.waiting.insert_or_assign(ask.key, std::make_pair(self->current_sender(), later));
          return later;
        }
        st.placed[ask.key] = self->current_sender();
        return st.place();
      },
      [=](claim_atom, const std::string& key, const std::string&) -> caf::result<SessionPlace> {
        auto& st = self->state;
        st.placed[key] = self->current_sender();
        auto promise = self->make_response_promise<SessionPlace>();
        promise.deliver(st.place());
        if (st.drain) {
          // As the dispatcher does: after the answer, so that the session is back there first.
          self->send(caf::actor_cast<session_actor>(self->current_sender()), drain_atom::value, std::string("local"),
                     *st.drain);
        }
        return promise;
      },
      [=](withdraw_atom, const std::string& key) { self->state.waiting.erase(key); },
      [=](free_atom, const std::string& key, uint64_t) { self->state.placed.erase(key); },
      [=](open_atom, const std::string&, const SessionOpen& open) -> caf::result<TaskReport> {
        auto& st = self->state;
        st.exit_ids[open.id] = open.env_exit.invocation_id;
        if (!open.env_enter.invocation_id.empty() && st.one_in(st.options.enter_hangs_one_in)) {
          auto promise = self->make_response_promise<TaskReport>();
          st.hanging.insert_or_assign(open.id, std::make_pair(open.env_enter.invocation_id, promise));
          return promise;
        }
        const bool fails = !open.env_enter.invocation_id.empty() && st.one_in(st.options.enter_fails_one_in);
        return outcome(!fails, "EnterFailed");
      },
      [=](close_atom, const std::string&, const std::string& key) -> caf::result<bool, TaskReport> {
        auto& st = self->state;
        if (auto it = st.hanging.find(key); it != st.hanging.end()) {
          // A real worker runs envExit only once envEnter ended: here the close cuts it short.
          TaskReport cancelled;
          cancelled.kind = TaskReport::CANCELLED;
          it->second.second.deliver(cancelled);
          st.hanging.erase(it);
        }
        const bool fails = st.one_in(st.options.exit_fails_one_in);
        // A second close (a revived session's) takes over the one under way: it ends as that would.
        if (st.slow_exits.count(key) > 0 || (!st.exit_ids[key].empty() && st.one_in(st.options.exit_slow_one_in))) {
          auto promise = self->make_response_promise<bool, TaskReport>();
          auto [it, fresh] = st.slow_exits.try_emplace(key);
          it->second.promise = promise;
          if (fresh) {
            it->second.id = st.next_close++;
            it->second.outcome = outcome(!fails, "ExitFailed");
            self->delayed_send(self, std::chrono::seconds(1 + st.rng() % 10), timeout_atom::value, key, it->second.id);
          }
          return promise;
        }
        return caf::result<bool, TaskReport>(true, outcome(!fails, "ExitFailed"));
      },
      [=](timeout_atom, const std::string& key, uint64_t id) {
        auto& st = self->state;
        auto it = st.slow_exits.find(key);
        if (it == st.slow_exits.end() || it->second.id != id) return;  // cancelled or lost meanwhile
        it->second.promise.deliver(true, it->second.outcome);
        st.slow_exits.erase(it);
      },
      [=](cancel_atom, session_atom, const std::string&, const std::string& invocation) {
        auto& st = self->state;
        for (auto it = st.hanging.begin(); it != st.hanging.end(); ++it) {
          if (it->second.first != invocation) continue;
          TaskReport cancelled;
          cancelled.kind = TaskReport::CANCELLED;
          it->second.second.deliver(cancelled);
          st.hanging.erase(it);
          return;
        }
        for (auto it = st.slow_exits.begin(); it != st.slow_exits.end(); ++it) {
          if (st.exit_ids[it->first] != invocation) continue;
          TaskReport cancelled;
          cancelled.kind = TaskReport::CANCELLED;
          it->second.promise.deliver(true, cancelled);
          st.slow_exits.erase(it);
          return;
        }
      },
      [=](pin_atom, const std::string&, const std::string&, const std::vector<std::string>&) {},
      [=](lost_atom) {
        // The worker died: its sessions hear so, a hanging envEnter goes with it, and it comes
        // back as another process.
        auto& st = self->state;
        for (auto& [key, actor] : st.placed) {
          self->send(caf::actor_cast<session_actor>(actor), lost_atom::value, std::string("local"),
                     std::string("the worker died"));
        }
        st.placed.clear();
        for (auto& [key, hanging] : st.hanging) {
          hanging.second.deliver(caf::make_error(caf::sec::request_receiver_down));
        }
        st.hanging.clear();
        for (auto& [key, exit] : st.slow_exits) {
          exit.promise.deliver(caf::make_error(caf::sec::request_receiver_down));
        }
        st.slow_exits.clear();
        ++st.instance;
      },
      [=](drain_atom, bool immediate) {
        auto& st = self->state;
        st.drain = immediate;
        for (auto& [key, actor] : st.placed) {
          self->send(caf::actor_cast<session_actor>(actor), drain_atom::value, std::string("local"), immediate);
        }
      },
      [=](accept_atom) {
        auto& st = self->state;
        st.drain.reset();
        for (auto& [key, waiting] : st.waiting) {
          st.placed[key] = waiting.first;
          waiting.second.deliver(st.place());
        }
        st.waiting.clear();
      },
  };
}

}  // namespace troupe::test
