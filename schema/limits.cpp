// The limits' bounds and the checks of what the gateway takes as it is (ids, inputs, results);
// definitions are checked against them in definition.cpp.
#include "schema/limits.hpp"

#include <cstdio>
#include <iterator>

#include "schema/json_syntax.hpp"
#include "schema/utf8.hpp"

namespace troupe {
namespace {

Result<void> check_utf8(std::string_view text, std::string_view what) {
  if (auto problem = utf8_problem(text)) {
    return fail(Errc::INVALID_ARGUMENT, std::string(what) + " is not valid UTF-8: at byte offset " +
                                            std::to_string(problem->offset) + ", " + problem->message);
  }
  return ok();
}

}  // namespace

InputLimits InputLimits::most() {
  InputLimits most;
  most.definition_bytes = uint64_t{48} << 20;
  most.tasks = 1'000'000;
  most.workflow_id_bytes = 512;
  most.name_bytes = 1024;
  most.input_bytes = uint64_t{8} << 20;
  most.result_bytes = uint64_t{8} << 20;
  return most;
}

InputLimits InputLimits::least() {
  InputLimits least;
  least.definition_bytes = 1024;
  least.tasks = 1;
  // The ids the scheduler makes up ("wf-" and 32 hex digits) fit, with room to spare.
  least.workflow_id_bytes = 64;
  least.name_bytes = 16;  // the default task list's name, "default", with room to spare
  least.input_bytes = 1024;
  least.result_bytes = 1024;
  return least;
}

std::string describe_bytes(uint64_t bytes) {
  std::string out = std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  if (bytes < 1024) return out;
  static constexpr const char* units[] = {"KiB", "MiB", "GiB"};
  double size = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (size >= 1024 && unit + 1 < std::size(units)) {
    size /= 1024;
    ++unit;
  }
  char text[32];
  if (size == static_cast<double>(static_cast<uint64_t>(size))) {
    std::snprintf(text, sizeof text, "%llu %s", static_cast<unsigned long long>(size), units[unit]);
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", size, units[unit]);
  }
  return out + " (" + text + ")";
}

std::string over_limit(std::string_view what, std::string_view size, std::string_view limit, std::string_view key,
                       std::string_view advice) {
  return std::string(what) + " is " + std::string(size) + "; the limit is " + std::string(limit) + " (limits." +
         std::string(key) + " in the cluster config): " + std::string(advice);
}

Result<void> check_workflow_id(std::string_view id, const InputLimits& limits) {
  if (id.size() > limits.workflow_id_bytes) {
    return fail(Errc::INVALID_ARGUMENT,
                over_limit("the workflow id", describe_bytes(id.size()), describe_bytes(limits.workflow_id_bytes),
                           "workflow_id_length", "choose a shorter id"));
  }
  if (auto utf8 = check_utf8(id, "the workflow id"); !utf8) return utf8;
  for (size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (c < 0x20 || c == 0x7f) {
      return fail(Errc::INVALID_ARGUMENT, "the workflow id '" + printable(id) + "' has a control character at byte offset " +
                                              std::to_string(i) + ": an id is printed in lists and logs, so it may hold "
                                              "none (choose one without)");
    }
  }
  return ok();
}

Result<void> check_workflow_input(std::string_view json, const InputLimits& limits) {
  if (json.size() > limits.input_bytes) {
    return fail(Errc::INVALID_ARGUMENT,
                over_limit("the workflow input", describe_bytes(json.size()), describe_bytes(limits.input_bytes),
                           "input_size",
                           "pass large data by reference (a path or URL the tasks can read) rather than in the "
                           "input, or raise the limit"));
  }
  return check_json(json, "the workflow input");
}

Result<void> check_task_result(std::string_view json, const InputLimits& limits) {
  if (json.size() > limits.result_bytes) {
    return fail(Errc::INVALID_ARGUMENT,
                over_limit("the task's result", describe_bytes(json.size()), describe_bytes(limits.result_bytes),
                           "result_size",
                           "store large results elsewhere and return a reference to them, or raise the limit"));
  }
  if (json.empty()) return ok();
  return check_json(json, "the task's result");
}

Result<void> check_task_failure(std::string_view reason, std::string_view details, const InputLimits& limits) {
  if (reason.size() > limits.name_bytes) {
    return fail(Errc::INVALID_ARGUMENT,
                over_limit("the failure's reason", describe_bytes(reason.size()), describe_bytes(limits.name_bytes),
                           "name_length", "give a short reason (it is matched against nonRetryableErrors) and "
                                          "the rest as details"));
  }
  if (details.size() > limits.result_bytes) {
    return fail(Errc::INVALID_ARGUMENT,
                over_limit("the failure's details", describe_bytes(details.size()),
                           describe_bytes(limits.result_bytes), "result_size",
                           "shorten them (store a long report elsewhere and refer to it), or raise the limit"));
  }
  if (auto utf8 = check_utf8(reason, "the failure's reason"); !utf8) return utf8;
  return check_utf8(details, "the failure's details");
}

}  // namespace troupe
