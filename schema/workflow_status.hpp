// A workflow and its tasks as the workflow's history records them, in plain values: what the
// scheduler's describe answers, what clients receive, what the CLI draws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct TaskStatus {
  std::string name;
  std::string state;     ///< a task state, or WAITING before it was scheduled
  uint32_t attempt = 0;
  std::string worker;    ///< the shard of its current or last invocation
  std::string failure;   ///< its last failure's reason
  std::string progress;  ///< its last heartbeat's progress
  bool awaiting_completion = false;  ///< asyncCompletion: handed off, waiting for its token
};

struct WorkflowStatus {
  std::string workflow_id;
  std::string state;
  std::string detail;             ///< the failure reason of a failed workflow
  std::vector<TaskStatus> tasks;  ///< in definition order
};

}  // namespace troupe
