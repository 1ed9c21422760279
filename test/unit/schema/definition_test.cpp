#include <doctest/doctest.h>

#include <algorithm>

#include "schema/definition.hpp"
#include "schema/recreate_token.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

std::vector<DefinitionProblem> problems_of(std::string_view json) {
  auto check = check_definition(json);
  CHECK_FALSE(check.spec);
  return check.problems;
}

bool has_problem(const std::vector<DefinitionProblem>& problems, const std::string& path,
                 const std::string& fragment) {
  return std::any_of(problems.begin(), problems.end(), [&](const DefinitionProblem& p) {
    return p.path == path && p.message.find(fragment) != std::string::npos;
  });
}

std::string dump(const std::vector<DefinitionProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += p.path + ": " + p.message + "\n";
  return out;
}

}  // namespace

TEST_SUITE("schema.definition") {
  TEST_CASE("the design's example definition decodes into a spec") {
    auto spec = parse_definition(R"({ "name": "train-model",
      "tasks": [
        { "name": "download", "taskList": "gpu", "shell": { "command": ["sh", "-c", "fetch-data"],
                                                            "env": {"MODE": "fast"} },
          "timeouts": { "startToClose": "10m", "heartbeat": "30s", "scheduleToStart": "1m" },
          "retry": { "initialInterval": "1s", "backoffCoefficient": 2.0, "maximumInterval": "1m",
                     "maximumAttempts": 5, "nonRetryableErrors": ["BadInput"] } },
        { "name": "train", "dependsOn": ["download"], "taskList": "gpu", "handler": "train",
          "input": {"epochs": 3}, "priority": 7 },
        { "name": "upload", "dependsOn": ["train"], "shell": { "command": ["upload.sh"] } } ],
      "sessions": [ { "name": "gpu-box", "tasks": ["download", "train", "upload"],
                      "creationTimeout": "1m", "executionTimeout": "2h",
                      "envEnter": { "shell": { "command": ["setup-env.sh"] } },
                      "envExit":  { "shell": { "command": ["cleanup.sh"] } } } ] })");
    REQUIRE_MESSAGE(spec, (spec ? "" : spec.error().message));
    REQUIRE(spec->tasks.size() == 3);
    const auto& download = spec->tasks[0];
    CHECK(download.task_list == "gpu");
    REQUIRE(std::holds_alternative<ShellSpec>(download.body));
    CHECK(std::get<ShellSpec>(download.body).command ==
          std::vector<std::string>{"sh", "-c", "fetch-data"});
    CHECK(std::get<ShellSpec>(download.body).env ==
          std::vector<std::pair<std::string, std::string>>{{"MODE", "fast"}});
    CHECK(download.timeouts.start_to_close == Duration(10min));
    CHECK(download.timeouts.heartbeat == Duration(30s));
    REQUIRE(download.retry);
    CHECK(download.retry->maximum_attempts == 5);
    CHECK(download.retry->maximum_interval == Duration(1min));
    CHECK(download.retry->non_retryable_errors == std::vector<std::string>{"BadInput"});
    const auto& train = spec->tasks[1];
    CHECK(std::get<HandlerSpec>(train.body).name == "train");
    CHECK(train.depends_on == std::vector<uint32_t>{0});
    CHECK(train.input_json == R"({"epochs":3})");
    CHECK(train.priority == 7);
    CHECK(train.task_list == "gpu");
    CHECK(spec->tasks[2].task_list == "default");
    CHECK(spec->tasks[2].input_json == "null");
    CHECK_FALSE(spec->tasks[2].retry);
    REQUIRE(spec->sessions.size() == 1);
    CHECK(spec->sessions[0].tasks == std::vector<uint32_t>{0, 1, 2});
    CHECK(spec->sessions[0].execution_timeout == Duration(2h));
    CHECK(spec->tasks[1].session == 0u);
    CHECK(spec->topological_order == std::vector<uint32_t>{0, 1, 2});
  }

  TEST_CASE("find_task finds each task of a parsed spec by name, in a copy too, and a hand-built spec's by scanning") {
    std::string tasks;
    for (int i = 0; i < 1000; ++i) tasks += (i ? "," : "") + std::string(R"({"name": "t)") + std::to_string(i) + R"(", "handler": "noop"})";
    auto spec = parse_definition(R"({"name": "many", "tasks": [)" + tasks + "]}");
    REQUIRE(spec);
    CHECK(spec->task_index.by_name.size() == 1000);
    const WorkflowSpec copy = *spec;
    for (uint32_t i = 0; i < 1000; ++i) {
      CHECK(spec->find_task("t" + std::to_string(i)) == i);
      CHECK(copy.find_task("t" + std::to_string(i)) == i);
    }
    CHECK_FALSE(spec->find_task("t1000"));
    CHECK_FALSE(spec->find_task(""));

    WorkflowSpec by_hand;
    by_hand.tasks.resize(2);
    by_hand.tasks[0].name = "a";
    by_hand.tasks[1].name = "b";
    CHECK(by_hand.find_task("b") == 1u);
    CHECK_FALSE(by_hand.find_task("c"));
    // The index is a cache: it does not make two specs differ.
    WorkflowSpec indexed = by_hand;
    indexed.index_tasks();
    CHECK(indexed == by_hand);
    CHECK(indexed.find_task("b") == 1u);
  }

  TEST_CASE("scheduleToClose fills in and caps the other timeouts, as in Cadence") {
    auto spec = parse_definition(R"({"name": "w", "tasks": [
      {"name": "a", "handler": "h", "timeouts": {"scheduleToClose": "1m", "startToClose": "5m"}}]})");
    REQUIRE(spec);
    const auto& t = spec->tasks[0].timeouts;
    CHECK(t.schedule_to_start == Duration(1min));
    CHECK(t.start_to_close == Duration(1min));
  }

  TEST_CASE("a retry policy gets Cadence's defaults for what it leaves out") {
    auto spec = parse_definition(R"({"name": "w", "tasks": [
      {"name": "a", "handler": "h", "retry": {"maximumAttempts": 3}}]})");
    REQUIRE(spec);
    const auto& r = *spec->tasks[0].retry;
    CHECK(r.initial_interval == Duration(1s));
    CHECK(r.backoff_coefficient == 2.0);
    CHECK(r.maximum_interval == Duration(100s));
    CHECK(r.maximum_attempts == 3);
  }

  TEST_CASE("every problem is listed with its JSON path") {
    auto problems = problems_of(R"({"name": "w", "tasks": [
      {"name": "a", "handler": "h", "dependsOn": ["ghost", "a"]},
      {"name": "a", "handler": "h"},
      {"name": "b", "shell": {"command": []}, "timeouts": {"heartbeat": "soon"}},
      {"name": "c", "handler": "h", "timeouts": {"scheduleToStart": "1m"},
       "retry": {"backoffCoefficient": 0.5, "maximumAttempts": -1, "initialInterval": "10s",
                 "maximumInterval": "1s"}},
      {"name": "d"},
      {"name": "e/f", "handler": ""}]})");
    INFO(dump(problems));
    CHECK(has_problem(problems, "$.tasks[0].dependsOn[0]", "unknown task 'ghost'"));
    CHECK(has_problem(problems, "$.tasks[0].dependsOn[1]", "cannot depend on itself"));
    CHECK(has_problem(problems, "$.tasks[1].name", "duplicate task name 'a' (first at $.tasks[0])"));
    CHECK(has_problem(problems, "$.tasks[2].shell.command", "needs at least the program"));
    CHECK(has_problem(problems, "$.tasks[2].timeouts.heartbeat", "'soon' is not a duration"));
    CHECK(has_problem(problems, "$.tasks[2].timeouts", "give scheduleToClose"));
    CHECK(has_problem(problems, "$.tasks[3].timeouts", "give scheduleToClose"));
    CHECK(has_problem(problems, "$.tasks[3].retry.backoffCoefficient", "at least 1"));
    CHECK(has_problem(problems, "$.tasks[3].retry.maximumAttempts", "0 (no limit) or more"));
    CHECK(has_problem(problems, "$.tasks[3].retry.maximumInterval", "shorter than initialInterval"));
    CHECK(has_problem(problems, "$.tasks[4]", "needs a body"));
    CHECK(has_problem(problems, "$.tasks[5].name", "may not contain '/'"));
    CHECK(has_problem(problems, "$.tasks[5].handler", "names no handler"));
    CHECK(problems.size() == 13);
  }

  TEST_CASE("a cycle is named task by task") {
    auto problems = problems_of(R"({"name": "w", "tasks": [
      {"name": "start", "handler": "h"},
      {"name": "a", "handler": "h", "dependsOn": ["start", "c"]},
      {"name": "b", "handler": "h", "dependsOn": ["a"]},
      {"name": "c", "handler": "h", "dependsOn": ["b"]}]})");
    INFO(dump(problems));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].message.find("dependency cycle: ") == 0);
    // Whichever task the walk starts from, the cycle holds a, b and c and nothing else.
    for (const char* name : {"a", "b", "c"}) CHECK(problems[0].message.find(name) != std::string::npos);
    CHECK(problems[0].message.find("start") == std::string::npos);
  }

  TEST_CASE("structural mistakes are caught before decoding, each with its path") {
    auto problems = problems_of(R"({"name": "w", "tasks": [
      {"name": "a", "handler": "h", "shell": {"command": ["x"]}, "priority": 1.5},
      {"name": 7, "handler": "h", "dependson": ["a"], "retry": {"maximumAttempts": "3"}}],
      "extra": true})");
    INFO(dump(problems));
    CHECK(has_problem(problems, "$.tasks[0].shell", "give only one of 'handler' and 'shell'"));
    CHECK(has_problem(problems, "$.tasks[0].priority", "must be a whole number"));
    CHECK(has_problem(problems, "$.tasks[1].name", "must be a string, not a number"));
    CHECK(has_problem(problems, "$.tasks[1].dependson", "unknown field 'dependson'"));
    CHECK(has_problem(problems, "$.tasks[1].retry.maximumAttempts", "must be a whole number, not a string"));
    CHECK(has_problem(problems, "$.extra", "unknown field 'extra'"));
  }

  TEST_CASE("retries that could never end, and empty workflows, are refused") {
    auto problems = problems_of(R"({"name": "w", "tasks": [
      {"name": "a", "handler": "h", "retry": {"initialInterval": "1s"}}]})");
    CHECK(has_problem(problems, "$.tasks[0].retry", "never stops retrying"));
    CHECK(has_problem(problems_of(R"({"name": "w", "tasks": []})"), "$.tasks", "at least one task"));
    CHECK(has_problem(problems_of(R"({"tasks": [{"name": "a", "handler": "h"}]})"), "$.name",
                      "the workflow name is required"));
  }

  TEST_CASE("sessions name known tasks, each task in one session at most") {
    auto problems = problems_of(R"({"name": "w", "tasks": [
      {"name": "a", "handler": "h"}, {"name": "b", "handler": "h"}],
      "sessions": [{"name": "s1", "tasks": ["a", "zz"]}, {"name": "s2", "tasks": ["a"],
                   "creationTimeout": "0s"}]})");
    INFO(dump(problems));
    CHECK(has_problem(problems, "$.sessions[0].tasks[1]", "unknown task 'zz'"));
    CHECK(has_problem(problems, "$.sessions[1].tasks[0]", "already in session $.sessions[0]"));
    CHECK(has_problem(problems, "$.sessions[1].creationTimeout", "longer than zero"));
  }

  TEST_CASE("a session says where it may run and what losing its worker does") {
    auto spec = parse_definition(R"({"name": "w", "tasks": [{"name": "a", "handler": "h"}, {"name": "b", "handler": "h"}],
      "sessions": [{"name": "s1", "tasks": ["a"], "resourceId": "gpu0", "onFailure": "recreate", "rerunAll": true,
                    "reestablishWithin": "2m"},
                   {"name": "s2", "tasks": ["b"], "recreateToken": "rt-776f726b65723a77", "onFailure": "recreate",
                    "maxRecreates": 5, "reestablishWithin": "0s"}]})");
    REQUIRE_MESSAGE(spec, (spec ? "" : spec.error().message));
    const auto& s1 = spec->sessions[0];
    CHECK(s1.resource_id == "gpu0");
    CHECK(s1.on_failure == SessionFailurePolicy::RECREATE);
    CHECK(s1.max_recreates == 3);  // recreate's default
    CHECK(s1.rerun_all);
    CHECK(s1.reestablish_within == Duration(2min));
    const auto& s2 = spec->sessions[1];
    CHECK(s2.recreate_token == "rt-776f726b65723a77");  // worker:w
    CHECK(troupe::make_recreate_token("", "w") == s2.recreate_token);
    auto place = troupe::parse_recreate_token(troupe::make_recreate_token("gpu0", "w"));
    REQUIRE(place);
    CHECK(place->resource_id == "gpu0");  // a resource names the place, not the worker
    CHECK(place->shard.empty());
    CHECK_FALSE(troupe::parse_recreate_token("rt-0123abcd"));
    CHECK_FALSE(troupe::parse_recreate_token("rt-776f726b65723a"));  // "worker:" names nobody
    CHECK(s2.max_recreates == 5);
    CHECK(s2.reestablish_within == Duration(0));

    auto plain = parse_definition(R"({"name": "w", "tasks": [{"name": "a", "handler": "h"}],
      "sessions": [{"name": "s", "tasks": ["a"]}]})");
    REQUIRE(plain);
    CHECK(plain->sessions[0].on_failure == SessionFailurePolicy::FAIL);
    CHECK(plain->sessions[0].max_recreates == 0);
    CHECK(plain->sessions[0].reestablish_within == Duration(30s));
    CHECK(plain->sessions[0].resource_id.empty());
  }

  TEST_CASE("a session's placement and failure settings are checked, each problem at its path") {
    auto problems = problems_of(R"({"name": "w", "tasks": [
      {"name": "a", "handler": "h"}, {"name": "b", "handler": "h"}, {"name": "c", "handler": "h"},
      {"name": "d", "handler": "h"}],
      "sessions": [{"name": "s1", "tasks": ["a"], "onFailure": "recreat"},
                   {"name": "s2", "tasks": ["b"], "maxRecreates": 2, "rerunAll": true, "resourceId": "gpu0",
                    "recreateToken": "rt-1"},
                   {"name": "s3", "tasks": ["c"], "onFailure": "recreate", "maxRecreates": 101,
                    "reestablishWithin": "soon", "resourceId": "a/b"},
                   {"name": "s4", "tasks": ["d"], "recreateToken": "rt-0123abcd"}]})");
    INFO(dump(problems));
    CHECK(has_problem(problems, "$.sessions[0].onFailure", "must be \"fail\" or \"recreate\", not \"recreat\" (did you mean \"recreate\"?)"));
    CHECK(has_problem(problems, "$.sessions[1].maxRecreates", "needs \"onFailure\": \"recreate\""));
    CHECK(has_problem(problems, "$.sessions[1].rerunAll", "needs \"onFailure\": \"recreate\""));
    CHECK(has_problem(problems, "$.sessions[1].recreateToken", "give resourceId or recreateToken, not both"));
    CHECK(has_problem(problems, "$.sessions[3].recreateToken", "is not a recreate token"));
    CHECK(has_problem(problems, "$.sessions[2].maxRecreates", "is at most 100"));
    CHECK(has_problem(problems, "$.sessions[2].reestablishWithin", "'soon' is not a duration"));
    CHECK(has_problem(problems, "$.sessions[2].resourceId", "may not contain '/'"));
  }

  TEST_CASE("text that is not JSON is one problem at the root") {
    auto problems = problems_of("{\"name\": ");
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].path == "$");
    CHECK(problems[0].message.find("is not valid JSON") == 0);
    auto result = parse_definition("[1, 2");
    REQUIRE_FALSE(result);
    CHECK(result.error().code == Errc::INVALID_ARGUMENT);
    CHECK(result.error().message.find("the workflow definition has 1 problem:\n  $: ") == 0);
  }
}
