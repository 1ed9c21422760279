// When a session's timers are due, and what the end of its re-establishment window leads to,
// computed from its model and definition alone: the session actor arms them from these, and a
// session revived after a restart (or from passivation) arms each for the time that is left,
// so a timeout fires when it would have fired had the actor never gone.
#pragma once

#include <cstdint>
#include <vector>

#include "actors/session/session_model.hpp"
#include "schema/definition.hpp"

namespace troupe::actors {

enum class SessionTimer : uint8_t {
  CREATION,     ///< CREATION_TIMED_OUT: creationTimeout after it began looking for a worker
  EXECUTION,    ///< EXECUTION_TIMED_OUT: executionTimeout after its first placement
  REESTABLISH,  ///< the end of the window for its lost worker's resource to come back
};

struct SessionDue {
  SessionTimer timer;
  int64_t at_us;  ///< microseconds since the Unix epoch; may be in the past
};

/// The timers a session in `model`'s state holds, each due when its history says.
std::vector<SessionDue> session_timers(const SessionModel& model, const SessionSpec& spec);

/// What a session whose re-establishment window ended does: RECREATE while its definition
/// recreates and recreations are left (maxRecreates counts recreations, not the first
/// placement), ABANDON otherwise.
SessionEvent after_window(const SessionModel& model, const SessionSpec& spec);

}  // namespace troupe::actors
