// Fuzz target: workflow definition JSON, through the checker every definition passes before it
// runs (a gateway's start, a registered definition's file, a replayed workflowSubmitted): syntax
// first, then capnp's JsonCodec, the walk against workflow.capnp and the checks of meaning. What
// it accepts must hold together, since the actors index into it without checking again.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "schema/definition.hpp"
#include "schema/json_syntax.hpp"
#include "test/fuzz/fuzz_check.hpp"

namespace {

using troupe::WorkflowSpec;

/// Whether actors can arm a timer for `d`: CAF's clock counts nanoseconds in 64 bits, and a
/// deadline is a moment of it plus `d`.
bool armable(troupe::Duration d) {
  return d.count() >= 0 && d <= std::chrono::duration_cast<troupe::Duration>(std::chrono::nanoseconds::max()) / 2;
}

bool armable(const std::optional<troupe::Duration>& d) { return !d || armable(*d); }

/// What actors and replay rely on without checking: every index points into the spec, the
/// order is a topological one of every task, names find their tasks, timers can be armed.
void check_spec(const WorkflowSpec& spec) {
  const size_t n = spec.tasks.size();
  TROUPE_FUZZ_CHECK(n > 0, "an accepted definition has tasks");
  TROUPE_FUZZ_CHECK(spec.topological_order.size() == n, "the order lists every task");
  std::vector<size_t> position(n, n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t task = spec.topological_order[i];
    TROUPE_FUZZ_CHECK(task < n, "the order holds task indexes");
    TROUPE_FUZZ_CHECK(position[task] == n, "the order lists each task once");
    position[task] = i;
  }
  std::set<std::string_view> names;
  for (uint32_t i = 0; i < n; ++i) {
    const auto& task = spec.tasks[i];
    TROUPE_FUZZ_CHECK(!task.name.empty(), "tasks have names");
    TROUPE_FUZZ_CHECK(names.insert(task.name).second, "task names are unique");
    TROUPE_FUZZ_CHECK(spec.find_task(task.name) == i, "a task's name finds it");
    for (uint32_t dependency : task.depends_on) {
      TROUPE_FUZZ_CHECK(dependency < n && dependency != i, "a dependency is another task");
      TROUPE_FUZZ_CHECK(position[dependency] < position[i], "a task comes after its dependencies");
    }
    if (task.session) {
      TROUPE_FUZZ_CHECK(*task.session < spec.sessions.size(), "a task's session exists");
    }
    if (task.retry) {
      TROUPE_FUZZ_CHECK(task.retry->backoff_coefficient >= 1.0, "backoff does not shrink");
      TROUPE_FUZZ_CHECK(task.retry->initial_interval.count() >= 0, "a retry waits no negative time");
      TROUPE_FUZZ_CHECK(task.retry->maximum_interval >= task.retry->initial_interval,
                        "a retry's maximum interval is at least its initial one");
    }
    const auto& t = task.timeouts;
    TROUPE_FUZZ_CHECK(armable(t.schedule_to_start) && armable(t.start_to_close) && armable(t.schedule_to_close) &&
                          armable(t.heartbeat),
                      "a task's timeouts can be armed as timers");
    if (task.retry) {
      TROUPE_FUZZ_CHECK(armable(task.retry->initial_interval) && armable(task.retry->maximum_interval) &&
                            armable(task.retry->expiration_interval),
                        "a retry's intervals can be armed as timers");
    }
    if (t.schedule_to_close) {
      TROUPE_FUZZ_CHECK(!t.start_to_close || *t.start_to_close <= *t.schedule_to_close,
                        "startToClose is within scheduleToClose");
      TROUPE_FUZZ_CHECK(!t.schedule_to_start || *t.schedule_to_start <= *t.schedule_to_close,
                        "scheduleToStart is within scheduleToClose");
    }
  }
  for (uint32_t s = 0; s < spec.sessions.size(); ++s) {
    const auto& session = spec.sessions[s];
    TROUPE_FUZZ_CHECK(armable(session.creation_timeout) && armable(session.execution_timeout) &&
                          armable(session.reestablish_within),
                      "a session's timeouts can be armed as timers");
    for (uint32_t task : spec.sessions[s].tasks) {
      TROUPE_FUZZ_CHECK(task < n, "a session's tasks exist");
      TROUPE_FUZZ_CHECK(spec.tasks[task].session == s, "a session's task names that session");
    }
  }
  TROUPE_FUZZ_CHECK(!spec.find_task("").has_value(), "no task has an empty name");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  // What `troupe submit` checks before it sends, and the gateway before it takes an input.
  const auto syntax = troupe::json_syntax_error(json);
  (void)troupe::json_kind_of(json);

  auto check = troupe::check_definition(json);
  TROUPE_FUZZ_CHECK(check.spec.has_value() != !check.problems.empty(),
                    "a definition is either accepted or refused with its problems");
  for (const auto& problem : check.problems) {
    TROUPE_FUZZ_CHECK(problem.path.starts_with("$"), "a problem's path is a JSON path");
    TROUPE_FUZZ_CHECK(!problem.message.empty(), "a problem says what is wrong");
  }
  if (check.spec) {
    TROUPE_FUZZ_CHECK(!syntax.has_value(), "an accepted definition is JSON");
    check_spec(*check.spec);
  }

  auto parsed = troupe::parse_definition(json);
  TROUPE_FUZZ_CHECK(parsed.has_value() == check.spec.has_value(), "parse_definition agrees with the check");
  if (parsed) TROUPE_FUZZ_CHECK(*parsed == *check.spec, "parsing the same text twice gives the same spec");
  return 0;
}
