// The examples/ folder holds what it says: every workflow definition passes the real
// definition checker and shows its feature, and the cluster config passes the real config
// loader. $TROUPE_EXAMPLES names the folder.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/config/cluster_config.hpp"
#include "schema/definition.hpp"

namespace fs = std::filesystem;
using namespace troupe;

namespace {

std::string examples_dir() {
  const char* dir = std::getenv("TROUPE_EXAMPLES");
  if (dir == nullptr || *dir == '\0') throw std::runtime_error("TROUPE_EXAMPLES must name the examples folder");
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The example workflow `name` (without .json), checked; fails the test with every problem.
WorkflowSpec example_workflow(const std::string& name) {
  auto spec = parse_definition(read_file(fs::path(examples_dir()) / "workflows" / (name + ".json")));
  if (!spec) FAIL(name << ".json: " << spec.error().message);
  return *spec;
}

const TaskSpec& task(const WorkflowSpec& spec, const std::string& name) {
  auto index = spec.find_task(name);
  REQUIRE_MESSAGE(index, "no task " << name);
  return spec.tasks[*index];
}

std::vector<std::string> dependencies(const WorkflowSpec& spec, const TaskSpec& t) {
  std::vector<std::string> names;
  for (uint32_t d : t.depends_on) names.push_back(spec.tasks[d].name);
  std::sort(names.begin(), names.end());
  return names;
}

/// The shell command of `t` joined by spaces, or "" for a handler task.
std::string command_text(const TaskSpec& t) {
  const auto* shell = std::get_if<ShellSpec>(&t.body);
  if (shell == nullptr) return "";
  std::string text;
  for (const auto& arg : shell->command) text += arg + " ";
  return text;
}

}  // namespace

TEST_SUITE("schema.examples") {
  TEST_CASE("every example workflow definition passes the definition checker") {
    int checked = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(examples_dir()) / "workflows")) {
      if (entry.path().extension() != ".json") continue;
      CAPTURE(entry.path().filename().string());
      auto check = check_definition(read_file(entry.path()));
      std::string problems;
      for (const auto& p : check.problems) problems += "\n  " + p.path + ": " + p.message;
      CHECK_MESSAGE(check.problems.empty(), problems);
      CHECK(check.spec.has_value());
      ++checked;
    }
    CHECK(checked >= 4);
  }

  TEST_CASE("diamond.json is a diamond: one root, two branches (one on the io task list), one join") {
    const auto spec = example_workflow("diamond");
    REQUIRE(spec.tasks.size() == 4);
    CHECK(task(spec, "fetch").depends_on.empty());
    CHECK(dependencies(spec, task(spec, "left")) == std::vector<std::string>{"fetch"});
    CHECK(dependencies(spec, task(spec, "right")) == std::vector<std::string>{"fetch"});
    CHECK(task(spec, "right").task_list == "io");
    CHECK(dependencies(spec, task(spec, "join")) == std::vector<std::string>{"left", "right"});
    for (const auto& t : spec.tasks) CHECK(command_text(t).find("echo") != std::string::npos);
  }

  TEST_CASE("fanout.json runs 20 tasks in parallel between a root and a join") {
    const auto spec = example_workflow("fanout");
    REQUIRE(spec.tasks.size() == 22);
    const auto& join = task(spec, "join");
    CHECK(join.depends_on.size() == 20);
    for (uint32_t middle : join.depends_on) {
      CHECK(dependencies(spec, spec.tasks[middle]) == std::vector<std::string>{"split"});
    }
  }

  TEST_CASE("retry-heartbeat.json retries a task that fails once, and heartbeats through the progress file") {
    const auto spec = example_workflow("retry-heartbeat");
    const auto& flaky = task(spec, "flaky");
    REQUIRE(flaky.retry.has_value());
    CHECK(flaky.retry->maximum_attempts >= 2);
    CHECK(command_text(flaky).find("TROUPE_ATTEMPT") != std::string::npos);
    const auto& long_job = task(spec, "long-job");
    CHECK(long_job.timeouts.heartbeat.has_value());
    CHECK(long_job.retry.has_value());
    CHECK(command_text(long_job).find("$TROUPE_PROGRESS_FILE") != std::string::npos);
    CHECK(command_text(long_job).find("${TROUPE_PROGRESS") != std::string::npos);
    CHECK(command_text(long_job).find("/5") != std::string::npos);  // progress as a fraction: a bar
  }

  TEST_CASE("async-approval.json hands its approval task to whoever holds the token") {
    const auto spec = example_workflow("async-approval");
    const auto& approve = task(spec, "approve");
    CHECK(approve.async_completion);
    CHECK(command_text(approve).find("$TROUPE_TASK_TOKEN") != std::string::npos);
    CHECK(approve.timeouts.schedule_to_close.has_value());  // an approval nobody gives ends
    CHECK(dependencies(spec, task(spec, "publish")) == std::vector<std::string>{"approve"});
    for (const auto& t : spec.tasks) {
      if (t.name != "approve") CHECK_FALSE(t.async_completion);
    }
  }

  TEST_CASE("cluster.toml is one scheduler and two workers with different task lists") {
    auto config = runtime::load_cluster_config((fs::path(examples_dir()) / "cluster.toml").string());
    if (!config) FAIL(config.error().message);
    REQUIRE(config->nodes.size() == 3);
    const auto* scheduler = config->find_node("scheduler");
    REQUIRE(scheduler != nullptr);
    CHECK(scheduler->scheduler);
    CHECK(scheduler->listen.to_string() == "127.0.0.1:7700");
    const auto* worker_1 = config->find_node("worker-1");
    const auto* worker_2 = config->find_node("worker-2");
    REQUIRE(worker_1 != nullptr);
    REQUIRE(worker_2 != nullptr);
    CHECK(worker_1->scheduler_address == scheduler->listen);
    CHECK(worker_2->scheduler_address == scheduler->listen);
    CHECK(worker_1->task_lists != worker_2->task_lists);
    CHECK(worker_2->task_lists.count("io") == 1);
  }
}
