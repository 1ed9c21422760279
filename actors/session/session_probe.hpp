// A session actor's answer to a probe. Plain: tested as a function of its inputs.
#pragma once

#include <cstddef>

#include "actors/session/session_model.hpp"
#include "actors/system/actor_probe.hpp"
#include "schema/definition.hpp"

namespace troupe::actors {

ActorProbe probe_session(const SessionModel& model, const SessionSpec& spec, size_t unwritten);

}  // namespace troupe::actors
