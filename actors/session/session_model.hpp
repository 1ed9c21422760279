// A session instance's state, changed only by applying its history events, each of which is one
// event its table took (session_machine.hpp). The session actor applies each event as it
// persists it; replay applies the stored ones; both reach the same state, which canonical()
// prints for comparison.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "actors/history_events.hpp"
#include "actors/session/session_machine.hpp"

namespace troupe::actors {

/// The table event a session history body records; nullopt for a body that is no session event.
std::optional<SessionEvent> session_event_of(schema::EventBody::Reader body);

struct SessionModel {
  std::string name;
  SessionState state = SessionState::WAITING;
  uint32_t attempt = 0;              ///< its current placement's: 1, one more per recreation or move
  uint32_t moves = 0;                ///< times it left a drained worker (no recreations: not counted as one)
  std::string worker;                ///< the shard that holds it, or held it when it was lost
  std::string instance;              ///< that worker's process
  std::string resource;              ///< that worker's resource id, if it declared one
  std::string recreate_token;        ///< lets a later session take over its resource
  int64_t creation_deadline_us = 0;  ///< while CREATING: when its creation times out; 0: never
  int64_t creation_timeout_us = 0;   ///< its creationTimeout (a move looks for a worker that long); 0: none
  int64_t first_placed_us = 0;       ///< its execution timeout counts from here; 0: never placed
  bool execution_timed_out = false;  ///< its execution timeout fired (once is all it does)
  int64_t lost_us = 0;               ///< while REESTABLISHING: when its worker was lost
  std::string lost_reason;
  uint32_t reestablished = 0;        ///< times its worker's resource came back for it
  bool entered = false;              ///< envEnter succeeded (or there was none) on its current worker
  std::string enter_failure;         ///< how envEnter failed ("reason: details"); empty: it did not
  std::optional<bool> exit_succeeded;  ///< envExit's outcome, once it ended
  std::string exit_failure;
  /// Why it failed (the first cause: a timeout, envEnter, a task, its worker); empty otherwise.
  std::string failure_reason;
  std::string failure_details;
  int64_t ended_us = 0;  ///< when it reached CLOSED or FAILED; 0: not yet
  uint64_t applied = 0;  ///< events applied

  /// Applies one of this session's events. NOT_ALLOWED_IN_STATE for an event its table ignores
  /// in its state (a history troupe cannot have written: the actor records only what the table
  /// takes), INVALID_ARGUMENT for a body that is no session event.
  Result<void> apply(const EventView& event);

  /// "reason: details", or the reason alone.
  std::string failure_message() const;
  /// Every field in a fixed order, for comparing a live model with a replayed one.
  std::string canonical() const;
};

}  // namespace troupe::actors
