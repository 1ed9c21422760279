// What `troupe watch` shows on a terminal: one frame that fits the screen. The workflow's line,
// a count of its tasks by state and the table's header always show; below them as many task
// lines as fit, the ones that matter now first (failed, then active, then waiting, then done),
// kept in definition order, and a last line for those left out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "schema/workflow_status.hpp"

namespace troupe::cli {

struct ScreenSize {
  size_t rows = 24;
  size_t columns = 80;
};

/// The lines of the frame (without line breaks), at most `size.rows - 1` of them (the last
/// row stays free, so writing the frame never scrolls the screen), each at most `size.columns`
/// characters.
std::vector<std::string> watch_frame(const WorkflowStatus& workflow, ScreenSize size, int64_t now_us);

/// "5 tasks: 1 FAILURE, 2 RUNNING, 2 WAITING": how many tasks are in each state, the states in
/// the order watch_frame ranks them.
std::string state_counts(const std::vector<TaskStatus>& tasks);

}  // namespace troupe::cli
