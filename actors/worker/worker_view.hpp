// What the scheduler tells operators about a worker (`troupe workers`, `troupe worker NAME`):
// its durable record joined with what its live instance knows now. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/history_store.hpp"

namespace troupe::actors {

struct TaskListUse {
  std::string name;
  uint32_t slots = 0;
  uint32_t used = 0;  ///< invocations of the list it holds now
};

/// An invocation it ran lately, newest last.
struct RecentInvocation {
  std::string invocation_id;
  std::string task;     ///< WORKFLOW/TASK
  uint32_t attempt = 0;
  std::string outcome;  ///< SUCCEEDED, FAILED (reason), CANCELLED, INTERRUPTED, LOST...
  int64_t ended_us = 0;
};

struct WorkerView {
  std::string shard_id;
  storage::WorkerRecord record;  ///< identity, standing, drain, quarantine, failures
  bool live = false;             ///< an instance is registered now (the fields below are its)
  std::string status;            ///< STARTED, NOT_RESPONDING, STOPPING, STOPPED, DRAINING...
  std::string health;            ///< NEW, HEALTHY...; empty unless live
  std::vector<TaskListUse> task_lists;
  std::vector<std::string> running;  ///< invocation ids it holds
  int64_t last_heartbeat_age_us = -1;  ///< -1 unless live
  std::vector<RecentInvocation> recent;
};

}  // namespace troupe::actors
