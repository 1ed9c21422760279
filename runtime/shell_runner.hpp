// Runs shell invocations for a worker's executor: one process group each, output to a
// per-invocation log under the node's log_dir (size-capped), exit code to result or failure
// ("ExitCode:N"), cancellation as SIGTERM then SIGKILL after a grace period.
//
// Heartbeats: a task reports progress by writing it to the file named by $TROUPE_PROGRESS_FILE
// (LOG_DIR/WORKFLOW/TASK.ATTEMPT.DISPATCH.progress). Each change of the file (a rewrite with the
// same content counts) is a heartbeat carrying its content (at most 64 KiB); the file is looked
// at four times per heartbeat timeout, or every second without one. A new attempt finds the
// last progress in that file and in $TROUPE_PROGRESS. A heartbeat answered "cancel requested"
// cancels the task.
//
// Inputs: $TROUPE_INPUT holds the task's input and $TROUPE_WORKFLOW_INPUT the workflow's. One
// larger than max_env_input_bytes goes through a file beside the log instead (TASK.ATTEMPT.
// DISPATCH.input.json, or .workflow-input.json), named by $TROUPE_INPUT_FILE or
// $TROUPE_WORKFLOW_INPUT_FILE, and the variable is left unset: Linux refuses to start a
// program with any one environment string over 128 KiB. The files go when the process ends.
#pragma once

#include <memory>
#include <string>

#include "actors/executor/local_executor.hpp"
#include "runtime/process/process_supervisor.hpp"

namespace troupe::runtime {

struct ShellRunnerOptions {
  std::string log_dir;
  uint64_t log_cap_bytes = uint64_t{16} << 20;
  /// Progress beyond this many bytes is cut off.
  static constexpr size_t max_progress_bytes = 64 * 1024;
  /// An input longer than this (in bytes) is handed over in a file rather than in the
  /// environment: half of Linux's limit on one environment string, so the input variables and
  /// the progress together stay well inside the limit on the whole environment.
  static constexpr size_t max_env_input_bytes = 64 * 1024;
};

/// The log file of an invocation: LOG_DIR/WORKFLOW/TASK.ATTEMPT.DISPATCH.log, each part made
/// safe for a file name.
std::string invocation_log_path(const std::string& log_dir, const actors::Invocation& invocation);

/// A session's directory on its worker, which its actions share: LOG_DIR/sessions/WORKFLOW/
/// SESSION, each part made safe for a file name. Its log is the same path with ".log".
std::string session_directory(const std::string& log_dir, const std::string& workflow_id,
                              const std::string& session_name);

actors::ShellRunner make_shell_runner(std::shared_ptr<ProcessSupervisor> supervisor, ShellRunnerOptions options);

}  // namespace troupe::runtime
