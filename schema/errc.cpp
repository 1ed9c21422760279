// Names of error codes, and the check that Errc mirrors common.capnp's ErrorCode.
#include "schema/errc.hpp"

#include "schema/common.capnp.h"
#include "schema/result.hpp"

namespace troupe {
namespace {

// Errc and the wire enum must agree value for value; capnp enums start at 0, so the
// wire's `none` takes the place CAF reserves.
template <Errc code, schema::ErrorCode wire>
constexpr bool same_value = static_cast<unsigned>(code) == static_cast<unsigned>(wire);
static_assert(same_value<Errc::INVALID_ARGUMENT, schema::ErrorCode::INVALID_ARGUMENT>);
static_assert(same_value<Errc::NOT_FOUND, schema::ErrorCode::NOT_FOUND>);
static_assert(same_value<Errc::ALREADY_EXISTS, schema::ErrorCode::ALREADY_EXISTS>);
static_assert(same_value<Errc::NOT_ALLOWED_IN_STATE, schema::ErrorCode::NOT_ALLOWED_IN_STATE>);
static_assert(same_value<Errc::TIMED_OUT, schema::ErrorCode::TIMED_OUT>);
static_assert(same_value<Errc::CANCELLED, schema::ErrorCode::CANCELLED>);
static_assert(same_value<Errc::OVERLOADED, schema::ErrorCode::OVERLOADED>);
static_assert(same_value<Errc::DISCONNECTED, schema::ErrorCode::DISCONNECTED>);
static_assert(same_value<Errc::UNIMPLEMENTED, schema::ErrorCode::UNIMPLEMENTED>);
static_assert(same_value<Errc::UNAVAILABLE, schema::ErrorCode::UNAVAILABLE>);
static_assert(same_value<Errc::CORRUPTION, schema::ErrorCode::CORRUPTION>);
static_assert(same_value<Errc::INTERNAL, schema::ErrorCode::INTERNAL>);

}  // namespace

std::string_view errc_name(Errc code) {
  switch (code) {
    case Errc::INVALID_ARGUMENT: return "invalid_argument";
    case Errc::NOT_FOUND: return "not_found";
    case Errc::ALREADY_EXISTS: return "already_exists";
    case Errc::NOT_ALLOWED_IN_STATE: return "not_allowed_in_state";
    case Errc::TIMED_OUT: return "timed_out";
    case Errc::CANCELLED: return "cancelled";
    case Errc::OVERLOADED: return "overloaded";
    case Errc::DISCONNECTED: return "disconnected";
    case Errc::UNIMPLEMENTED: return "unimplemented";
    case Errc::UNAVAILABLE: return "unavailable";
    case Errc::CORRUPTION: return "corruption";
    case Errc::INTERNAL: return "internal";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string out(errc_name(code));
  out += ": ";
  out += message;
  return out;
}

}  // namespace troupe
