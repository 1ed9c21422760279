// Workflow definitions that integration tests submit: shell tasks built from a script.
#pragma once

#include <string>

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

}  // namespace troupe::test
