// A task's options as an operator changes them while its workflow runs (updateTask): the change
// asked for, checked by the rules of a definition's task, and the options it resolves to, which
// the task's history records (taskOptionsUpdated) and its model applies. Std-only here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "schema/definition.hpp"

namespace troupe::actors {

/// Options that replace a definition's for one task; what is unset keeps the definition's.
struct TaskOverrides {
  std::optional<std::string> task_list;
  std::optional<int32_t> priority;
  std::optional<TimeoutsSpec> timeouts;          ///< all four, normalised
  std::optional<std::optional<RetrySpec>> retry;  ///< set: replaces the policy (nullopt inside: none)

  bool empty() const { return !task_list && !priority && !timeouts && !retry; }
  /// Takes what `later` sets, keeping the rest.
  void merge(const TaskOverrides& later);
  /// `task` with these options in place of its own.
  void apply_to(TaskSpec& task) const;
  /// Every field in a fixed order, for TaskModel::canonical.
  std::string canonical() const;

  friend bool operator==(const TaskOverrides&, const TaskOverrides&) = default;
};

/// Overrides as a task model holds them: shared and never changed once made (most tasks have
/// none, and a model is copied, e.g. by replay). Null: none.
using SharedOverrides = std::shared_ptr<const TaskOverrides>;

/// `base` with `later` merged in.
SharedOverrides merged(const SharedOverrides& base, const TaskOverrides& later);

/// What an operator asks to change, as given (text, so that it is checked like a definition).
/// Plain fields so that it travels in actor messages.
struct TaskOptionsPatch {
  std::string task_list;  ///< empty: unchanged
  bool set_priority = false;
  int32_t priority = 0;
  /// Each a duration ("5m") replacing the task's, "none" removing it, or empty: unchanged.
  std::string schedule_to_start;
  std::string start_to_close;
  std::string schedule_to_close;
  std::string heartbeat;
  /// A retry policy as a definition's JSON object, replacing the task's; empty: unchanged.
  std::string retry_json;
  bool remove_retry = false;  ///< no retry: one attempt

  bool empty() const {
    return task_list.empty() && !set_priority && schedule_to_start.empty() && start_to_close.empty() &&
           schedule_to_close.empty() && heartbeat.empty() && retry_json.empty() && !remove_retry;
  }
};

/// The overrides `patch` makes of `task` (the options the task has now), checked by the rules of
/// a definition's task: INVALID_ARGUMENT listing every problem with its path ("timeouts.heartbeat:
/// is longer than startToClose (1m), so it could never fire"), or for a patch that changes
/// nothing. Only what the patch names is set; the timeouts are set as a whole (normalised).
Result<TaskOverrides> resolve_patch(const TaskSpec& task, const TaskOptionsPatch& patch);

}  // namespace troupe::actors
