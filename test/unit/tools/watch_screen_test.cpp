// The frame `troupe watch` draws: it fits the terminal, keeps its header, and shows the tasks
// that matter now when not all fit; and a task's note is about its current attempt.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tools/troupe/task_table.hpp"
#include "tools/troupe/watch_screen.hpp"

using namespace troupe;
using namespace troupe::cli;

namespace {

constexpr int64_t noon_us = 1'700'049'600'000'000;  // 2023-11-15 12:00:00 UTC

TaskStatus task(std::string name, TaskStateCode code) {
  TaskStatus t;
  t.name = std::move(name);
  t.state_code = code;
  t.state = std::string(name_of(code));
  return t;
}

/// 30 tasks: 19 done, 1 failed (task-07), 2 running, 8 waiting.
WorkflowStatus busy_workflow() {
  WorkflowStatus w;
  w.workflow_id = "wf-busy";
  w.state = "RUNNING";
  w.state_code = WorkflowStateCode::RUNNING;
  for (int i = 0; i < 30; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "task-%02d", i);
    TaskStateCode code = i < 20 ? TaskStateCode::SUCCESS : i < 22 ? TaskStateCode::RUNNING : TaskStateCode::WAITING;
    if (i == 7) code = TaskStateCode::FAILURE;
    w.tasks.push_back(task(name, code));
  }
  w.tasks[7].failure = "ExitCode:1";
  return w;
}

bool has_line_starting(const std::vector<std::string>& lines, const std::string& start) {
  for (const auto& line : lines) {
    if (line.rfind(start, 0) == 0) return true;
  }
  return false;
}

}  // namespace

TEST_SUITE("tools.watch_screen") {
  TEST_CASE("a small terminal gets a frame that fits, its header, and the tasks that matter now") {
    const auto frame = watch_frame(busy_workflow(), ScreenSize{15, 70}, noon_us);
    REQUIRE(frame.size() == 14);  // the last row stays free: writing the frame never scrolls
    for (const auto& line : frame) CHECK(line.size() <= 70);
    CHECK(frame[0] == "wf-busy RUNNING");
    CHECK(frame[1] == "30 tasks: 1 FAILURE, 2 RUNNING, 8 WAITING, 19 SUCCESS");
    CHECK(frame[2].rfind("  TASK", 0) == 0);
    // 10 task lines and the line for the rest: the failed and running ones first, then waiting.
    CHECK(has_line_starting(frame, "  task-07  FAILURE"));
    CHECK(has_line_starting(frame, "  task-20  RUNNING"));
    CHECK(has_line_starting(frame, "  task-21  RUNNING"));
    CHECK(has_line_starting(frame, "  task-22  WAITING"));
    CHECK(has_line_starting(frame, "  task-28  WAITING"));
    CHECK_FALSE(has_line_starting(frame, "  task-29"));
    CHECK_FALSE(has_line_starting(frame, "  task-00"));
    CHECK(frame[13] == "  ... 20 more: 1 WAITING, 19 SUCCESS");
  }

  TEST_CASE("shown tasks keep the definition's order") {
    const auto frame = watch_frame(busy_workflow(), ScreenSize{15, 70}, noon_us);
    std::vector<std::string> names;
    for (size_t i = 3; i + 1 < frame.size(); ++i) names.push_back(frame[i].substr(2, 7));
    CHECK(names == std::vector<std::string>{"task-07", "task-20", "task-21", "task-22", "task-23", "task-24",
                                            "task-25", "task-26", "task-27", "task-28"});
  }

  TEST_CASE("a terminal with room shows every task") {
    const auto frame = watch_frame(busy_workflow(), ScreenSize{50, 200}, noon_us);
    CHECK(frame.size() == 33);
    CHECK(has_line_starting(frame, "  task-00  SUCCESS"));
  }

  TEST_CASE("a running attempt shows its progress, not the previous attempt's failure") {
    WorkflowStatus w;
    w.workflow_id = "wf-retry";
    w.state = "RUNNING";
    auto t = task("flaky", TaskStateCode::RUNNING);
    t.attempt = 2;
    t.failure = "ExitCode:1";
    t.failure_details = "exited with 1";
    t.progress = "0.5";
    w.tasks.push_back(t);
    const auto running = watch_frame(w, ScreenSize{10, 120}, noon_us);
    REQUIRE(running.size() == 4);
    CHECK(running[3].find("ExitCode:1") == std::string::npos);
    CHECK(running[3].find("[##########..........]  50%") != std::string::npos);

    w.tasks[0] = task("flaky", TaskStateCode::DELAY_EXECUTION);
    w.tasks[0].failure = "ExitCode:1";
    const auto waiting = watch_frame(w, ScreenSize{10, 120}, noon_us);
    CHECK(waiting[3].find("to be retried after: ExitCode:1") != std::string::npos);

    w.tasks[0] = task("flaky", TaskStateCode::FAILURE);
    w.tasks[0].failure = "ExitCode:1";
    w.tasks[0].failure_details = "exited with 1";
    const auto failed = watch_frame(w, ScreenSize{10, 120}, noon_us);
    CHECK(failed[3].find("ExitCode:1: exited with 1") != std::string::npos);
  }

  TEST_CASE("a message with line breaks stays on its line, and a cut never splits a character") {
    WorkflowStatus w;
    w.workflow_id = "wf-\xc3\xa9t\xc3\xa9";
    w.state = "FAILED";
    w.detail = "first line\nsecond line";
    w.tasks.push_back(task("a", TaskStateCode::FAILURE));
    w.tasks[0].failure = "Boom";
    w.tasks[0].failure_details = "one\ntwo";
    const auto frame = watch_frame(w, ScreenSize{10, 8}, noon_us);
    REQUIRE(frame.size() == 4);
    CHECK(frame[0] == "wf-\xc3\xa9t\xc3\xa9 F");  // 8 characters, 10 bytes
    const auto whole = watch_frame(w, ScreenSize{10, 200}, noon_us);
    CHECK(whole[0] == "wf-\xc3\xa9t\xc3\xa9 FAILED: first line second line");
    CHECK(whole[3].find("Boom: one two") != std::string::npos);
  }
}
