// Rendering of a workflow snapshot as text.
#include "tools/troupe/task_table.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace troupe::cli {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::optional<double> number(const std::string& s) {
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace

std::optional<double> progress_fraction(const std::string& progress) {
  const std::string p = trim(progress);
  if (p.empty()) return std::nullopt;
  std::optional<double> fraction;
  if (p.back() == '%') {
    if (auto v = number(trim(p.substr(0, p.size() - 1)))) fraction = *v / 100;
  } else if (auto slash = p.find('/'); slash != std::string::npos) {
    auto done = number(trim(p.substr(0, slash)));
    auto total = number(trim(p.substr(slash + 1)));
    if (done && total && *total > 0) fraction = *done / *total;
  } else if (auto v = number(p); v && *v <= 1) {
    fraction = *v;
  }
  if (!fraction || *fraction < 0) return std::nullopt;
  return std::min(*fraction, 1.0);
}

std::string progress_bar(double fraction, int width) {
  const int filled = static_cast<int>(std::lround(fraction * width));
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(std::lround(fraction * 100)));
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '.') +
         "] " + percent;
}

std::string render_task_table(const WorkflowStatus& workflow) {
  std::string out = workflow.workflow_id + " " + workflow.state + (workflow.detail.empty() ? "" : ": " + workflow.detail) + "\n";
  int name_width = 4;
  for (const auto& t : workflow.tasks) name_width = std::max(name_width, static_cast<int>(t.name.size()));
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s  %-15s  %7s  %-12s  %s\n", name_width, "TASK", "STATE", "ATTEMPT", "WORKER",
                "PROGRESS / FAILURE");
  out += line;
  for (const auto& t : workflow.tasks) {
    std::string note;
    if (t.awaiting_completion) {
      note = "awaiting completion by its token";
    } else if (!t.failure.empty() && t.state != "SUCCESS") {
      note = t.failure;
    } else if (auto fraction = progress_fraction(t.progress)) {
      note = progress_bar(t.state == "SUCCESS" ? 1.0 : *fraction);
    } else {
      note = t.progress;
    }
    if (note.size() > 60) note = note.substr(0, 57) + "...";
    std::snprintf(line, sizeof line, "  %-*s  %-15s  %7u  %-12s  %s\n", name_width, t.name.c_str(), t.state.c_str(),
                  t.attempt, t.worker.c_str(), note.c_str());
    out += line;
  }
  return out;
}

}  // namespace troupe::cli
