// Definition JSON -> WorkflowSpec, in three passes so that every problem is reported with its
// JSON path rather than the first exception capnp would throw:
//   1. check the syntax (json_syntax.hpp: a syntax error, with its line and column, or a text
//      that is no object ends the check here), then parse it into a json::Value;
//   2. walk that value against workflow.capnp's schema: unknown fields, wrong types, two
//      members of one union, integers out of range;
//   3. decode with capnp::JsonCodec and check meaning: names, dependencies, cycles, durations,
//      timeouts, retry policies, sessions.
// A definition a scheduler takes from a user is also held to InputLimits and strict JSON: its
// size and its JSON (UTF-8 strings, each member named once) before pass 1, its tasks, names and
// task inputs after pass 3. One read back from a history is not: it was taken once already.
#include "schema/definition.hpp"

#include "schema/recreate_token.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include <capnp/compat/json.h>
#include <capnp/dynamic.h>
#include <capnp/message.h>
#include <capnp/schema.h>
#include <kj/exception.h>

#include "schema/json_syntax.hpp"
#include "schema/limits.hpp"
#include "schema/suggest.hpp"
#include "schema/workflow.capnp.h"

namespace troupe {
namespace {

using capnp::JsonValue;
using Problems = std::vector<DefinitionProblem>;

std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

std::string index_path(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

/// Copies a JSON value between messages, so json.Value fields (task input, env) keep the
/// user's JSON as it is rather than being read as the json.Value struct's own encoding.
void copy_json(JsonValue::Reader from, JsonValue::Builder to) {
  switch (from.which()) {
    case JsonValue::NULL_: to.setNull(); return;
    case JsonValue::BOOLEAN: to.setBoolean(from.getBoolean()); return;
    case JsonValue::NUMBER: to.setNumber(from.getNumber()); return;
    case JsonValue::STRING: to.setString(from.getString()); return;
    case JsonValue::ARRAY: {
      auto items = from.getArray();
      auto out = to.initArray(items.size());
      for (uint32_t i = 0; i < items.size(); ++i) copy_json(items[i], out[i]);
      return;
    }
    case JsonValue::OBJECT: {
      auto fields = from.getObject();
      auto out = to.initObject(fields.size());
      for (uint32_t i = 0; i < fields.size(); ++i) {
        out[i].setName(fields[i].getName());
        copy_json(fields[i].getValue(), out[i].initValue());
      }
      return;
    }
    case JsonValue::CALL: to.setNull(); return;  // not JSON; the parser never produces it
  }
}

class RawJsonHandler final : public capnp::JsonCodec::Handler<JsonValue> {
 public:
  void encode(const capnp::JsonCodec&, JsonValue::Reader input,
              JsonValue::Builder output) const override {
    copy_json(input, output);
  }
  void decode(const capnp::JsonCodec&, JsonValue::Reader input,
              JsonValue::Builder output) const override {
    copy_json(input, output);
  }
};

// --- pass 2: the JSON value against the schema ----------------------------------------------

const char* json_kind(JsonValue::Reader v) {
  switch (v.which()) {
    case JsonValue::NULL_: return "null";
    case JsonValue::BOOLEAN: return "a boolean";
    case JsonValue::NUMBER: return "a number";
    case JsonValue::STRING: return "a string";
    case JsonValue::ARRAY: return "an array";
    case JsonValue::OBJECT: return "an object";
    case JsonValue::CALL: return "a call";
  }
  return "a value";
}

void walk_value(capnp::Type type, JsonValue::Reader v, const std::string& path, Problems& out);

void walk_struct(capnp::StructSchema schema, JsonValue::Reader v, const std::string& path,
                 Problems& out) {
  if (v.which() != JsonValue::OBJECT) {
    out.push_back({path, std::string("must be an object, not ") + json_kind(v)});
    return;
  }
  std::string union_member;  // the union member already seen, if any
  for (auto field : v.getObject()) {
    const std::string name = text(field.getName());
    const std::string field_path = path + "." + name;
    KJ_IF_MAYBE(member, schema.findFieldByName(field.getName())) {
      if (member->getProto().getDiscriminantValue() != capnp::schema::Field::NO_DISCRIMINANT) {
        if (!union_member.empty()) {
          out.push_back({field_path, "give only one of '" + union_member + "' and '" + name + "'"});
        }
        union_member = name;
      }
      walk_value(member->getType(), field.getValue(), field_path, out);
    } else {
      std::string known;
      for (auto f : schema.getFields()) {
        known += (known.empty() ? "" : ", ") + std::string(f.getProto().getName().cStr());
      }
      out.push_back({field_path, "unknown field '" + name + "' (known: " + known + ")"});
    }
  }
}

void walk_integer(JsonValue::Reader v, double lo, double hi, const std::string& path, Problems& out) {
  if (v.which() != JsonValue::NUMBER) {
    out.push_back({path, std::string("must be a whole number, not ") + json_kind(v)});
    return;
  }
  const double n = v.getNumber();
  if (n != std::floor(n) || n < lo || n > hi) {
    out.push_back({path, "must be a whole number from " + std::to_string(int64_t(lo)) + " to " +
                             std::to_string(int64_t(hi))});
  }
}

void walk_value(capnp::Type type, JsonValue::Reader v, const std::string& path, Problems& out) {
  auto expect = [&](JsonValue::Which which, const char* what) {
    if (v.which() != which) out.push_back({path, std::string("must be ") + what + ", not " + json_kind(v)});
  };
  switch (type.which()) {
    case capnp::schema::Type::TEXT: return expect(JsonValue::STRING, "a string");
    case capnp::schema::Type::BOOL: return expect(JsonValue::BOOLEAN, "true or false");
    case capnp::schema::Type::FLOAT32:
    case capnp::schema::Type::FLOAT64: return expect(JsonValue::NUMBER, "a number");
    case capnp::schema::Type::INT8: return walk_integer(v, -128, 127, path, out);
    case capnp::schema::Type::INT16: return walk_integer(v, -32768, 32767, path, out);
    case capnp::schema::Type::INT32: return walk_integer(v, -2147483648.0, 2147483647.0, path, out);
    case capnp::schema::Type::UINT8: return walk_integer(v, 0, 255, path, out);
    case capnp::schema::Type::UINT16: return walk_integer(v, 0, 65535, path, out);
    case capnp::schema::Type::UINT32: return walk_integer(v, 0, 4294967295.0, path, out);
    case capnp::schema::Type::INT64:
    case capnp::schema::Type::UINT64: return walk_integer(v, -9.0e15, 9.0e15, path, out);
    case capnp::schema::Type::VOID: return expect(JsonValue::NULL_, "null");
    case capnp::schema::Type::LIST: {
      if (v.which() != JsonValue::ARRAY) {
        out.push_back({path, std::string("must be an array, not ") + json_kind(v)});
        return;
      }
      auto element = type.asList().getElementType();
      auto items = v.getArray();
      for (uint32_t i = 0; i < items.size(); ++i) walk_value(element, items[i], index_path(path, i), out);
      return;
    }
    case capnp::schema::Type::STRUCT: {
      auto schema = type.asStruct();
      if (schema.getProto().getId() == capnp::typeId<JsonValue>()) return;  // any JSON
      return walk_struct(schema, v, path, out);
    }
    case capnp::schema::Type::ENUM: {
      if (v.which() != JsonValue::STRING) {
        out.push_back({path, std::string("must be a string, not ") + json_kind(v)});
      } else if (type.asEnum().findEnumerantByName(v.getString()) == nullptr) {
        out.push_back({path, "unknown value '" + text(v.getString()) + "'"});
      }
      return;
    }
    default:
      out.push_back({path, "is not settable from JSON"});
      return;
  }
}

// --- pass 3: meaning ----------------------------------------------------------------------

/// Collects problems while converting the decoded definition into a WorkflowSpec.
class SpecBuilder {
 public:
  explicit SpecBuilder(Problems& problems) : problems_(problems) {}

  void problem(std::string path, std::string message) {
    problems_.push_back({std::move(path), std::move(message)});
  }

  /// A positive duration at `path`, or nullopt (absent, or a problem recorded).
  std::optional<Duration> duration(capnp::Text::Reader value, bool present, const std::string& path,
                                   bool allow_zero = false) {
    if (!present) return std::nullopt;
    auto parsed = parse_duration(std::string_view(value.cStr(), value.size()));
    if (!parsed) {
      problem(path, parsed.error().message);
      return std::nullopt;
    }
    if (parsed->count() < 0 || (!allow_zero && parsed->count() == 0)) {
      problem(path, "must be longer than zero");
      return std::nullopt;
    }
    return *parsed;
  }

  /// A non-empty name without NUL, '/' or control characters. (Its length is a limit of what a
  /// scheduler takes: definition_limit_problems.)
  void check_name(const std::string& name, const std::string& path, const char* what) {
    if (name.empty()) return problem(path, std::string(what) + " is required");
    for (unsigned char c : name) {
      if (c < 0x20 || c == '/' || c == 0x7f) {
        return problem(path, std::string(what) + " '" + name +
                                 "' may not contain '/' or control characters");
      }
    }
  }

  std::optional<TaskBody> shell(schema::ShellCommand::Reader shell, const std::string& path) {
    ShellSpec spec;
    for (auto arg : shell.getCommand()) spec.command.push_back(text(arg));
    if (spec.command.empty() || spec.command[0].empty()) {
      problem(path + ".command", "needs at least the program to run");
    }
    if (shell.hasEnv()) {
      auto env = shell.getEnv();
      if (env.which() != JsonValue::OBJECT) {
        problem(path + ".env", std::string("must be an object of strings, not ") + json_kind(env));
      } else {
        for (auto var : env.getObject()) {
          const std::string name = text(var.getName());
          if (var.getValue().which() != JsonValue::STRING) {
            problem(path + ".env." + name, "must be a string");
          } else if (name.empty() || name.find('=') != std::string::npos) {
            problem(path + ".env." + name, "is not a valid environment variable name");
          } else {
            spec.env.emplace_back(name, text(var.getValue().getString()));
          }
        }
      }
    }
    spec.cwd = text(shell.getCwd());
    return TaskBody(std::move(spec));
  }

  std::optional<TaskBody> handler(capnp::Text::Reader name, const std::string& path) {
    if (name.size() == 0) {
      problem(path, "names no handler");
      return std::nullopt;
    }
    return TaskBody(HandlerSpec{text(name)});
  }

  TimeoutsSpec timeouts(schema::Timeouts::Reader t, const std::string& path) {
    TimeoutsSpec spec;
    spec.schedule_to_start =
        duration(t.getScheduleToStart(), t.hasScheduleToStart(), path + ".scheduleToStart");
    spec.start_to_close = duration(t.getStartToClose(), t.hasStartToClose(), path + ".startToClose");
    spec.schedule_to_close =
        duration(t.getScheduleToClose(), t.hasScheduleToClose(), path + ".scheduleToClose");
    spec.heartbeat = duration(t.getHeartbeat(), t.hasHeartbeat(), path + ".heartbeat");
    const bool any = t.hasScheduleToStart() || t.hasStartToClose() || t.hasScheduleToClose() ||
                     t.hasHeartbeat();
    if (any && !t.hasScheduleToClose() && !(t.hasScheduleToStart() && t.hasStartToClose())) {
      problem(path, "give scheduleToClose, or both scheduleToStart and startToClose, so every "
                    "attempt is bounded");
    }
    if (auto whole = spec.schedule_to_close) {
      // Cadence's normalisation: missing parts default to the whole, and none exceeds it.
      spec.schedule_to_start = std::min(spec.schedule_to_start.value_or(*whole), *whole);
      spec.start_to_close = std::min(spec.start_to_close.value_or(*whole), *whole);
    }
    if (spec.heartbeat && spec.start_to_close && *spec.heartbeat > *spec.start_to_close) {
      problem(path + ".heartbeat", "is longer than startToClose (" +
                                       format_duration(*spec.start_to_close) +
                                       "), so it could never fire");
    }
    return spec;
  }

  RetrySpec retry(schema::RetryPolicy::Reader r, const TimeoutsSpec& timeouts,
                  const std::string& path) {
    RetrySpec spec;
    if (auto d = duration(r.getInitialInterval(), r.hasInitialInterval(), path + ".initialInterval")) {
      spec.initial_interval = *d;
    }
    // Temporal's default, 100 x initialInterval, but no longer than a duration may be: 100 x
    // a very long initialInterval does not fit in one.
    spec.maximum_interval =
        spec.initial_interval <= max_duration / 100 ? spec.initial_interval * 100 : max_duration;
    if (auto d = duration(r.getMaximumInterval(), r.hasMaximumInterval(), path + ".maximumInterval")) {
      spec.maximum_interval = *d;
      if (*d < spec.initial_interval) {
        problem(path + ".maximumInterval",
                "is shorter than initialInterval (" + format_duration(spec.initial_interval) + ")");
      }
    }
    if (r.getBackoffCoefficient() != 0) {
      spec.backoff_coefficient = r.getBackoffCoefficient();
      if (!(spec.backoff_coefficient >= 1.0) || !std::isfinite(spec.backoff_coefficient)) {
        problem(path + ".backoffCoefficient", "must be at least 1");
      }
    }
    if (r.getMaximumAttempts() < 0) {
      problem(path + ".maximumAttempts", "must be 0 (no limit) or more");
    } else {
      spec.maximum_attempts = static_cast<uint32_t>(r.getMaximumAttempts());
    }
    spec.expiration_interval =
        duration(r.getExpirationInterval(), r.hasExpirationInterval(), path + ".expirationInterval");
    for (uint32_t i = 0; i < r.getNonRetryableErrors().size(); ++i) {
      auto reason = text(r.getNonRetryableErrors()[i]);
      if (reason.empty()) problem(index_path(path + ".nonRetryableErrors", i), "is empty");
      spec.non_retryable_errors.push_back(std::move(reason));
    }
    if (r.getMaximumAttempts() == 0 && !r.hasExpirationInterval() && !timeouts.schedule_to_close) {
      problem(path, "never stops retrying: set maximumAttempts, expirationInterval or "
                    "timeouts.scheduleToClose");
    }
    return spec;
  }

 private:
  Problems& problems_;
};

/// Kahn's algorithm; on a cycle, returns the tasks of one cycle in order instead.
std::variant<std::vector<uint32_t>, std::vector<uint32_t>> topological_order(const WorkflowSpec& spec) {
  const size_t n = spec.tasks.size();
  std::vector<uint32_t> waiting(n, 0);
  std::vector<std::vector<uint32_t>> dependents(n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t d : spec.tasks[i].depends_on) {
      ++waiting[i];
      dependents[d].push_back(i);
    }
  }
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) order.push_back(i);
  }
  for (size_t next = 0; next < order.size(); ++next) {
    for (uint32_t d : dependents[order[next]]) {
      if (--waiting[d] == 0) order.push_back(d);
    }
  }
  if (order.size() == n) return std::variant<std::vector<uint32_t>, std::vector<uint32_t>>(std::in_place_index<0>, order);
  // Every task left waits on another task left: follow dependencies until one repeats.
  uint32_t at = 0;
  while (waiting[at] == 0) ++at;
  std::vector<int> seen_at(n, -1);
  std::vector<uint32_t> walk;
  while (seen_at[at] < 0) {
    seen_at[at] = static_cast<int>(walk.size());
    walk.push_back(at);
    for (uint32_t d : spec.tasks[at].depends_on) {
      if (waiting[d] > 0) {
        at = d;
        break;
      }
    }
  }
  std::vector<uint32_t> cycle(walk.begin() + seen_at[at], walk.end());
  std::reverse(cycle.begin(), cycle.end());  // dependency first: a -> b means b depends on a
  return std::variant<std::vector<uint32_t>, std::vector<uint32_t>>(std::in_place_index<1>, cycle);
}

