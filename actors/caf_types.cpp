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

void set_body(Invocation& invocation, const TaskBody& body) {
  if (const auto* handler = std::get_if<HandlerSpec>(&body)) {
    invocation.handler = handler->name;
    return;
  }
  const auto& shell = std::get<ShellSpec>(body);
  invocation.command = shell.command;
  for (const auto& [name, value] : shell.env) invocation.env.push_back(name + "=" + value);
  invocation.cwd = shell.cwd;
}

}  // namespace troupe::actors
