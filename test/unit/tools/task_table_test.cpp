// The task table `troupe status` prints and `troupe watch` redraws, from hand-made snapshots.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tools/troupe/task_table.hpp"

using namespace troupe;
using namespace troupe::cli;

namespace {

constexpr int64_t noon_us = 1'700'049'600'000'000;  // 2023-11-15 12:00:00 UTC

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TaskStatus task(std::string name, TaskStateCode code) {
  TaskStatus t;
  t.name = std::move(name);
  t.state_code = code;
  t.state = std::string(name_of(code));
  return t;
}

/// A failed workflow: a spawn failure, what it blocked, a task that ran, one that runs.
WorkflowStatus failed_workflow() {
  WorkflowStatus w;
  w.workflow_id = "wf-1";
  w.state = "FAILED";
  w.state_code = WorkflowStateCode::FAILED;
  w.detail = "task 'spawn' failed: SpawnFailed: cannot run '/no/such/binary': No such file or directory";
  auto ok = task("prepare", TaskStateCode::SUCCESS);
  ok.attempt = 1;
  ok.worker = "worker-a";
  ok.started_us = noon_us;
  ok.ended_us = noon_us + 1'250'000;
  ok.progress = "0.5";
  auto spawn = task("spawn", TaskStateCode::FAILURE);
  spawn.attempt = 2;
  spawn.worker = "worker-b";
  spawn.failure = "SpawnFailed";
  spawn.failure_details = "cannot run '/no/such/binary': No such file or directory";
  spawn.started_us = noon_us + 2'000'000;
  spawn.ended_us = noon_us + 125'000'000;
  auto blocked = task("after-spawn", TaskStateCode::UPSTREAM_FAILED);
  auto running = task("long", TaskStateCode::RUNNING);
  running.attempt = 1;
  running.worker = "worker-a";
  running.started_us = noon_us;
  running.progress = "3/4";
  w.tasks = {ok, spawn, blocked, running};
  return w;
}

}  // namespace

TEST_SUITE("tools.task_table") {
  TEST_CASE("each task's attempt, worker, times, duration and its failure's whole message") {
    TableOptions options;
    options.now_us = noon_us + 3'723'000'000;  // 1h02m03s after noon
    const auto lines = lines_of(render_task_table(failed_workflow(), options));
    REQUIRE(lines.size() == 6);
    CHECK(lines[0] ==
          "wf-1 FAILED: task 'spawn' failed: SpawnFailed: cannot run '/no/such/binary': No such file or directory");
    CHECK(lines[1] ==
          "  TASK         STATE            ATTEMPT  WORKER    STARTED   ENDED     DURATION  PROGRESS / FAILURE");
    CHECK(lines[2] ==
          "  prepare      SUCCESS                1  worker-a  12:00:00  12:00:01      1.2s  [####################] 100%");
    CHECK(lines[3] == "  spawn        FAILURE                2  worker-b  12:00:02  12:02:05     2m03s  "
                      "SpawnFailed: cannot run '/no/such/binary': No such file or directory");
    CHECK(lines[4] == "  after-spawn  UPSTREAM_FAILED        0                                          "
                      "will not run: a task it depends on did not succeed");
    // Not ended: its duration runs up to now.
    CHECK(lines[5] ==
          "  long         RUNNING                1  worker-a  12:00:00               1h02m  [###############.....]  75%");
  }

  TEST_CASE("a width cuts every line; none is cut without one") {
    TableOptions options;
    options.now_us = noon_us;
    options.width = 40;
    for (const auto& line : lines_of(render_task_table(failed_workflow(), options))) {
      CAPTURE(line);
      CHECK(line.size() <= 40);
    }
    options.width = 0;
    CHECK(lines_of(render_task_table(failed_workflow(), options))[3].size() > 120);
  }

  TEST_CASE("an awaiting task says so; a task that never started has no times") {
    WorkflowStatus w;
    w.workflow_id = "wf";
    w.state = "RUNNING";
    auto waiting = task("w", TaskStateCode::WAITING);
    auto handed = task("h", TaskStateCode::RUNNING);
    handed.awaiting_completion = true;
    handed.started_us = noon_us;
    w.tasks = {waiting, handed};
    TableOptions options;
    options.now_us = noon_us + 500'000;
    const auto lines = lines_of(render_task_table(w, options));
    REQUIRE(lines.size() == 4);
    CHECK(lines[2] == "  w     WAITING                0");
    CHECK(lines[3] == "  h     RUNNING                0          12:00:00               500ms  awaiting completion by its token");
  }

  TEST_CASE("a task waiting in its task list says why; its last attempt's failure waits behind") {
    WorkflowStatus w;
    w.workflow_id = "wf";
    w.state = "RUNNING";
    auto waiting = task("retry", TaskStateCode::DISPATCHING);
    waiting.attempt = 2;
    waiting.failure = "ExitCode:3";
    waiting.wait_reason = "all 2 workers of 'gpu' are busy";
    auto unknown = task("queued", TaskStateCode::DISPATCHING);  // an older scheduler says nothing
    w.tasks = {waiting, unknown};
    const auto lines = lines_of(render_task_table(w, TableOptions{noon_us, 0}));
    REQUIRE(lines.size() == 4);
    CHECK(lines[2] == "  retry   DISPATCHING            2                                        all 2 workers of 'gpu' are busy");
    CHECK(lines[3] == "  queued  DISPATCHING            0");
  }

  TEST_CASE("durations") {
    CHECK(short_duration(0) == "0ms");
    CHECK(short_duration(999'999) == "999ms");
    CHECK(short_duration(12'340'000) == "12.3s");
    CHECK(short_duration(245'000'000) == "4m05s");
    CHECK(short_duration(7'380'000'000) == "2h03m");
    CHECK(short_duration(273'600'000'000) == "3d04h");
    CHECK(time_of_day(0).empty());
    CHECK(time_of_day(noon_us + 3'723'000'000) == "13:02:03");
  }
}