/// Where a session may run and what losing its worker does: resourceId or recreateToken (not
/// both), onFailure with maxRecreates, rerunAll, reestablishWithin.
void placement_and_failure(SpecBuilder& b, schema::SessionDefinition::Reader session, const std::string& path,
                           SessionSpec& ss) {
  if (session.hasResourceId()) {
    ss.resource_id = text(session.getResourceId());
    b.check_name(ss.resource_id, path + ".resourceId", "the resource id");
  }
  if (session.hasRecreateToken()) {
    ss.recreate_token = text(session.getRecreateToken());
    b.check_name(ss.recreate_token, path + ".recreateToken", "the recreate token");
    if (!ss.recreate_token.empty() && !parse_recreate_token(ss.recreate_token)) {
      b.problem(path + ".recreateToken",
                "is not a recreate token: take one from an opened session (troupe status --json: "
                "sessions[].recreateToken)");
    }
    if (!ss.resource_id.empty()) {
      b.problem(path + ".recreateToken",
                "give resourceId or recreateToken, not both: a recreate token names the resource already");
    }
  }
  const std::string on_failure = session.hasOnFailure() ? text(session.getOnFailure()) : "fail";
  if (on_failure == "recreate") {
    ss.on_failure = SessionFailurePolicy::RECREATE;
    ss.max_recreates = session.getMaxRecreates() == 0 ? 3 : session.getMaxRecreates();
    if (ss.max_recreates > 100) b.problem(path + ".maxRecreates", "is at most 100");
  } else {
    if (on_failure != "fail") {
      const auto near = near_miss(on_failure, {"fail", "recreate"});
      b.problem(path + ".onFailure", "must be \"fail\" or \"recreate\", not \"" + on_failure + "\"" +
                                         (near ? " (did you mean \"" + *near + "\"?)" : std::string()));
    }
    if (session.getMaxRecreates() != 0) b.problem(path + ".maxRecreates", "needs \"onFailure\": \"recreate\"");
    if (session.getRerunAll()) b.problem(path + ".rerunAll", "needs \"onFailure\": \"recreate\"");
  }
  ss.rerun_all = session.getRerunAll();
  if (auto within = b.duration(session.getReestablishWithin(), session.hasReestablishWithin(),
                               path + ".reestablishWithin", true)) {
    ss.reestablish_within = *within;
  }
}

