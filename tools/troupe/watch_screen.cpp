// The frame of `troupe watch`, cut to the terminal.
#include "tools/troupe/watch_screen.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include "tools/troupe/task_table.hpp"

namespace troupe::cli {
namespace {

/// Which tasks a short screen keeps: lower first.
int rank(TaskStateCode state) {
  switch (state) {
    case TaskStateCode::FAILURE:
    case TaskStateCode::KILLED:
    case TaskStateCode::NEVER_ATTEMPTED:
    case TaskStateCode::FAILOVER:
    case TaskStateCode::UNKNOWN: return 0;
    case TaskStateCode::RUNNING:
    case TaskStateCode::DISPATCHED:
    case TaskStateCode::DISPATCHING:
    case TaskStateCode::DELAY_EXECUTION:
    case TaskStateCode::SUBMITTED:
    case TaskStateCode::PAUSED: return 1;
    case TaskStateCode::WAITING:
    case TaskStateCode::UPSTREAM_FAILED: return 2;
    case TaskStateCode::SUCCESS:
    case TaskStateCode::FORCED_SUCCESS: return 3;
  }
  return 0;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  return lines;
}

/// "1 FAILURE, 2 RUNNING", the states in rank order.
std::string count_by_state(const std::vector<TaskStatus>& tasks) {
  std::map<std::pair<int, std::string>, size_t> counts;
  for (const auto& t : tasks) ++counts[{rank(t.state_code), t.state}];
  std::string out;
  for (const auto& [key, count] : counts) out += (out.empty() ? "" : ", ") + std::to_string(count) + " " + key.second;
  return out;
}

}  // namespace

std::string state_counts(const std::vector<TaskStatus>& tasks) {
  return std::to_string(tasks.size()) + (tasks.size() == 1 ? " task" : " tasks") +
         (tasks.empty() ? "" : ": " + count_by_state(tasks));
}

std::vector<std::string> watch_frame(const WorkflowStatus& workflow, ScreenSize size, int64_t now_us) {
  TableOptions options;
  options.now_us = now_us;
  options.width = std::max<size_t>(size.columns, 1);
  std::vector<std::string> table = lines_of(render_task_table(workflow, options));
  // The table is the workflow's line, its header, then one line per task in definition order.
  if (table.size() != workflow.tasks.size() + 2) return table;
  std::string counts = state_counts(workflow.tasks);
  if (counts.size() > options.width) counts.resize(options.width);
  std::vector<std::string> frame = {table[0], counts, table[1]};

  const size_t usable = size.rows > 1 ? size.rows - 1 : 1;
  const size_t room = usable > frame.size() ? usable - frame.size() : 0;
  const size_t tasks = workflow.tasks.size();
  if (tasks <= room) {
    frame.insert(frame.end(), table.begin() + 2, table.end());
    return frame;
  }
  // Not all fit: keep the tasks that matter now, and say how many of which are left out.
  const size_t shown = room > 0 ? room - 1 : 0;
  std::vector<size_t> order(tasks);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return rank(workflow.tasks[a].state_code) < rank(workflow.tasks[b].state_code);
  });
  std::vector<size_t> kept(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown));
  std::sort(kept.begin(), kept.end());
  for (size_t index : kept) frame.push_back(table[index + 2]);
  if (room > 0) {
    std::vector<TaskStatus> hidden;
    for (size_t i = shown; i < tasks; ++i) hidden.push_back(workflow.tasks[order[i]]);
    std::string more = "  ... " + std::to_string(hidden.size()) + " more: " + count_by_state(hidden);
    if (more.size() > options.width) more.resize(options.width);
    frame.push_back(std::move(more));
  }
  return frame;
}

}  // namespace troupe::cli
