// Operator changes of a task's options. A patch is checked by building the definition of one
// task that has the options the patch leads to and running the definition checker on it, so an
// update obeys exactly the rules a submitted definition does, and says so in the same words.
#include "actors/task/task_options.hpp"

#include <cstdio>

#include <capnp/compat/json.h>
#include <capnp/message.h>
#include <kj/exception.h>

#include "schema/json_syntax.hpp"

namespace troupe::actors {
namespace {

std::string json_duration(Duration d) { return json_quote(format_duration(d)); }

/// A retry policy as a definition writes it.
std::string retry_json(const RetrySpec& r) {
  char coefficient[32];
  std::snprintf(coefficient, sizeof coefficient, "%.17g", r.backoff_coefficient);
  std::string out = "{\"initialInterval\":" + json_duration(r.initial_interval) +
                    ",\"backoffCoefficient\":" + coefficient +
                    ",\"maximumInterval\":" + json_duration(r.maximum_interval) +
                    ",\"maximumAttempts\":" + std::to_string(r.maximum_attempts);
  if (r.expiration_interval) out += ",\"expirationInterval\":" + json_duration(*r.expiration_interval);
  if (!r.non_retryable_errors.empty()) {
    out += ",\"nonRetryableErrors\":[";
    for (size_t i = 0; i < r.non_retryable_errors.size(); ++i) {
      out += (i == 0 ? "" : ",") + json_quote(r.non_retryable_errors[i]);
    }
    out += "]";
  }
  return out + "}";
}

/// The retry policy an operator gave, re-encoded as one JSON object (so that nothing else of
/// the definition it is placed in can be written through it); INVALID_ARGUMENT otherwise.
Result<std::string> one_object(const std::string& json) {
  capnp::JsonCodec codec;
  capnp::MallocMessageBuilder message;
  auto value = message.initRoot<capnp::JsonValue>();
  try {
    codec.decodeRaw(kj::arrayPtr(json.data(), json.size()), value);
  } catch (const kj::Exception& e) {
    return fail(Errc::INVALID_ARGUMENT, std::string("retry: is not valid JSON: ") + e.getDescription().cStr());
  }
  if (value.which() != capnp::JsonValue::OBJECT) {
    return fail(Errc::INVALID_ARGUMENT, "retry: must be an object such as {\"maximumAttempts\": 3}");
  }
  auto text = codec.encodeRaw(value.asReader());
  return std::string(text.cStr(), text.size());
}

/// A problem's path in a one-task definition, as a path in the task's options.
std::string option_path(const std::string& path) {
  const std::string task = "$.tasks[0]";
  if (path.rfind(task + ".", 0) == 0) return path.substr(task.size() + 1);
  return "options";
}

}  // namespace

void TaskOverrides::merge(const TaskOverrides& later) {
  if (later.task_list) task_list = later.task_list;
  if (later.priority) priority = later.priority;
  if (later.timeouts) timeouts = later.timeouts;
  if (later.retry) retry = later.retry;
}

SharedOverrides merged(const SharedOverrides& base, const TaskOverrides& later) {
  TaskOverrides out = base ? *base : TaskOverrides{};
  out.merge(later);
  return std::make_shared<const TaskOverrides>(std::move(out));
}

void TaskOverrides::apply_to(TaskSpec& task) const {
  if (task_list) task.task_list = *task_list;
  if (priority) task.priority = *priority;
  if (timeouts) task.timeouts = *timeouts;
  if (retry) task.retry = *retry;
}

std::string TaskOverrides::canonical() const {
  auto duration = [](const std::optional<Duration>& d) { return d ? std::to_string(d->count()) : std::string("-"); };
  std::string out;
  if (task_list) out += "list=" + std::to_string(task_list->size()) + ":" + *task_list + ",";
  if (priority) out += "priority=" + std::to_string(*priority) + ",";
  if (timeouts) {
    out += "timeouts=" + duration(timeouts->schedule_to_start) + "/" + duration(timeouts->start_to_close) + "/" +
           duration(timeouts->schedule_to_close) + "/" + duration(timeouts->heartbeat) + ",";
  }
  if (retry) out += "retry=" + (*retry ? retry_json(**retry) : std::string("none")) + ",";
  return out;
}

Result<TaskOverrides> resolve_patch(const TaskSpec& task, const TaskOptionsPatch& patch) {
  if (patch.empty()) {
    return fail(Errc::INVALID_ARGUMENT,
                "the update changes nothing: give a task list, a priority, timeouts or a retry policy");
  }
  if (patch.remove_retry && !patch.retry_json.empty()) {
    return fail(Errc::INVALID_ARGUMENT, "retry: give a new retry policy or remove it, not both");
  }
  // The definition of one task with the options the patch leads to.
  std::string json = R"({"name":"update","tasks":[{"name":"task","handler":"update","taskList":)";
  json += json_quote(patch.task_list.empty() ? task.task_list : patch.task_list);
  json += ",\"priority\":" + std::to_string(patch.set_priority ? patch.priority : task.priority);
  std::string timeouts;
  auto timeout = [&](const char* key, const std::string& given, const std::optional<Duration>& now) {
    std::string value;
    if (given.empty()) {
      if (now) value = json_duration(*now);
    } else if (given != "none") {
      value = json_quote(given);
    }
    if (!value.empty()) timeouts += (timeouts.empty() ? "\"" : ",\"") + std::string(key) + "\":" + value;
  };
  timeout("scheduleToStart", patch.schedule_to_start, task.timeouts.schedule_to_start);
  timeout("startToClose", patch.start_to_close, task.timeouts.start_to_close);
  timeout("scheduleToClose", patch.schedule_to_close, task.timeouts.schedule_to_close);
  timeout("heartbeat", patch.heartbeat, task.timeouts.heartbeat);
  if (!timeouts.empty()) json += ",\"timeouts\":{" + timeouts + "}";
  if (!patch.retry_json.empty()) {
    auto given = one_object(patch.retry_json);
    if (!given) return given.error();
    json += ",\"retry\":" + *given;
  } else if (!patch.remove_retry && task.retry) {
    json += ",\"retry\":" + retry_json(*task.retry);
  }
  json += "}]}";

  auto check = check_definition(json);
  if (!check.spec) {
    std::string message = check.problems.size() == 1
                              ? "the task's new options have a problem:"
                              : "the task's new options have " + std::to_string(check.problems.size()) + " problems:";
    for (const auto& p : check.problems) message += "\n  " + option_path(p.path) + ": " + p.message;
    return fail(Errc::INVALID_ARGUMENT, std::move(message));
  }
  const TaskSpec& checked = check.spec->tasks[0];
  TaskOverrides out;
  if (!patch.task_list.empty()) out.task_list = checked.task_list;
  if (patch.set_priority) out.priority = checked.priority;
  if (!patch.schedule_to_start.empty() || !patch.start_to_close.empty() || !patch.schedule_to_close.empty() ||
      !patch.heartbeat.empty()) {
    out.timeouts = checked.timeouts;
  }
  if (patch.remove_retry || !patch.retry_json.empty()) out.retry = checked.retry;
  return out;
}

}  // namespace troupe::actors
