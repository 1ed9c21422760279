// The task table that `troupe status` prints and `troupe watch` redraws: one line per task with
// its state, attempt, worker and a progress bar (or its last failure).
#pragma once

#include <optional>
#include <string>

#include "schema/workflow_status.hpp"

namespace troupe::cli {

/// A progress payload read as a fraction done: "0.4", "40%", "4/10" (whitespace allowed);
/// nullopt for anything else, which is shown as text.
std::optional<double> progress_fraction(const std::string& progress);

/// "[#####.....]  40%" for a fraction, `width` characters inside the brackets.
std::string progress_bar(double fraction, int width = 20);

/// The workflow's line and its tasks' table, each line ending in '\n'.
std::string render_task_table(const WorkflowStatus& workflow);

}  // namespace troupe::cli
