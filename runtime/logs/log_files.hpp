// Where a worker keeps the logs of its invocations (shell tasks and session actions), and how
// it reads one back for `troupe logs`, named by invocation id only, never by a path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe::runtime {

/// `part` as one file name component: bytes other than letters, digits, '-', '_' and '.' become
/// '_', and "", "." and ".." get a '_' in front, so it can neither climb nor name a directory.
std::string safe_file_name(std::string_view part);

/// The log of invocation `invocation_id` (WORKFLOW/TASK/ATTEMPT.DISPATCH) of task `task_name` of
/// workflow `workflow_id`: LOG_DIR/WORKFLOW/TASK.ATTEMPT.DISPATCH.log, each part made safe.
std::string invocation_log_path(std::string_view log_dir, std::string_view workflow_id, std::string_view task_name,
                                std::string_view invocation_id);

/// The same from the id alone. INVALID_ARGUMENT for an id not of the form
/// WORKFLOW/TASK/ATTEMPT.DISPATCH.
Result<std::string> invocation_log_path(std::string_view log_dir, std::string_view invocation_id);

/// A byte range of a log.
struct LogRange {
  std::string data;
  uint64_t next_offset = 0;  ///< where the next read starts: the offset asked plus data's size
  uint64_t size = 0;         ///< the log's size when it was read
};

/// The largest range one read returns: a bound on one RPC message.
inline constexpr size_t max_log_read_bytes = size_t{1} << 20;

/// Up to `max_bytes` (at most max_log_read_bytes) of the log of `invocation_id` from byte
/// `offset` (past its end: none). INVALID_ARGUMENT for an id that is not an invocation's, or a
/// log that would lie outside `log_dir` (a symbolic link on its way); NOT_FOUND when it has no
/// log; UNAVAILABLE, naming the file, when the file cannot be read.
Result<LogRange> read_invocation_log(const std::string& log_dir, std::string_view invocation_id, uint64_t offset,
                                     size_t max_bytes);

}  // namespace troupe::runtime
