// Error codes shared by every layer. A code exists only where some caller reacts
// differently to it; the message carries the detail a person needs.
#pragma once

#include <cstdint>
#include <string_view>

namespace troupe {

/// Mirrored by `ErrorCode` in common.capnp (checked in errc.cpp). Starts at 1: CAF
/// reserves 0 for "no error", and these codes cross CAF mailboxes later.
enum class Errc : uint8_t {
  INVALID_ARGUMENT = 1,  ///< the caller's input is wrong; retrying the same input fails again
  NOT_FOUND,             ///< the named thing does not exist
  ALREADY_EXISTS,        ///< the named thing exists and may not be created again
  NOT_ALLOWED_IN_STATE,  ///< the operation is valid, but not in the target's current state
  TIMED_OUT,             ///< a deadline passed before the operation completed
  CANCELLED,             ///< the operation was cancelled by request
  OVERLOADED,            ///< temporary resource exhaustion: back off and retry
  DISCONNECTED,          ///< the peer went away: reconnect and retry
  UNIMPLEMENTED,         ///< the peer does not support the operation
  UNAVAILABLE,           ///< the resource cannot be used now (locked, failed, stopped)
  CORRUPTION,            ///< stored data is damaged; fatal for the node that owns it
  INTERNAL,              ///< an unexpected failure; the message has the detail
};

/// Lower-case name of `code`, e.g. "not_found"; "unknown" for values outside the enum.
std::string_view errc_name(Errc code);

}  // namespace troupe
