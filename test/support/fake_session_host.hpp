// A stand-in for the dispatcher's session side in actor tests: one worker (the fixture's
// executor, "local") with as many session slots as asked for, whose envEnter and envExit
// outcomes a seeded generator decides. A test can lose that worker (lost_atom): every session
// placed on it hears so, as from a worker that died, and the worker comes back as a new
// process. Tasks run on the fixture's executor whatever the pinning says.
#pragma once

#include <caf/actor_cast.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <random>
#include <string>

#include "actors/caf_types.hpp"
#include "actors/session/session_actor.hpp"
#include "actors/session/session_host.hpp"

namespace troupe::test {

using fake_session_host = actors::session_host::extend<caf::reacts_to<actors::lost_atom>>;

struct FakeSessionHostOptions {
  uint64_t seed = 0;
  int unplaced_one_in = 0;   ///< a request for a worker is never answered one time in N (0: never)
  int enter_fails_one_in = 0;  ///< envEnter fails one time in N
  int enter_hangs_one_in = 0;  ///< envEnter runs until cancelled one time in N
  int exit_fails_one_in = 0;   ///< envExit fails one time in N
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
        st.placed[ask.key] = self->current_sender();
        return st.place();
      },
      [=](claim_atom, const std::string& key, const std::string&) -> caf::result<SessionPlace> {
        self->state.placed[key] = self->current_sender();
        return self->state.place();
      },
      [=](withdraw_atom, const std::string&) {},
      [=](free_atom, const std::string& key, uint64_t) { self->state.placed.erase(key); },
      [=](open_atom, const std::string&, const SessionOpen& open) -> caf::result<TaskReport> {
        auto& st = self->state;
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
        return caf::result<bool, TaskReport>(true, outcome(!fails, "ExitFailed"));
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
        ++st.instance;
      },
  };
}

}  // namespace troupe::test
