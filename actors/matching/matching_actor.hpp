// The matching actor of one task list: its ready queue (priority, then age), the credit of
// every worker serving it (a worker never gets more invocations than its free slots), and the
// token buckets that limit the list's dispatch rate globally and per worker. Tasks wait here,
// their scheduleToStart timeout running, while no worker serves the list. A session's tasks
// wait in a queue of their own until the session is pinned to a worker, and go to it alone.
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/typed_actor.hpp>

#include "actors/caf_types.hpp"
#include "actors/ports.hpp"
#include "actors/system/actor_probe.hpp"

namespace troupe::meters {
class Gauge;
}  // namespace troupe::meters

namespace troupe::actors {

using matching_actor = caf::typed_actor<
    // from a task (delegated by the dispatcher): a free slot's worker now, or empty: the task
    // waits for a grant (see executor_actor)
    caf::replies_to<enqueue_atom, task_port, int32_t /* priority */, std::string /* task list */,
                    std::string /* avoid */, std::string /* session */>::with<std::string>,
    // from a task: stop waiting
    caf::reacts_to<withdraw_atom, task_port, std::string>,
    // from a worker actor: it serves this list with `slots` (0 while unhealthy), at most
    // `rate` invocations per second (0: unlimited). A join from another actor for the same
    // shard (a new instance) starts the shard's credit afresh; leave and release count only
    // from the actor that joined last.
    caf::reacts_to<join_atom, std::string /* shard */, uint32_t /* slots */, double /* rate */>,
    // from a worker actor: it is gone; its slots with it
    caf::reacts_to<leave_atom, std::string /* shard */>,
    // from a worker actor: one of its invocations of this list ended
    caf::reacts_to<release_atom, std::string /* shard */>,
    // from a worker actor: it took back an invocation it runs (after a scheduler restart),
    // which holds a slot until released like any other
    caf::reacts_to<claim_atom, std::string /* shard */>,
    // its own timer: the rate limit allows the next grant
    caf::reacts_to<wake_atom, uint64_t /* generation */>,
    // from the dispatcher, for a session actor: the session's tasks go to `shard` only, from
    // now on (it is open there); an empty shard holds them (it is not open anywhere)
    caf::reacts_to<pin_atom, std::string /* session */, std::string /* shard */>>::extend_with<probe_port>;

struct MatchingLimits {
  /// Invocations of the task list started per second across all workers; 0: unlimited.
  double rate = 0;
  uint32_t burst = 1;
};

class WaitBoard;
class ActorRoster;

/// `waits`, if given, is where the actor posts why the list's waiting tasks wait (a ListWait),
/// each time that changes; `roster`, if given, where it takes a seat while it lives; `depth`, if
/// given, where it sets the number of tasks waiting, for the metrics.
matching_actor spawn_matching(caf::actor_system& system, std::string task_list, MatchingLimits limits,
                              std::shared_ptr<WaitBoard> waits = nullptr, std::shared_ptr<ActorRoster> roster = nullptr,
                              std::shared_ptr<meters::Gauge> depth = nullptr);

}  // namespace troupe::actors
