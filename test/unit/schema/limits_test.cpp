// The limits on what a scheduler takes: each refused with a message naming the limit, the size
// given and what to do; definitions checked against them (and strict JSON) only when taken from
// a user, never when read back.
#include <doctest/doctest.h>

#include <string>

#include "schema/definition.hpp"
#include "schema/definition_cache.hpp"
#include "schema/limits.hpp"

using namespace troupe;

namespace {

bool says(const Error& error, const std::string& fragment) { return error.message.find(fragment) != std::string::npos; }

bool has_problem(const DefinitionCheck& check, const std::string& path, const std::string& fragment) {
  for (const auto& p : check.problems) {
    if (p.path == path && p.message.find(fragment) != std::string::npos) return true;
  }
  return false;
}

std::string dump(const DefinitionCheck& check) {
  std::string out;
  for (const auto& p : check.problems) out += p.path + ": " + p.message + "\n";
  return out;
}

/// A definition of `n` noop tasks, t0..t(n-1), none depending on another.
std::string tasks(size_t n) {
  std::string json = R"({"name": "many", "tasks": [)";
  for (size_t i = 0; i < n; ++i) json += (i ? "," : "") + std::string(R"({"name": "t)") + std::to_string(i) + R"(", "handler": "noop"})";
  return json + "]}";
}

}  // namespace

TEST_SUITE("schema.limits") {
  TEST_CASE("the defaults lie within what a config may set, and fit the 100,000-way fan-out") {
    const InputLimits defaults, most = InputLimits::most(), least = InputLimits::least();
    for (auto field : {&InputLimits::definition_bytes, &InputLimits::tasks, &InputLimits::workflow_id_bytes,
                       &InputLimits::name_bytes, &InputLimits::input_bytes, &InputLimits::result_bytes}) {
      CHECK(least.*field <= defaults.*field);
      CHECK(defaults.*field <= most.*field);
    }
    CHECK(defaults.tasks >= 100'002);  // a root, 100,000 branches and a join
    // A submission and the event that records it stay within one RPC message (64 MiB).
    CHECK(most.definition_bytes + most.input_bytes < (uint64_t{64} << 20));
  }

  TEST_CASE("sizes are described in bytes, and in IEC units from 1 KiB") {
    CHECK(describe_bytes(1) == "1 byte");
    CHECK(describe_bytes(1000) == "1000 bytes");
    CHECK(describe_bytes(4096) == "4096 bytes (4 KiB)");
    CHECK(describe_bytes(uint64_t{32} << 20) == "33554432 bytes (32 MiB)");
    CHECK(describe_bytes(40'000'000) == "40000000 bytes (38.1 MiB)");
  }

  TEST_CASE("a workflow id over the limit, not UTF-8 or with a control character is refused") {
    InputLimits limits;
    CHECK(check_workflow_id("", limits));
    CHECK(check_workflow_id(std::string(512, 'x'), limits));
    CHECK(check_workflow_id("nightly/été-2026", limits));
    auto long_id = check_workflow_id(std::string(513, 'x'), limits);
    REQUIRE_FALSE(long_id);
    CHECK(long_id.error().code == Errc::INVALID_ARGUMENT);
    CHECK(long_id.error().message ==
          "the workflow id is 513 bytes; the limit is 512 bytes (limits.workflow_id_length in the cluster config): "
          "choose a shorter id");
    limits.workflow_id_bytes = 64;
    CHECK_FALSE(check_workflow_id(std::string(65, 'x'), limits));
    auto bad = check_workflow_id("wf-\xff", limits);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message == "the workflow id is not valid UTF-8: at byte offset 3, byte 0xff cannot occur in UTF-8");
    auto escape = check_workflow_id("wf\x1b[2J", limits);
    REQUIRE_FALSE(escape);
    CHECK(says(escape.error(), "the workflow id 'wf\\x1b[2J' has a control character at byte offset 2"));
  }

  TEST_CASE("a workflow input over the limit, or not JSON with UTF-8 strings, is refused") {
    InputLimits limits;
    limits.input_bytes = 1024;
    const std::string fits = "{\"blob\": \"" + std::string(1024 - 12, 'x') + "\"}";
    REQUIRE(fits.size() == 1024);
    CHECK(check_workflow_input(fits, limits));
    auto over = check_workflow_input(fits + " ", limits);
    REQUIRE_FALSE(over);
    CHECK(says(over.error(), "the workflow input is 1025 bytes (1.0 KiB); the limit is 1024 bytes (1 KiB) "
                             "(limits.input_size in the cluster config): pass large data by reference"));
    auto utf8 = check_workflow_input("{\"name\": \"\xc0\xaf\"}", limits);
    REQUIRE_FALSE(utf8);
    CHECK(says(utf8.error(), "at $.name: invalid UTF-8 at byte offset 10"));
  }

  TEST_CASE("a client's task result or failure over its limit, or not UTF-8, is refused") {
    InputLimits limits;
    limits.result_bytes = 2048;
    CHECK(check_task_result("", limits));
    CHECK(check_task_result("{\"ok\": true}", limits));
    auto big = check_task_result("\"" + std::string(2047, 'r') + "\"", limits);
    REQUIRE_FALSE(big);
    CHECK(says(big.error(), "the task's result is 2049 bytes (2.0 KiB); the limit is 2048 bytes (2 KiB) "
                            "(limits.result_size in the cluster config)"));
    CHECK_FALSE(check_task_result("\"\xff\"", limits));

    CHECK(check_task_failure("Rejected", "by the reviewer", limits));
    auto reason = check_task_failure(std::string(201, 'r'), "", limits);
    REQUIRE_FALSE(reason);
    CHECK(says(reason.error(), "the failure's reason is 201 bytes; the limit is 200 bytes (limits.name_length"));
    CHECK_FALSE(check_task_failure("Rejected", std::string(2049, 'd'), limits));
    auto utf8 = check_task_failure("Rejected", "caf\xe9", limits);
    REQUIRE_FALSE(utf8);
    CHECK(utf8.error().message == "the failure's details is not valid UTF-8: at byte offset 3, the character that "
                                  "begins with byte 0xe9 is cut short by the end of the text");
  }
}

TEST_SUITE("schema.definition") {
  TEST_CASE("a submitted definition over the size limit is refused before it is parsed") {
    InputLimits limits;
    limits.definition_bytes = 1024;
    const std::string big = tasks(30);
    REQUIRE(big.size() > 1024);
    auto check = check_definition(big, limits);
    CHECK_FALSE(check.spec);
    REQUIRE(check.problems.size() == 1);
    CHECK(check.problems[0].path == "$");
    CHECK(check.problems[0].message.starts_with("the definition is " + std::to_string(big.size()) +
                                                " bytes (1.0 KiB); the limit is 1024 bytes (1 KiB) "
                                                "(limits.definition_size in the cluster config): make it smaller"));
    // Even text that is no JSON at all: its size is all that is looked at.
    CHECK(has_problem(check_definition(std::string(2000, '{'), limits), "$", "the definition is 2000 bytes"));
    CHECK(check_definition(big).spec);  // read back from a history: no limits
  }

  TEST_CASE("a submitted definition with more tasks than the limit is refused") {
    InputLimits limits;
    limits.tasks = 10;
    CHECK(check_definition(tasks(10), limits).spec);
    auto check = check_definition(tasks(11), limits);
    CHECK_FALSE(check.spec);
    CHECK_MESSAGE(has_problem(check, "$.tasks",
                              "the workflow is 11 tasks; the limit is 10 tasks (limits.tasks_per_workflow in the "
                              "cluster config): split it into several workflows, or raise the limit"),
                  dump(check));
    // The defaults take the issue's 100,000-way fan-out.
    CHECK(check_definition(tasks(100'002), InputLimits{}).spec);
  }

  TEST_CASE("every name over the name limit is refused at its path, with the definition's other problems") {
    InputLimits limits;
    limits.name_bytes = 8;
    const std::string json = R"({"name": "workflow-9", "tasks": [
      {"name": "long-task", "taskList": "gpu-large", "handler": "a-handler"},
      {"name": "ok", "handler": "noop", "dependsOn": ["missing"]}],
      "sessions": [{"name": "a-session", "tasks": ["ok"], "resourceId": "gpu-0-big",
                    "envEnter": {"handler": "enter-env"}}]})";
    auto check = check_definition(json, limits);
    CHECK_FALSE(check.spec);
    INFO(dump(check));
    CHECK(has_problem(check, "$.name", "the workflow name is 10 bytes; the limit is 8 bytes (limits.name_length in "
                                      "the cluster config): choose a shorter one, or raise the limit"));
    CHECK(has_problem(check, "$.tasks[0].name", "the task name is 9 bytes"));
    CHECK(has_problem(check, "$.tasks[0].taskList", "the task list is 9 bytes"));
    CHECK(has_problem(check, "$.tasks[0].handler", "the handler name is 9 bytes"));
    CHECK(has_problem(check, "$.sessions[0].name", "the session name is 9 bytes"));
    CHECK(has_problem(check, "$.sessions[0].resourceId", "the resource id is 9 bytes"));
    CHECK(has_problem(check, "$.sessions[0].envEnter.handler", "the handler name is 9 bytes"));
    CHECK(has_problem(check, "$.tasks[1].dependsOn[0]", "unknown task 'missing'"));
    CHECK(check.problems.size() == 8);
    // The default: 200 bytes. Stored definitions are read with no limit.
    const std::string named = R"({"name": ")" + std::string(201, 'w') + R"(", "tasks": [{"name": "t", "handler": "noop"}]})";
    CHECK(has_problem(check_definition(named, InputLimits{}), "$.name", "the workflow name is 201 bytes"));
    CHECK(check_definition(named).spec);
  }

  TEST_CASE("a task's own input over the input limit is refused at its path") {
    InputLimits limits;
    limits.input_bytes = 1024;
    const std::string json = R"({"name": "w", "tasks": [{"name": "small", "handler": "noop", "input": {"n": 1}},
      {"name": "big", "handler": "noop", "input": {"blob": ")" + std::string(1100, 'x') + R"("}}]})";
    auto check = check_definition(json, limits);
    CHECK_FALSE(check.spec);
    REQUIRE(check.problems.size() == 1);
    CHECK(check.problems[0].path == "$.tasks[1].input");
    CHECK(check.problems[0].message.starts_with("the task's input is 1111 bytes (1.1 KiB); the limit is 1024 bytes"));
  }

  TEST_CASE("a submitted definition with invalid UTF-8 is refused at the string's path and byte offset") {
    const std::string json = "{\"name\": \"w\",\n \"tasks\": [{\"name\": \"caf\xe9\", \"handler\": \"noop\"}]}";
    auto check = check_definition(json, InputLimits{});
    CHECK_FALSE(check.spec);
    REQUIRE(check.problems.size() == 1);
    CHECK(check.problems[0].path == "$.tasks[0].name");
    CHECK(check.problems[0].message ==
          "line 2, column 25: invalid UTF-8 at byte offset 38 (byte 3 of the string): the character that begins "
          "with byte 0xe9 is cut short by byte 0x22; JSON text must be UTF-8");
    // A lone surrogate escape in an input is no character either.
    auto escaped = check_definition(R"({"name": "w", "tasks": [{"name": "t", "handler": "noop", "input": ["\udfff"]}]})",
                                    InputLimits{});
    CHECK(has_problem(escaped, "$.tasks[0].input[0]", "\\udfff is half of a UTF-16 surrogate pair"));
    // A history written before troupe checked still replays.
    CHECK(check_definition(json).spec);
  }

  TEST_CASE("a submitted definition that names a member twice is refused at its path") {
    const std::string json = R"({"name": "w", "tasks": [
      {"name": "a", "handler": "noop", "timeouts": {"startToClose": "1s", "scheduleToStart": "1s",
                                                    "startToClose": "1h"}},
      {"name": "b", "shell": {"command": ["env"], "env": {"MODE": "a", "MODE": "b"}}}]})";
    auto check = check_definition(json, InputLimits{});
    CHECK_FALSE(check.spec);
    REQUIRE(check.problems.size() == 1);  // the text's first problem: the walk stops there
    CHECK(check.problems[0].path == "$.tasks[0].timeouts.startToClose");
    CHECK(check.problems[0].message ==
          "line 3, column 53: the member name \"startToClose\" is given twice in one object (at byte offset 176, "
          "and first at line 2, column 53): an object may name each member once");
    auto env = check_definition(R"({"name": "w", "tasks": [
      {"name": "b", "shell": {"command": ["env"], "env": {"MODE": "a", "MODE": "b"}}}]})",
                                InputLimits{});
    CHECK(has_problem(env, "$.tasks[0].shell.env.MODE", "given twice"));
    CHECK(check_definition(json).spec);  // as stored: read as it always was
  }

  TEST_CASE("parse_definition with limits lists the problems as parse_definition does") {
    InputLimits limits;
    limits.name_bytes = 8;
    auto parsed = parse_definition(R"({"name": "workflows", "tasks": [{"name": "t", "handler": "noop"}]})", limits);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == Errc::INVALID_ARGUMENT);
    CHECK(parsed.error().message.starts_with("the workflow definition has 1 problem:\n  $.name: the workflow name is 9 bytes"));
  }
}

