// Rendering of a workflow snapshot as text.
#include "tools/troupe/task_table.hpp"
#include "schema/duration.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace troupe::cli {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

/// `text` cut to `columns` characters, counting a UTF-8 sequence as one and never splitting it.
std::string cut_to_columns(const std::string& text, size_t columns) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte belongs to the character before
    if (seen == columns) return text.substr(0, i);
    ++seen;
  }
  return text;
}

std::optional<double> number(const std::string& s) {
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

/// `line` on one line (line breaks in a message or progress become spaces), cut to `width`
/// characters (0: whole), then a '\n'.
std::string fit(std::string line, size_t width) {
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\r', ' ');
  if (width > 0) line = cut_to_columns(line, width);
  return line + "\n";
}

/// What a task's last column says: its failure, a progress bar or text, or why it waits. A
/// failure shows while it is the task's news (it failed, was killed, or waits to be retried);
/// once the next attempt is under way, that attempt's progress shows instead.
std::string note_of(const TaskStatus& t) {
  const bool succeeded = t.state_code == TaskStateCode::SUCCESS || t.state_code == TaskStateCode::FORCED_SUCCESS ||
                         t.state == "SUCCESS" || t.state == "FORCED_SUCCESS";
  if (t.awaiting_completion) return "awaiting completion by its token";
  if (t.state_code == TaskStateCode::UPSTREAM_FAILED) return "will not run: a task it depends on did not succeed";
  if (!t.wait_reason.empty()) return t.wait_reason;  // it waits in its task list: that is its news
  const bool failure_is_news = t.state_code == TaskStateCode::FAILURE || t.state_code == TaskStateCode::KILLED ||
                               t.state_code == TaskStateCode::NEVER_ATTEMPTED ||
                               t.state_code == TaskStateCode::FAILOVER || t.state_code == TaskStateCode::UNKNOWN;
  if (!t.failure.empty() || !t.failure_details.empty()) {
    if (failure_is_news) return t.failure_message();
    if (t.state_code == TaskStateCode::DELAY_EXECUTION) return "to be retried after: " + t.failure_message();
  }
  if (auto fraction = progress_fraction(t.progress)) return progress_bar(succeeded ? 1.0 : *fraction);
  std::string note = t.progress;
  if (note.size() > 60) note = note.substr(0, 57) + "...";
  return note;
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

std::string short_duration(int64_t us) {
  if (us < 0) us = 0;
  char text[32];
  const int64_t ms = us / 1000;
  const int64_t s = us / 1000000;
  if (ms < 1000) {
    std::snprintf(text, sizeof text, "%lldms", static_cast<long long>(ms));
  } else if (s < 60) {
    std::snprintf(text, sizeof text, "%.1fs", static_cast<double>(ms) / 1000);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  } else {
    std::snprintf(text, sizeof text, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s / 3600 % 24));
  }
  return text;
}

std::string utc_time(int64_t us) {
  const std::time_t seconds = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

std::string time_of_day(int64_t us) {
  if (us == 0) return {};
  const std::time_t seconds = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return text;
}

std::string render_task_table(const WorkflowStatus& workflow, const TableOptions& options) {
  const int64_t now_us = options.now_us != 0 ? options.now_us : wall_clock_us();
  std::string out =
      fit(workflow.workflow_id + " " + workflow.state + (workflow.detail.empty() ? "" : ": " + workflow.detail),
          options.width);
  int name_width = 4;
  int worker_width = 6;
  for (const auto& t : workflow.tasks) {
    name_width = std::max(name_width, static_cast<int>(t.name.size()));
    worker_width = std::max(worker_width, static_cast<int>(t.worker.size()));
  }
  auto left = [](const std::string& text, int width) {
    return text + std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(text.size()))), ' ');
  };
  auto right = [](const std::string& text, int width) {
    return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(text.size()))), ' ') + text;
  };
  auto line = [&](const std::string& name, const std::string& state, const std::string& attempt,
                  const std::string& worker, const std::string& started, const std::string& ended,
                  const std::string& duration, const std::string& note) {
    std::string text = "  " + left(name, name_width) + "  " + left(state, 15) + "  " + right(attempt, 7) + "  " +
                       left(worker, worker_width) + "  " + left(started, 8) + "  " + left(ended, 8) + "  " +
                       right(duration, 8) + "  " + note;
    text.erase(text.find_last_not_of(' ') + 1);
    out += fit(std::move(text), options.width);
  };
  line("TASK", "STATE", "ATTEMPT", "WORKER", "STARTED", "ENDED", "DURATION", "PROGRESS / FAILURE");
  for (const auto& t : workflow.tasks) {
    line(t.name, t.state, std::to_string(t.attempt), t.worker, time_of_day(t.started_us), time_of_day(t.ended_us),
         t.started_us == 0 ? "" : short_duration(t.duration_us(now_us)), note_of(t));
  }
  if (workflow.sessions.empty()) return out;
  int session_width = 7;
  int holder_width = 6;
  for (const auto& s : workflow.sessions) {
    session_width = std::max(session_width, static_cast<int>(s.name.size()));
    holder_width = std::max(holder_width, static_cast<int>(s.worker.size() + (s.resource_id.empty() ? 0 : s.resource_id.size() + 3)));
  }
  auto session_line = [&](const std::string& name, const std::string& state, const std::string& attempt,
                          const std::string& worker, const std::string& enter, const std::string& exit,
                          const std::string& failure) {
    std::string text = "  " + left(name, session_width) + "  " + left(state, 14) + "  " + right(attempt, 7) + "  " +
                       left(worker, holder_width) + "  " + left(enter, 10) + "  " + left(exit, 10) + "  " + failure;
    text.erase(text.find_last_not_of(' ') + 1);
    out += fit(std::move(text), options.width);
  };
  // An action that did not succeed says how in the last column, with the session's failure.
  auto outcome = [](const std::string& action) { return action.rfind("FAILED", 0) == 0 ? std::string("FAILED") : action; };
  session_line("SESSION", "STATE", "ATTEMPT", "WORKER", "ENV ENTER", "ENV EXIT", "FAILURE / WAITING FOR");
  for (const auto& s : workflow.sessions) {
    std::string failure = s.failure.empty() ? s.wait_reason : s.failure;
    if (s.env_exit.rfind("FAILED: ", 0) == 0) failure += (failure.empty() ? "" : "; ") + std::string("envExit ") + s.env_exit.substr(8);
    session_line(s.name, s.state, s.attempt == 0 ? "" : std::to_string(s.attempt),
                 s.resource_id.empty() ? s.worker : s.worker + " (" + s.resource_id + ")", outcome(s.env_enter),
                 outcome(s.env_exit), failure);
  }
  return out;
}

}  // namespace troupe::cli