/// The spec `def` describes, as far as it can be built: complete when `problems` gained nothing.
WorkflowSpec build_spec(schema::WorkflowDefinition::Reader def, const capnp::JsonCodec& codec, Problems& problems) {
  SpecBuilder b(problems);
  WorkflowSpec spec;
  spec.name = text(def.getName());
  spec.description = text(def.getDescription());
  b.check_name(spec.name, "$.name", "the workflow name");

  auto tasks = def.getTasks();
  if (tasks.size() == 0) b.problem("$.tasks", "a workflow needs at least one task");
  std::map<std::string, uint32_t> by_name;
  for (uint32_t i = 0; i < tasks.size(); ++i) {
    const std::string path = index_path("$.tasks", i);
    auto task = tasks[i];
    TaskSpec t;
    t.name = text(task.getName());
    b.check_name(t.name, path + ".name", "the task name");
    if (!t.name.empty()) {
      auto [it, inserted] = by_name.emplace(t.name, i);
      if (!inserted) {
        b.problem(path + ".name", "duplicate task name '" + t.name + "' (first at " +
                                      index_path("$.tasks", it->second) + ")");
      }
    }
    spec.tasks.push_back(std::move(t));
  }
  for (uint32_t i = 0; i < tasks.size(); ++i) {
    const std::string path = index_path("$.tasks", i);
    auto task = tasks[i];
    TaskSpec& t = spec.tasks[i];
    auto deps = task.getDependsOn();
    for (uint32_t j = 0; j < deps.size(); ++j) {
      const std::string dep = text(deps[j]);
      const std::string dep_path = index_path(path + ".dependsOn", j);
      auto it = by_name.find(dep);
      if (it == by_name.end()) {
        b.problem(dep_path, "unknown task '" + dep + "'");
      } else if (it->second == i) {
        b.problem(dep_path, "a task cannot depend on itself");
      } else if (std::find(t.depends_on.begin(), t.depends_on.end(), it->second) != t.depends_on.end()) {
        b.problem(dep_path, "'" + dep + "' is listed twice");
      } else {
        t.depends_on.push_back(it->second);
      }
    }
    if (task.hasTaskList()) {
      t.task_list = text(task.getTaskList());
      if (t.task_list.empty()) t.task_list = "default";
      b.check_name(t.task_list, path + ".taskList", "the task list");
    }
    t.priority = task.getPriority();
    t.async_completion = task.getAsyncCompletion();
    std::optional<TaskBody> body;
    switch (task.which()) {
      case schema::TaskDefinition::SHELL:
        if (!task.hasShell()) {
          b.problem(path, "needs a body: \"shell\" (a command) or \"handler\" (a registered name)");
        } else {
          body = b.shell(task.getShell(), path + ".shell");
        }
        break;
      case schema::TaskDefinition::HANDLER:
        body = b.handler(task.getHandler(), path + ".handler");
        break;
    }
    if (body) t.body = std::move(*body);
    if (task.hasInput()) {
      auto encoded = codec.encodeRaw(task.getInput());
      t.input_json.assign(encoded.cStr(), encoded.size());
      t.has_input = true;
    }
    if (task.hasTimeouts()) t.timeouts = b.timeouts(task.getTimeouts(), path + ".timeouts");
    if (task.hasRetry()) t.retry = b.retry(task.getRetry(), t.timeouts, path + ".retry");
  }

  auto sessions = def.getSessions();
  std::map<std::string, uint32_t> session_names;
  for (uint32_t s = 0; s < sessions.size(); ++s) {
    const std::string path = index_path("$.sessions", s);
    auto session = sessions[s];
    SessionSpec ss;
    ss.name = text(session.getName());
    b.check_name(ss.name, path + ".name", "the session name");
    if (!ss.name.empty() && !session_names.emplace(ss.name, s).second) {
      b.problem(path + ".name", "duplicate session name '" + ss.name + "'");
    }
    auto members = session.getTasks();
    if (members.size() == 0) b.problem(path + ".tasks", "a session needs at least one task");
    for (uint32_t j = 0; j < members.size(); ++j) {
      const std::string member = text(members[j]);
      const std::string member_path = index_path(path + ".tasks", j);
      auto it = by_name.find(member);
      if (it == by_name.end()) {
        b.problem(member_path, "unknown task '" + member + "'");
        continue;
      }
      auto& owner = spec.tasks[it->second].session;
      if (owner) {
        b.problem(member_path, "task '" + member + "' is already in session " +
                                   index_path("$.sessions", *owner));
        continue;
      }
      owner = s;
      ss.tasks.push_back(it->second);
    }
    ss.creation_timeout = b.duration(session.getCreationTimeout(), session.hasCreationTimeout(),
                                     path + ".creationTimeout");
    ss.execution_timeout = b.duration(session.getExecutionTimeout(), session.hasExecutionTimeout(),
                                      path + ".executionTimeout");
    auto action = [&](schema::SessionAction::Reader a, const std::string& action_path) {
      std::optional<TaskBody> body;
      switch (a.which()) {
        case schema::SessionAction::NONE: break;
        case schema::SessionAction::SHELL: body = b.shell(a.getShell(), action_path + ".shell"); break;
        case schema::SessionAction::HANDLER: body = b.handler(a.getHandler(), action_path + ".handler"); break;
      }
      return body;
    };
    if (session.hasEnvEnter()) ss.env_enter = action(session.getEnvEnter(), path + ".envEnter");
    if (session.hasEnvExit()) ss.env_exit = action(session.getEnvExit(), path + ".envExit");
    placement_and_failure(b, session, path, ss);
    spec.sessions.push_back(std::move(ss));
  }

  auto order = topological_order(spec);
  if (order.index() == 1) {
    const auto& cycle = std::get<1>(order);
    std::string names;
    for (uint32_t i : cycle) names += spec.tasks[i].name + " -> ";
    names += spec.tasks[cycle.front()].name;
    b.problem(index_path("$.tasks", cycle.front()) + ".dependsOn", "dependency cycle: " + names);
  } else {
    spec.topological_order = std::get<0>(order);
    spec.index_tasks();
  }
  return spec;
}

