// Invocation ids: WORKFLOW/TASK/ATTEMPT.DISPATCH. Dispatches count on across attempts and
// reruns, so an id is unique within its workflow and a worker never sees one twice. A task
// name has no '/' (the definition refuses one) and a workflow id may, so an id is read from
// its end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::actors {

inline std::string make_invocation_id(std::string_view workflow_id, std::string_view task_name, uint32_t attempt,
                                      uint32_t dispatch) {
  std::string id;
  id.reserve(workflow_id.size() + task_name.size() + 24);
  id.append(workflow_id).append("/").append(task_name).append("/");
  id.append(std::to_string(attempt)).append(".").append(std::to_string(dispatch));
  return id;
}

/// A session's id, on the scheduler and on its worker: WORKFLOW/SESSION.
inline std::string make_session_key(std::string_view workflow_id, std::string_view session_name) {
  std::string key;
  key.reserve(workflow_id.size() + session_name.size() + 1);
  key.append(workflow_id).append("/").append(session_name);
  return key;
}

struct InvocationIdParts {
  std::string_view workflow_id;
  std::string_view task_name;
};

/// The workflow and task an invocation id names; nullopt for one that is not of that form.
inline std::optional<InvocationIdParts> parse_invocation_id(std::string_view id) {
  const auto last = id.rfind('/');
  if (last == std::string_view::npos || last == 0) return std::nullopt;
  const auto task = id.rfind('/', last - 1);
  if (task == std::string_view::npos || task == 0) return std::nullopt;
  return InvocationIdParts{id.substr(0, task), id.substr(task + 1, last - task - 1)};
}

}  // namespace troupe::actors
