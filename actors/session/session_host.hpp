// What a session actor asks of the scheduler's dispatcher, which knows every worker: a worker
// with a free session slot (SessionPlacement), the session opened and closed there, and its
// tasks pinned to it. A typed interface of its own so that session actors need not know the
// rest of the dispatcher.
#pragma once

#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/caf_types.hpp"

namespace troupe::actors {

/// A session actor's request for a worker (SessionPlacement's SessionRequest).
struct SessionAsk {
  std::string key;                     ///< WORKFLOW/SESSION
  std::string resource_id;             ///< empty: any worker
  std::vector<std::string> task_lists;  ///< the worker must serve every one
  std::string avoid_shard;             ///< a recreated session: the worker it lost, last choice
  std::string only_shard;              ///< only this worker (a recreate token's); empty: any
};

/// Where a session was placed.
struct SessionPlace {
  std::string shard;
  std::string instance;     ///< the worker process
  std::string resource_id;  ///< the worker's, if it declared one
  /// Names this placement: a free names the placement it gives back, so a late one (of a
  /// placement the session turned down) never gives back a later placement's slot.
  uint64_t id = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SessionAsk& x) {
  return f(caf::meta::type_name("SessionAsk"), x.key, x.resource_id, x.task_lists, x.avoid_shard, x.only_shard);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SessionPlace& x) {
  return f(caf::meta::type_name("SessionPlace"), x.shard, x.instance, x.resource_id, x.id);
}

using session_host = caf::typed_actor<
    // from a session actor: a worker for the session, answered once one with a free session
    // slot (of its resource, serving its task lists) takes it; the slot is the session's until
    // free_atom, or until the session actor ends. The session actor hears lost_atom(shard, why)
    // if that worker is lost
    caf::replies_to<place_atom, SessionAsk>::with<SessionPlace>,
    // from a session actor revived after a scheduler restart: the session held a slot on worker
    // `shard`; answered once that worker is registered (the session takes its slot again), with
    // the instance that holds the shard now, or with an error once the recovery window closes
    // without it
    caf::replies_to<claim_atom, std::string /* session */, std::string /* shard */>::with<SessionPlace>,
    // from a session actor: stop looking for a worker for the session (key)
    caf::reacts_to<withdraw_atom, std::string>,
    // from a session actor: the session (key) holds the slot of placement `id` no more
    caf::reacts_to<free_atom, std::string, uint64_t /* placement id */>,
    // from a session actor: open or close the session on worker `shard` (see worker_actor)
    caf::replies_to<open_atom, std::string /* shard */, SessionOpen>::with<TaskReport>,
    caf::replies_to<close_atom, std::string /* shard */, std::string /* session */>::with<bool, TaskReport>,
    // from a session actor: stop its envEnter or envExit (invocation id) on worker `shard`, if it
    // runs now (it ends CANCELED)
    caf::reacts_to<cancel_atom, session_atom, std::string /* shard */, std::string /* invocation */>,
    // from a session actor: the session's tasks (of these task lists) dispatch to `shard` only;
    // an empty shard holds them
    caf::reacts_to<pin_atom, std::string /* session */, std::string /* shard */, std::vector<std::string>>>;

}  // namespace troupe::actors