/// Definitions nest no deeper than this (task inputs included): deep enough for any real one,
/// shallow enough for capnp's decoder, which recurses.
constexpr size_t definition_max_depth = 64;

/// check_definition, with `limits` and the strict JSON rules when they are given.
DefinitionCheck check(std::string_view json, const InputLimits* limits) {
  DefinitionCheck check;
  if (limits != nullptr) {
    check.problems = definition_text_problems(json, *limits);
    if (!check.problems.empty()) return check;
  }
  // The codec says neither where a syntax error is nor what a non-object is: ask first. Stored
  // definitions are read as they were taken, when strings were not checked for UTF-8.
  JsonRules rules;
  rules.max_depth = definition_max_depth;
  rules.utf8 = false;
  if (auto syntax = json_syntax_error(json, rules)) {
    check.problems.push_back({"$", "is not valid JSON: " + syntax->to_string()});
    return check;
  }
  if (const char* kind = json_kind_of(json); std::string_view(kind) != "an object") {
    check.problems.push_back({"$", std::string("a workflow definition is a JSON object; this is ") + kind});
    return check;
  }
  RawJsonHandler raw_json;  // outlives the codec
  capnp::JsonCodec codec;
  codec.setMaxNestingDepth(definition_max_depth);
  codec.setRejectUnknownFields(true);
  codec.addTypeHandler(raw_json);
  capnp::MallocMessageBuilder raw_message;
  auto raw = raw_message.initRoot<JsonValue>();
  try {
    codec.decodeRaw(kj::arrayPtr(json.data(), json.size()), raw);
  } catch (const kj::Exception& e) {
    check.problems.push_back({"$", std::string("is not valid JSON: ") + e.getDescription().cStr()});
    return check;
  }
  walk_struct(capnp::Schema::from<schema::WorkflowDefinition>(), raw.asReader(), "$",
              check.problems);
  if (!check.problems.empty()) return check;

  capnp::MallocMessageBuilder message;
  auto definition = message.initRoot<schema::WorkflowDefinition>();
  try {
    codec.decode(raw.asReader(), capnp::toDynamic(definition));
  } catch (const kj::Exception& e) {
    // The walk above should have caught whatever the codec refuses; say so if not.
    check.problems.push_back({"$", std::string("cannot be decoded: ") + e.getDescription().cStr()});
    return check;
  }
  WorkflowSpec spec = build_spec(definition.asReader(), codec, check.problems);
  if (limits != nullptr) {
    // Reported with the others: the names are read whatever else is wrong.
    auto over = definition_limit_problems(spec, *limits);
    check.problems.insert(check.problems.end(), std::make_move_iterator(over.begin()),
                          std::make_move_iterator(over.end()));
  }
  if (check.problems.empty()) check.spec = std::move(spec);
  return check;
}

}  // namespace

