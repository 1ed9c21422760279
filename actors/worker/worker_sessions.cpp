// The worker actor's part in sessions: it carries a session actor's openSession and closeSession
// to its worker over the link and passes the answers back.
#include "actors/worker/worker_actor_state.hpp"

namespace troupe::actors::worker_detail {
namespace {

/// The link's callback for call `call`: the answer goes back to the actor as a message.
template <class T>
auto answer_to(Self self, uint64_t call) {
  auto me = caf::actor_cast<worker_actor>(self);
  return [me, call](Result<T> answer) {
    if (!answer) {
      caf::anon_send(me, session_atom::value, call, false, TaskReport{}, to_caf(answer.error()));
    } else if constexpr (std::is_same_v<T, TaskReport>) {
      caf::anon_send(me, session_atom::value, call, true, std::move(*answer), caf::error{});
    } else {
      const bool ran = answer->has_value();
      caf::anon_send(me, session_atom::value, call, ran, ran ? std::move(**answer) : TaskReport{}, caf::error{});
    }
  };
}

}  // namespace

caf::result<TaskReport> open_session(Self self, SessionOpen session) {
  auto& st = self->state;
  if (st.health == HealthState::MUST_DIE || st.replaced) {
    return to_caf(Error{Errc::UNAVAILABLE, "worker " + st.setup.info.shard_id + " is gone"});
  }
  const uint64_t call = ++st.session_calls;
  auto promise = self->make_response_promise<TaskReport>();
  st.session_opens.emplace(call, promise);
  st.setup.link->open_session(session, answer_to<TaskReport>(self, call));
  return promise;
}

caf::result<bool, TaskReport> close_session(Self self, const std::string& session) {
  auto& st = self->state;
  if (st.health == HealthState::MUST_DIE || st.replaced) {
    return to_caf(Error{Errc::UNAVAILABLE, "worker " + st.setup.info.shard_id + " is gone"});
  }
  const uint64_t call = ++st.session_calls;
  auto promise = self->make_response_promise<bool, TaskReport>();
  st.session_closes.emplace(call, promise);
  st.setup.link->close_session(session, answer_to<std::optional<TaskReport>>(self, call));
  return promise;
}

void session_answered(Self self, uint64_t call, bool ran, TaskReport outcome, const caf::error& failed) {
  auto& st = self->state;
  if (auto open = st.session_opens.find(call); open != st.session_opens.end()) {
    if (failed) {
      open->second.deliver(failed);
    } else {
      open->second.deliver(std::move(outcome));
    }
    st.session_opens.erase(open);
  } else if (auto close = st.session_closes.find(call); close != st.session_closes.end()) {
    if (failed) {
      close->second.deliver(failed);
    } else {
      close->second.deliver(ran, std::move(outcome));
    }
    st.session_closes.erase(close);
  }
}

}  // namespace troupe::actors::worker_detail
