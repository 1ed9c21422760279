// The task table that `troupe status` prints and `troupe watch` redraws: one line per task with
// its state, attempt, worker, start, end and duration, and a progress bar or its last failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "schema/workflow_status.hpp"

namespace troupe::cli {

/// A progress payload read as a fraction done: "0.4", "40%", "4/10" (whitespace allowed);
/// nullopt for anything else, which is shown as text.
std::optional<double> progress_fraction(const std::string& progress);

/// "[#####.....]  40%" for a fraction, `width` characters inside the brackets.
std::string progress_bar(double fraction, int width = 20);

/// A duration for a table cell: "850ms", "12.3s", "4m05s", "2h03m", "3d04h".
std::string short_duration(int64_t us);

/// "2026-11-22 10:04:05": the UTC date and time of `us` µs since the epoch.
std::string utc_time(int64_t us);

/// "14:03:27": the time of day (UTC) of `us` µs since the epoch; empty for 0 (never).
std::string time_of_day(int64_t us);

struct TableOptions {
  /// The time a task that has not ended has run up to, µs since the epoch. Default: 0, the
  /// system clock's now.
  int64_t now_us = 0;
  /// Lines are cut to this many characters (a terminal's width); 0: not cut, so a failure's
  /// whole message shows.
  size_t width = 0;
};

/// The workflow's line and its tasks' table, each line ending in '\n'. Times are UTC.
std::string render_task_table(const WorkflowStatus& workflow, const TableOptions& options = {});

}  // namespace troupe::cli
