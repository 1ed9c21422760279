// Error <-> caf::error.
#include "actors/caf_types.hpp"

#include <caf/sec.hpp>

namespace troupe::actors {

caf::error to_caf(const Error& error) {
  return caf::error(static_cast<uint8_t>(error.code), troupe_error_category,
                    caf::make_message(error.message));
}

Error from_caf(const caf::error& error) {
  if (error.category() == troupe_error_category) {
    std::string message;
    if (error.context().match_elements<std::string>()) message = error.context().get_as<std::string>(0);
    return Error{static_cast<Errc>(error.code()), std::move(message)};
  }
  if (error == caf::sec::request_timeout) return fail(Errc::TIMED_OUT, "the request timed out");
  return fail(Errc::INTERNAL, "actor error: " + caf::to_string(error));
}

}  // namespace troupe::actors
