// A workflow actor's answer to a probe, from its model and what the actor keeps beside it.
// Plain: tested as a function of its inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/system/actor_probe.hpp"
#include "actors/workflow/workflow_model.hpp"

namespace troupe::actors {

struct WorkflowActorFacts {
  size_t unwritten = 0;         ///< effects waiting for their events to be durable
  size_t task_actors = 0;       ///< live task actors
  size_t session_actors = 0;    ///< live session actors
  size_t result_waiters = 0;    ///< clients waiting for its result
  bool passivating = false;     ///< a passivation handshake is under way
};

ActorProbe probe_workflow(const WorkflowModel& model, const WorkflowActorFacts& facts);

}  // namespace troupe::actors
