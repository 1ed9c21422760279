// Fuzz target: workflow definition JSON, through the checks every definition passes before it
// runs: as a scheduler takes it from a user (a gateway's start through the definition cache,
// with the limits and strict JSON: UTF-8, no member named twice) and as it reads a stored one
// back (a replayed workflowSubmitted, leniently). Both run capnp's JsonCodec, the walk against
// workflow.capnp and the checks of meaning. What either accepts must hold together, since the
// actors index into it without checking again.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "schema/definition.hpp"
#include "schema/definition_cache.hpp"
#include "schema/json_syntax.hpp"
#include "schema/limits.hpp"
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
  const auto strict_syntax = troupe::json_syntax_error(json);
  (void)troupe::json_kind_of(json);
  const troupe::InputLimits limits;

  // As a scheduler takes it from a user.
  auto taken = troupe::check_definition(json, limits);
  TROUPE_FUZZ_CHECK(taken.spec.has_value() != !taken.problems.empty(),
                    "a definition is either accepted or refused with its problems");
  for (const auto& problem : taken.problems) {
    TROUPE_FUZZ_CHECK(problem.path.starts_with("$"), "a problem's path is a JSON path");
    TROUPE_FUZZ_CHECK(!problem.message.empty(), "a problem says what is wrong");
  }
  if (taken.spec) {
    TROUPE_FUZZ_CHECK(!strict_syntax.has_value(), "a definition taken from a user is strict JSON");
    TROUPE_FUZZ_CHECK(taken.spec->tasks.size() <= limits.tasks, "a definition taken keeps the task limit");
    check_spec(*taken.spec);
  }
  troupe::DefinitionCache cache;
  auto cached = cache.get(json, limits);
  TROUPE_FUZZ_CHECK(cached.has_value() == taken.spec.has_value(), "the definition cache takes what the check takes");
  if (cached) TROUPE_FUZZ_CHECK(*cached->spec == *taken.spec, "the cache's spec is the check's");

  // As a scheduler reads a stored one back: whatever it took reads back the same.
  auto stored = troupe::check_definition(json);
  TROUPE_FUZZ_CHECK(stored.spec.has_value() != !stored.problems.empty(),
                    "a stored definition is either read or refused with its problems");
  if (taken.spec) {
    TROUPE_FUZZ_CHECK(stored.spec && *stored.spec == *taken.spec, "a definition taken reads back as it was taken");
  }
  if (stored.spec) check_spec(*stored.spec);
  auto parsed = troupe::parse_definition(json);
  TROUPE_FUZZ_CHECK(parsed.has_value() == stored.spec.has_value(), "parse_definition agrees with the check");
  return 0;
}
