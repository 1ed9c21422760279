// What a live actor tells about itself when the admin shell probes it: its state, its backlog,
// its timers and, when it is not moving, what it waits for. Every actor kind answers probe_atom
// with one; the probe travels at high priority, so it overtakes the backlog it measures.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/caf_types.hpp"

namespace troupe::actors {

struct ProbeTimer {
  std::string what;   ///< "heartbeat timeout", "retry backoff", ...
  int64_t at_us = 0;  ///< when it is due, µs since the epoch (0: not known)
};

/// A task list as its matching actor holds it: what waits, and the workers' credit.
struct TaskListView {
  struct Priority {
    int32_t priority = 0;
    uint64_t queued = 0;
  };
  struct Worker {
    std::string name;
    uint32_t slots = 0;
    uint32_t in_use = 0;
  };
  std::vector<Priority> queued;  ///< higher priority first; tasks waiting for a session's worker apart
  uint64_t session_queued = 0;   ///< tasks of pinned or unplaced sessions waiting for their worker
  std::vector<Worker> workers;   ///< by name
  double rate = 0;               ///< the list's limit, tasks started per second; 0: unlimited
  uint32_t burst = 0;
  std::string wait_reason;       ///< why its waiting tasks wait; empty: none waits, or nothing holds them
};

struct ActorProbe {
  std::string kind;  ///< workflow, task, session, worker, matching, directory, dispatcher
  std::string id;    ///< as the roster lists it
  std::string state;
  /// Messages queued behind the probe when the actor read it.
  uint64_t mailbox = 0;
  int64_t started_us = 0;
  std::vector<ProbeTimer> timers;
  /// Its model, name and value each, for people.
  std::vector<std::pair<std::string, std::string>> fields;
  /// Why it does not move on by itself, in words ("a slot in task list 'gpu': all 2 workers
  /// are busy"); empty when it is working, or ended.
  std::string waits_for;
  /// A matching actor's task list.
  std::optional<TaskListView> task_list;
  /// The directory's open workflows that have no actor now (passivated).
  uint64_t passivated_workflows = 0;

  void field(std::string name, std::string value) { fields.emplace_back(std::move(name), std::move(value)); }
};

using ProbeAnswer = std::shared_ptr<const ActorProbe>;

}  // namespace troupe::actors

// Handed between actors of one process only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::ProbeAnswer)

namespace troupe::actors {

/// What every actor answers, whatever else it speaks.
using probe_port = caf::typed_actor<caf::replies_to<probe_atom>::with<ProbeAnswer>>;

/// Messages waiting in `self`'s mailbox, counted from inside the actor (CAF's inbox may only
/// be read by its owner).
template <class Self>
uint64_t mailbox_depth(Self* self) {
  return self->mailbox().size();
}

}  // namespace troupe::actors