TEST_SUITE("schema.definition_cache") {
  TEST_CASE("a definition a user submits is held to the limits even when its spec is cached") {
    DefinitionCache cache;
    const std::string json = tasks(5);
    REQUIRE(cache.get(json));  // parsed and kept (as replay would)
    InputLimits limits;
    limits.tasks = 4;
    auto refused = cache.get(json, limits);
    REQUIRE_FALSE(refused);
    CHECK(says(refused.error(), "$.tasks: the workflow is 5 tasks; the limit is 4 tasks"));
    limits.tasks = 5;
    auto taken = cache.get(json, limits);
    REQUIRE(taken);
    CHECK(taken->spec->tasks.size() == 5);
    CHECK(cache.size() == 1);
    // Taken once, the text is still held to the size limit in force.
    InputLimits small = limits;
    small.definition_bytes = json.size() - 1;
    CHECK(says(cache.get(json, small).error(), "$: the definition is " + std::to_string(json.size()) + " bytes"));
    limits.definition_bytes = 1024;
    const std::string twice = R"({"name": "w", "name": "v", "tasks": [{"name": "t", "handler": "noop"}]})";
    CHECK(says(cache.get(twice, limits).error(), "$.name: line 1, column 15: the member name \"name\" is given twice"));
    CHECK(cache.size() == 1);  // refused before it was parsed
  }
}
