// Workflow definitions that integration tests submit: shell tasks built from a script.
#pragma once

#include <string>
#include <vector>

namespace troupe::test {

/// A shell task `name` that runs `script` through sh, with `fields` (JSON members, e.g.
/// "\"taskList\": \"gpu\"") added. Neither may contain '"' or '\' unescaped for JSON.
inline std::string shell_task(const std::string& name, const std::string& script, const std::string& fields = "") {
  return R"({"name": ")" + name + R"(", "shell": {"command": ["sh", "-c", ")" + script + R"("]})" +
         (fields.empty() ? "" : ", " + fields) + "}";
}

/// A workflow `name` of the given tasks (JSON objects, e.g. from shell_task), comma-separated.
inline std::string workflow_of(const std::string& name, const std::string& tasks) {
  return R"({"name": ")" + name + R"(", "tasks": [)" + tasks + "]}";
}

/// A session `name` of the given tasks (names), with `fields` (JSON members, e.g. envEnter)
/// added; sessions go in with_sessions.
inline std::string session_of(const std::string& name, const std::vector<std::string>& tasks,
                              const std::string& fields = "") {
  std::string list;
  for (const auto& task : tasks) list += (list.empty() ? "\"" : ", \"") + task + "\"";
  return R"({"name": ")" + name + R"(", "tasks": [)" + list + "]" + (fields.empty() ? "" : ", " + fields) + "}";
}

/// A session action (envEnter, envExit) that runs `script` through sh.
inline std::string shell_action(const std::string& script) {
  return R"({"shell": {"command": ["sh", "-c", ")" + script + R"("]}})";
}

/// A workflow `name` of the given tasks and sessions (JSON objects, comma-separated).
inline std::string workflow_with_sessions(const std::string& name, const std::string& tasks, const std::string& sessions) {
  return R"({"name": ")" + name + R"(", "tasks": [)" + tasks + R"(], "sessions": [)" + sessions + "]}";
}

}  // namespace troupe::test