std::optional<uint32_t> WorkflowSpec::find_task(std::string_view name) const {
  if (task_index.by_name.size() == tasks.size()) {
    auto it = task_index.by_name.find(name);
    if (it == task_index.by_name.end()) return std::nullopt;
    return it->second;
  }
  for (uint32_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].name == name) return i;
  }
  return std::nullopt;
}

void WorkflowSpec::index_tasks() {
  task_index.by_name.clear();
  task_index.by_name.reserve(tasks.size());
  for (uint32_t i = 0; i < tasks.size(); ++i) task_index.by_name.emplace(tasks[i].name, i);
}

DefinitionCheck check_definition(std::string_view json) { return check(json, nullptr); }

DefinitionCheck check_definition(std::string_view json, const InputLimits& limits) { return check(json, &limits); }

std::vector<DefinitionProblem> definition_text_problems(std::string_view json, const InputLimits& limits) {
  std::vector<DefinitionProblem> problems;
  if (json.size() > limits.definition_bytes) {
    problems.push_back({"$", over_limit("the definition", describe_bytes(json.size()),
                                        describe_bytes(limits.definition_bytes), "definition_size",
                                        "make it smaller (give large data to the tasks as the workflow input, "
                                        "or by reference, rather than in the definition), or raise the limit")});
    return problems;
  }
  JsonRules strict;
  strict.max_depth = definition_max_depth;
  strict.unique_names = true;
  // A grammar error is left to check_definition, which reports it as it always has.
  if (auto error = json_syntax_error(json, strict); error && error->kind != JsonErrorKind::SYNTAX) {
    problems.push_back({error->path, "line " + std::to_string(error->line) + ", column " +
                                         std::to_string(error->column) + ": " + error->message});
  }
  return problems;
}

