// Where a worker keeps the logs of its invocations (shell tasks and session actions), and how
// it reads one back for `troupe logs`, named by invocation id only, never by a path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe::runtime {

/// The longest file name component troupe makes: NAME_MAX of Linux's file systems.
inline constexpr size_t max_file_name_bytes = 255;

/// How many bytes the names made beside a log may add to its stem (its path without ".log"): the
/// shell runner's input files, STEM.<16 hex digits>.workflow-input.json, are the longest.
inline constexpr size_t log_stem_growth_bytes = 37;

/// 16 hexadecimal digits of a hash of `text` (64-bit FNV-1a): the same on every node and build,
/// for names that must tell apart what safe_file_name would make alike.
std::string file_name_tag(std::string_view text);

/// `part` as one file name component: bytes other than letters, digits, '-', '_' and '.' become
/// '_', and "", "." and ".." get a '_' in front, so it can neither climb nor name a directory.
/// A result longer than `max_bytes` (at least 32) keeps its first bytes, then '~' and
/// file_name_tag(part): any workflow id or name gives a name the file system takes, and two long
/// ones that differ only past the cut still differ.
std::string safe_file_name(std::string_view part, size_t max_bytes = max_file_name_bytes);

/// The log of invocation `invocation_id` (WORKFLOW/TASK/ATTEMPT.DISPATCH) of task `task_name` of
/// workflow `workflow_id`: LOG_DIR/WORKFLOW/TASK.ATTEMPT.DISPATCH.log, each part made safe, and
/// short enough that the stem plus log_stem_growth_bytes is a valid file name.
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
