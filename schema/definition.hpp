// Workflow definitions as troupe runs them: the validated logical graph, in plain C++ types,
// and the checker that turns definition JSON into one (or into every problem it has, each
// with its JSON path). Std-only; the Cap'n Proto side is in definition.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "schema/duration.hpp"
#include "schema/limits.hpp"
#include "schema/result.hpp"

namespace troupe {

struct ShellSpec {
  std::vector<std::string> command;                         ///< argv
  std::vector<std::pair<std::string, std::string>> env;     ///< added to the environment
  std::string cwd;                                          ///< empty: the worker's default

  friend bool operator==(const ShellSpec&, const ShellSpec&) = default;
};

struct HandlerSpec {
  std::string name;  ///< a C++ function registered under this name in the worker

  friend bool operator==(const HandlerSpec&, const HandlerSpec&) = default;
};

/// What a task (or a session action) runs.
using TaskBody = std::variant<ShellSpec, HandlerSpec>;

/// Cadence's activity timeouts, normalised: when scheduleToClose is given, a missing
/// scheduleToStart or startToClose is set to it, and neither exceeds it.
struct TimeoutsSpec {
  std::optional<Duration> schedule_to_start;
  std::optional<Duration> start_to_close;
  std::optional<Duration> schedule_to_close;
  std::optional<Duration> heartbeat;

  friend bool operator==(const TimeoutsSpec&, const TimeoutsSpec&) = default;
};

struct RetrySpec {
  Duration initial_interval = std::chrono::seconds(1);
  double backoff_coefficient = 2.0;
  Duration maximum_interval = std::chrono::seconds(100);
  uint32_t maximum_attempts = 0;  ///< attempts in all, the first included; 0: no limit
  std::optional<Duration> expiration_interval;
  std::vector<std::string> non_retryable_errors;

  friend bool operator==(const RetrySpec&, const RetrySpec&) = default;
};

struct TaskSpec {
  std::string name;
  std::vector<uint32_t> depends_on;  ///< indexes into WorkflowSpec::tasks
  std::string task_list = "default";
  int32_t priority = 0;
  TaskBody body;
  /// The task's own input: its TROUPE_INPUT instead of the workflow's input. "null" when the
  /// definition gives none (then has_input is false).
  std::string input_json = "null";
  bool has_input = false;
  TimeoutsSpec timeouts;
  std::optional<RetrySpec> retry;  ///< nullopt: one attempt, no retry
  std::optional<uint32_t> session;  ///< index into WorkflowSpec::sessions
  bool async_completion = false;    ///< ended by completeTask/failTask with its token

  friend bool operator==(const TaskSpec&, const TaskSpec&) = default;
};

/// What losing its worker does to a session (beyond the re-establishment window).
enum class SessionFailurePolicy : uint8_t {
  FAIL,      ///< the session fails, and with it the workflow
  RECREATE,  ///< a new session on another worker takes its place, up to max_recreates times
};

struct SessionSpec {
  std::string name;
  std::vector<uint32_t> tasks;  ///< indexes into WorkflowSpec::tasks
  std::optional<Duration> creation_timeout;
  std::optional<Duration> execution_timeout;
  std::optional<TaskBody> env_enter;
  std::optional<TaskBody> env_exit;
  /// Only a worker declaring this resource id may hold it; empty: any worker.
  std::string resource_id;
  /// The resource an earlier session held, by that session's recreate token; empty: none.
  std::string recreate_token;
  SessionFailurePolicy on_failure = SessionFailurePolicy::FAIL;
  uint32_t max_recreates = 0;  ///< RECREATE: how many times at most
  /// A recreated session runs every one of its tasks again, not only those that did not succeed.
  bool rerun_all = false;
  /// How long a lost worker's resource may take to register again for the session to continue
  /// there; zero: never wait.
  Duration reestablish_within = std::chrono::seconds(30);

  friend bool operator==(const SessionSpec&, const SessionSpec&) = default;
};

/// Task indexes by name: replay and every task event look a task up by name, and a scan of a
/// 100,000-task workflow per event made its replay quadratic. A cache of `tasks`, not part of
/// a spec's value (specs compare equal whatever their index holds).
struct TaskNameIndex {
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> by_name;

  friend bool operator==(const TaskNameIndex&, const TaskNameIndex&) { return true; }
};

struct WorkflowSpec {
  std::string name;
  std::string description;
  std::vector<TaskSpec> tasks;
  std::vector<SessionSpec> sessions;
  /// Every task index once, each after all of its dependencies.
  std::vector<uint32_t> topological_order;
  /// Filled by parse_definition (index_tasks); a spec built by hand without it is scanned.
  TaskNameIndex task_index;

  /// The index of the task called `name`.
  std::optional<uint32_t> find_task(std::string_view name) const;
  /// Builds task_index from `tasks` (names are unique in a valid spec).
  void index_tasks();

  friend bool operator==(const WorkflowSpec&, const WorkflowSpec&) = default;
};

/// One thing wrong with a definition. `path` is a JSON path such as "$.tasks[2].dependsOn[0]".
struct DefinitionProblem {
  std::string path;
  std::string message;

  friend bool operator==(const DefinitionProblem&, const DefinitionProblem&) = default;
};

/// The outcome of checking a definition: a spec, or every problem found.
struct DefinitionCheck {
  std::optional<WorkflowSpec> spec;
  std::vector<DefinitionProblem> problems;
};

/// Decodes and validates definition JSON as stored: one a scheduler took before (read back from
/// a history), or built by troupe itself. Neither limits nor the strict JSON rules apply: what
/// was taken once is read the same way ever after. Never throws for bad input.
DefinitionCheck check_definition(std::string_view json);

/// Decodes and validates definition JSON as a scheduler takes it from a user: check_definition's
/// rules, then its size, its number of tasks, the lengths of its names and the sizes of its
/// tasks' inputs within `limits`, and strict JSON (UTF-8 strings, no member named twice in one
/// object, each problem at its JSON path). Never throws for bad input.
DefinitionCheck check_definition(std::string_view json, const InputLimits& limits);

/// check_definition() as a Result: INVALID_ARGUMENT listing every problem, one per line,
/// "path: message".
Result<WorkflowSpec> parse_definition(std::string_view json);
Result<WorkflowSpec> parse_definition(std::string_view json, const InputLimits& limits);

/// For a caller holding a spec check_definition(json) made (a DefinitionCache's), what
/// check_definition(json, limits) adds, in two parts so that text over the size limit is never
/// parsed: the problems of the text (its size, strict JSON), then those of its spec.
std::vector<DefinitionProblem> definition_text_problems(std::string_view json, const InputLimits& limits);
std::vector<DefinitionProblem> definition_limit_problems(const WorkflowSpec& spec, const InputLimits& limits);

/// INVALID_ARGUMENT listing `problems` (not empty), as parse_definition does.
Error definition_refused(const std::vector<DefinitionProblem>& problems);

}  // namespace troupe
