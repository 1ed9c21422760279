// A task actor's answer to a probe, from its model and the little the actor keeps beside it.
// Plain: tested as a function of its inputs.
#pragma once

#include <cstdint>
#include <string>

#include "actors/system/actor_probe.hpp"
#include "actors/task/task_model.hpp"
#include "schema/definition.hpp"

namespace troupe::actors {

/// What the task actor keeps beside its model that says why it does not move.
struct TaskActorFacts {
  size_t unwritten = 0;   ///< effects waiting for their events to be durable
  bool settling = false;  ///< asking whether the last attempt's invocation is over
  bool frozen = false;    ///< agreed to passivate
  std::string session;    ///< the name of the session it runs in; empty: none
};

ActorProbe probe_task(const TaskModel& model, const TaskSpec& task, const TaskActorFacts& facts, int64_t now_us);

}  // namespace troupe::actors