std::vector<DefinitionProblem> definition_limit_problems(const WorkflowSpec& spec, const InputLimits& limits) {
  std::vector<DefinitionProblem> problems;
  if (spec.tasks.size() > limits.tasks) {
    problems.push_back({"$.tasks", over_limit("the workflow", std::to_string(spec.tasks.size()) + " tasks",
                                              std::to_string(limits.tasks) + " tasks", "tasks_per_workflow",
                                              "split it into several workflows, or raise the limit")});
  }
  // Checked at every submission, so paths are made only for what is over a limit.
  using Path = std::string (*)(const std::string& base);
  auto name = [&](const std::string& value, const std::string& base, Path path, const char* what) {
    if (value.size() <= limits.name_bytes) return;
    problems.push_back({path(base), over_limit(what, describe_bytes(value.size()), describe_bytes(limits.name_bytes),
                                               "name_length", "choose a shorter one, or raise the limit")});
  };
  auto body = [&](const TaskBody& body, const std::string& base, Path path) {
    if (const auto* handler = std::get_if<HandlerSpec>(&body)) name(handler->name, base, path, "the handler name");
  };
  name(spec.name, "$", [](const std::string& b) { return b + ".name"; }, "the workflow name");
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskSpec& task = spec.tasks[i];
    const bool over = task.name.size() > limits.name_bytes || task.task_list.size() > limits.name_bytes ||
                      (std::holds_alternative<HandlerSpec>(task.body) &&
                       std::get<HandlerSpec>(task.body).name.size() > limits.name_bytes) ||
                      (task.has_input && task.input_json.size() > limits.input_bytes);
    if (!over) continue;
    const std::string path = index_path("$.tasks", i);
    name(task.name, path, [](const std::string& b) { return b + ".name"; }, "the task name");
    name(task.task_list, path, [](const std::string& b) { return b + ".taskList"; }, "the task list");
    body(task.body, path, [](const std::string& b) { return b + ".handler"; });
    if (task.has_input && task.input_json.size() > limits.input_bytes) {
      problems.push_back({path + ".input", over_limit("the task's input", describe_bytes(task.input_json.size()),
                                                      describe_bytes(limits.input_bytes), "input_size",
                                                      "pass large data by reference (a path or URL the task can "
                                                      "read), or raise the limit")});
    }
  }
  for (size_t s = 0; s < spec.sessions.size(); ++s) {
    const SessionSpec& session = spec.sessions[s];
    const std::string path = index_path("$.sessions", s);
    name(session.name, path, [](const std::string& b) { return b + ".name"; }, "the session name");
    name(session.resource_id, path, [](const std::string& b) { return b + ".resourceId"; }, "the resource id");
    if (session.env_enter) body(*session.env_enter, path, [](const std::string& b) { return b + ".envEnter.handler"; });
    if (session.env_exit) body(*session.env_exit, path, [](const std::string& b) { return b + ".envExit.handler"; });
  }
  return problems;
}

Error definition_refused(const std::vector<DefinitionProblem>& problems) {
  std::string message = "the workflow definition has " + std::to_string(problems.size()) +
                        (problems.size() == 1 ? " problem:" : " problems:");
  for (const auto& p : problems) message += "\n  " + p.path + ": " + p.message;
  return fail(Errc::INVALID_ARGUMENT, std::move(message));
}

Result<WorkflowSpec> parse_definition(std::string_view json) {
  auto check = check_definition(json);
  if (check.spec) return std::move(*check.spec);
  return definition_refused(check.problems);
}

Result<WorkflowSpec> parse_definition(std::string_view json, const InputLimits& limits) {
  auto check = check_definition(json, limits);
  if (check.spec) return std::move(*check.spec);
  return definition_refused(check.problems);
}

}  // namespace troupe
