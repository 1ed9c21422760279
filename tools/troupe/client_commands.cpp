// The client commands: thin wrappers around GatewayClient that turn its answers into output
// and exit codes. The command line has checked the options and the number of arguments.
#include "tools/troupe/client_commands.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string_view>

#include "runtime/client/gateway_client.hpp"
#include "schema/duration.hpp"
#include "schema/json_syntax.hpp"
#include "schema/limits.hpp"
#include "tools/troupe/connection.hpp"
#include "tools/troupe/exit_codes.hpp"
#include "tools/troupe/json.hpp"
#include "schema/suggest.hpp"
#include "tools/troupe/task_table.hpp"

namespace troupe::cli {
namespace {

/// A wait with no --timeout: long enough to mean "until it ends".
constexpr Duration forever = std::chrono::hours(24 * 365);

Result<Duration> timeout_option(const Args& args) {
  auto text = args.get("timeout");
  if (!text) return forever;
  auto parsed = parse_duration(*text);
  if (!parsed) return fail(Errc::INVALID_ARGUMENT, "--timeout: " + parsed.error().message);
  return parsed;
}

/// --wait, --json and --timeout of the commands that start a run and may wait for its end.
struct WaitOptions {
  bool wait = false;
  bool json = false;
  Duration timeout = forever;
};

Result<WaitOptions> wait_options(const Args& args) {
  auto wait = args.boolean("wait", false);
  if (!wait) return wait.error();
  auto json = args.boolean("json", false);
  if (!json) return json.error();
  auto timeout = timeout_option(args);
  if (!timeout) return timeout.error();
  return WaitOptions{*wait, *json, *timeout};
}

int64_t now_us() { return wall_clock_us(); }

/// A task's result for --json: the JSON value it is, null when there is none, and a string in
/// the unlikely case that what the task gave is not JSON (so the output stays JSON).
Json result_value(const std::string& result_json) {
  if (result_json.empty()) return Json();
  if (json_syntax_error(result_json)) return Json(result_json);
  return Json::raw(result_json);
}

/// Prints how a workflow ended, then the results of its final tasks, and returns its exit code:
/// 0 for SUCCESS, 1 otherwise.
int print_result(const client::WorkflowResult& result, bool json) {
  if (json) {
    Json out = Json::object();
    out.set("workflowId", result.workflow_id);
    out.set("state", result.state);
    out.set("stateCode", std::string(name_of(result.state_code)));
    out.set("detail", result.detail);
    Json outputs = Json::array();
    for (const auto& output : result.outputs) {
      Json item = Json::object();
      item.set("task", output.task);
      item.set("result", result_value(output.result_json));
      outputs.push(std::move(item));
    }
    out.set("outputs", std::move(outputs));
    std::cout << out.dump() << "\n";
  } else {
    std::cout << result.workflow_id << " " << result.state << (result.detail.empty() ? "" : ": " + result.detail)
              << "\n";
    for (const auto& output : result.outputs) {
      std::cout << "  " << output.task << ": " << result_value(output.result_json).dump() << "\n";
    }
  }
  return result.state == "SUCCESS" ? exit_ok : exit_failed;
}

Result<std::string> read_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream all;
    all << std::cin.rdbuf();
    return all.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Errc::INVALID_ARGUMENT, "cannot read '" + path + "'");
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

/// "ID STATE", or {"workflowId": ID, "state": STATE} with --json.
void print_state(const std::string& id, const std::string& state, bool json) {
  if (json) {
    Json out = Json::object();
    out.set("workflowId", id);
    out.set("state", state);
    std::cout << out.dump() << "\n";
  } else {
    std::cout << id << " " << state << "\n";
  }
}

/// What no scheduler takes, whatever its config: refused here rather than sent. The scheduler
/// holds what it is sent to its own [limits], which may be lower.
const InputLimits& most() {
  static const InputLimits limits = InputLimits::most();
  return limits;
}

/// INVALID_ARGUMENT if `what` (`bytes` long) exceeds `most`, the largest value of limits.`key`.
Result<void> within_most(const std::string& what, size_t bytes, uint64_t most, std::string_view key) {
  if (bytes <= most) return ok();
  return fail(Errc::INVALID_ARGUMENT, what + " is " + describe_bytes(bytes) + "; no scheduler takes more than " +
                                          describe_bytes(most) + " (the most limits." + std::string(key) +
                                          " may be set to in a cluster config): make it smaller");
}

/// The text of file `path` (stdin's for -), checked as JSON under `rules`, an error given as
/// FILE:LINE:COLUMN: MESSAGE (with the JSON path of invalid UTF-8 or a member named twice).
/// `most_bytes` and `key`: the largest such text a scheduler takes, and the limit that says so.
Result<std::string> json_file(const std::string& path, const JsonRules& rules, uint64_t most_bytes,
                              std::string_view key) {
  auto text = read_file(path);
  if (!text) return text.error();
  const std::string name = path == "-" ? std::string("<stdin>") : path;
  if (auto within = within_most(name, text->size(), most_bytes, key); !within) return within.error();
  if (auto error = json_syntax_error(*text, rules)) {
    return fail(Errc::INVALID_ARGUMENT,
                name + ":" + std::to_string(error->line) + ":" + std::to_string(error->column) + ": " +
                    (error->kind == JsonErrorKind::SYNTAX ? "" : "at " + error->path + ": ") + error->message);
  }
  return text;
}

/// What `submit WHAT` sends: the file's text, stdin's for -, else WHAT as the name of a
/// definition registered with the scheduler (a word that names no file and is no path). A
/// definition read here is checked as JSON first (UTF-8 strings, each member named once), its
/// errors given as FILE:LINE:COLUMN.
Result<std::string> definition_argument(const std::string& what) {
  std::error_code ec;
  const bool path_like = what.find('/') != std::string::npos || what.ends_with(".json");
  if (what != "-" && !path_like && !std::filesystem::exists(what, ec)) return what;
  JsonRules strict;
  strict.unique_names = true;
  return json_file(what, strict, most().definition_bytes, "definition_size");
}

/// --input JSON, or --input @FILE for an input too large for a command line (Linux takes at
/// most 128 KiB in one argument); checked as JSON either way. Empty when not given.
Result<std::string> input_option(const Args& args) {
  const std::string input = args.get("input").value_or("");
  if (input.starts_with("@")) {
    if (input.size() == 1) return fail(Errc::INVALID_ARGUMENT, "--input @FILE needs a file name after the @");
    return json_file(input.substr(1), JsonRules{}, most().input_bytes, "input_size");
  }
  if (!input.empty()) {
    if (auto within = within_most("the workflow input", input.size(), most().input_bytes, "input_size"); !within) {
      return within.error();
    }
    if (auto checked = check_json(input, "the workflow input"); !checked) return checked.error();
  }
  return input;
}

}  // namespace

int submit_command(const Args& args) {
  auto options = wait_options(args);
  if (!options) return usage_error(args, options.error().message);
  auto input = input_option(args);
  if (!input) return failed(input.error());
  auto definition = definition_argument(args.positionals().at(0));
  if (!definition) return failed(definition.error());
  if (auto id = check_workflow_id(args.get("id").value_or(""), most()); !id) return failed(id.error());

  auto client = connect(args);
  if (!client) return failed(client.error());
  auto id = (*client)->start(client::StartRequest{*definition, *input, args.get("id").value_or(""), ""});
  if (!id) return failed(id.error());
  if (!options->wait) {
    if (options->json) {
      Json out = Json::object();
      out.set("workflowId", *id);
      std::cout << out.dump() << "\n";
    } else {
      std::cout << *id << "\n";
    }
    return exit_ok;
  }
  auto result = (*client)->result(*id, options->timeout);
  if (!result) return failed(result.error());
  return print_result(*result, options->json);
}

int result_command(const Args& args) {
  auto json = args.boolean("json", false);
  auto timeout = timeout_option(args);
  if (!json) return usage_error(args, json.error().message);
  if (!timeout) return usage_error(args, timeout.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto result = (*client)->result(args.positionals().at(0), *timeout);
  if (!result) return failed(result.error());
  return print_result(*result, *json);
}

int control_command(const std::string& action, const Args& args) {
  const auto& words = args.positionals();
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  const auto which = action == "pause"    ? client::GatewayClient::Control::PAUSE
                     : action == "resume" ? client::GatewayClient::Control::RESUME
                     : action == "kill"   ? client::GatewayClient::Control::KILL
                                          : client::GatewayClient::Control::STOP;
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto state = (*client)->control(words[0], which);
  if (!state) return failed(state.error());
  print_state(words[0], *state, *json);
  return exit_ok;
}

int rerun_command(const Args& args) {
  const auto& words = args.positionals();
  auto options = wait_options(args);
  if (!options) return usage_error(args, options.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto state = (*client)->rerun(words[0], args.get("from").value_or(""));
  if (!state) return failed(state.error());
  if (options->wait) {
    auto result = (*client)->result(words[0], options->timeout);
    if (!result) return failed(result.error());
    return print_result(*result, options->json);
  }
  print_state(words[0], *state, options->json);
  return exit_ok;
}

namespace {

/// "WF: TASK TASK_STATE (workflow WORKFLOW_STATE)", or {"workflowId", "task", "workflowState",
/// "taskState"} with --json.
void print_task_result(const std::string& id, const std::string& task, const client::TaskCommandResult& result,
                       bool json) {
  if (json) {
    Json out = Json::object();
    out.set("workflowId", id);
    out.set("task", task);
    out.set("workflowState", result.workflow_state);
    out.set("taskState", result.task_state);
    std::cout << out.dump() << "\n";
  } else {
    std::cout << id << ": " << task << " " << result.task_state << " (workflow " << result.workflow_state << ")\n";
  }
}

/// Runs one task operation and prints what it led to.
int task_operation(const Args& args,
                   const std::function<Result<client::TaskCommandResult>(client::GatewayClient&)>& operation) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto result = operation(**client);
  if (!result) return failed(result.error());
  print_task_result(args.positionals().at(0), args.positionals().at(1), *result, *json);
  return exit_ok;
}

/// The four kinds of --timeout KIND=DURATION, as a definition's `timeouts` names them.
const std::vector<std::string>& timeout_kinds() {
  static const std::vector<std::string> kinds = {"scheduleToStart", "startToClose", "scheduleToClose",
                                                 "heartbeat"};
  return kinds;
}

/// The options of `troupe update` as a TaskUpdate; INVALID_ARGUMENT saying which is wrong. The
/// syntax is checked here (durations, JSON); what the values mean, by a definition's rules, is
/// the scheduler's to check.
Result<client::TaskUpdate> task_update(const Args& args) {
  client::TaskUpdate update;
  if (auto list = args.get("task-list")) {
    if (list->empty()) return fail(Errc::INVALID_ARGUMENT, "--task-list needs a task list's name");
    update.task_list = *list;
  }
  if (auto text = args.get("priority")) {
    int32_t priority = 0;
    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), priority);
    if (ec != std::errc() || end != text->data() + text->size()) {
      return fail(Errc::INVALID_ARGUMENT, "--priority takes a whole number, not '" + *text + "'");
    }
    update.priority = priority;
  }
  for (const auto& given : args.all("timeout")) {
    const auto equals = given.find('=');
    const std::string kind = given.substr(0, equals);
    if (equals == std::string::npos || equals + 1 == given.size()) {
      return fail(Errc::INVALID_ARGUMENT, "--timeout takes KIND=DURATION (e.g. startToClose=2h, heartbeat=none), "
                                          "not '" + given + "'");
    }
    const std::string duration = given.substr(equals + 1);
    std::string* field = kind == "scheduleToStart"   ? &update.schedule_to_start
                         : kind == "startToClose"    ? &update.start_to_close
                         : kind == "scheduleToClose" ? &update.schedule_to_close
                         : kind == "heartbeat"       ? &update.heartbeat
                                                     : nullptr;
    if (field == nullptr) {
      auto near = near_miss(kind, timeout_kinds());
      return fail(Errc::INVALID_ARGUMENT, "--timeout: unknown timeout '" + kind + "'" +
                                              (near ? " (did you mean " + *near + "?)" : "") +
                                              "; one of scheduleToStart, startToClose, scheduleToClose, heartbeat");
    }
    if (!field->empty()) return fail(Errc::INVALID_ARGUMENT, "--timeout: " + kind + " is given twice");
    if (duration != "none") {
      if (auto parsed = parse_duration(duration); !parsed) {
        return fail(Errc::INVALID_ARGUMENT, "--timeout " + kind + ": " + parsed.error().message);
      }
    }
    *field = duration;
  }
  if (auto retry = args.get("retry")) {
    if (*retry != "none") {
      if (auto checked = check_json(*retry, "--retry"); !checked) return checked.error();
    }
    update.retry_json = *retry;
  }
  if (update.task_list.empty() && !update.priority && update.schedule_to_start.empty() &&
      update.start_to_close.empty() && update.schedule_to_close.empty() && update.heartbeat.empty() &&
      update.retry_json.empty()) {
    return fail(Errc::INVALID_ARGUMENT, "nothing to update: give --task-list, --priority, --timeout or --retry");
  }
  return update;
}

}  // namespace

int retry_command(const Args& args) {
  return task_operation(args, [&](client::GatewayClient& client) {
    return client.retry_task(args.positionals().at(0), args.positionals().at(1));
  });
}

int skip_command(const Args& args) {
  return task_operation(args, [&](client::GatewayClient& client) {
    return client.skip_task(args.positionals().at(0), args.positionals().at(1), args.get("reason").value_or(""));
  });
}

int update_command(const Args& args) {
  auto update = task_update(args);
  if (!update) return usage_error(args, update.error().message);
  return task_operation(args, [&](client::GatewayClient& client) {
    return client.update_task(args.positionals().at(0), args.positionals().at(1), *update);
  });
}

int status_command(const Args& args) {
  const auto& words = args.positionals();
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto status = (*client)->describe(words[0]);
  if (!status) return failed(status.error());
  if (*json) {
    const int64_t now = now_us();
    Json out = Json::object();
    out.set("workflowId", status->workflow_id);
    out.set("state", status->state);
    out.set("stateCode", std::string(name_of(status->state_code)));
    out.set("detail", status->detail);
    Json tasks = Json::array();
    for (const auto& t : status->tasks) {
      Json task = Json::object();
      task.set("name", t.name);
      task.set("state", t.state);
      task.set("attempt", static_cast<int64_t>(t.attempt));
      task.set("worker", t.worker);
      task.set("failure", t.failure);
      task.set("progress", t.progress);
      task.set("awaitingCompletion", t.awaiting_completion);
      task.set("stateCode", std::string(name_of(t.state_code)));
      task.set("failureDetails", t.failure_details);
      task.set("failureMessage", t.failure_message());
      task.set("result", result_value(t.result_json));
      task.set("startedUs", t.started_us);
      task.set("endedUs", t.ended_us);
      task.set("durationUs", t.duration_us(now));
      task.set("waitReason", t.wait_reason);
      tasks.push(std::move(task));
    }
    out.set("tasks", std::move(tasks));
    Json sessions = Json::array();
    for (const auto& s : status->sessions) {
      Json session = Json::object();
      session.set("name", s.name);
      session.set("state", s.state);
      session.set("attempt", static_cast<int64_t>(s.attempt));
      session.set("worker", s.worker);
      session.set("resourceId", s.resource_id);
      session.set("envEnter", s.env_enter);
      session.set("envExit", s.env_exit);
      session.set("failure", s.failure);
      session.set("recreateToken", s.recreate_token);
      session.set("waitReason", s.wait_reason);
      sessions.push(std::move(session));
    }
    out.set("sessions", std::move(sessions));
    std::cout << out.dump() << "\n";
    return exit_ok;
  }
  std::cout << render_task_table(*status);
  return exit_ok;
}

namespace {

/// --before of purge: a duration ago ("30d") or a UTC date, or date and time, in µs since the
/// epoch.
Result<int64_t> time_before(const std::string& text, int64_t now) {
  if (auto ago = parse_duration(text)) return now - ago->count();
  for (const char* format : {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"}) {
    std::tm tm{};
    const char* end = strptime(text.c_str(), format, &tm);
    if (end != nullptr && *end == '\0') return static_cast<int64_t>(timegm(&tm)) * 1000000;
  }
  return fail(Errc::INVALID_ARGUMENT, "--before takes a duration ago (30d, 12h) or a UTC date or date and time "
                                      "(2026-11-01, 2026-11-01T12:00:00), not '" + text + "'");
}

}  // namespace

int purge_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto text = args.get("before");
  if (!text) return usage_error(args, "purge needs --before: which closed workflows to delete");
  auto before = time_before(*text, now_us());
  if (!before) return usage_error(args, before.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto purged = (*client)->purge(*before);
  if (!purged) return failed(purged.error());
  if (*json) {
    Json out = Json::object();
    out.set("purged", *purged);
    out.set("closedBeforeUs", *before);
    std::cout << out.dump() << "\n";
  } else {
    std::cout << "purged " << *purged << " workflows closed before " << utc_time(*before) << " UTC\n";
  }
  return 0;
}

namespace {

/// `text` as one shell word: as it is when it is plain, else in single quotes.
std::string shell_word(const std::string& text) {
  auto plain_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("-_.:/@%+=,").find(c) != std::string_view::npos;
  };
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), plain_char);
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// The command that lists the next page: the same filters and order, from `cursor`.
std::string next_page_command(const Args& args, const std::string& cursor) {
  std::string command = "troupe list";
  for (const char* option : {"state", "name", "since", "until", "limit", "sort", "address", "config", "token-file",
                             "tls-ca", "tls-certificate", "tls-key"}) {
    if (auto value = args.get(option)) command += std::string(" --") + option + " " + shell_word(*value);
  }
  if (args.has("plaintext")) command += " --plaintext";
  return command + " --after " + shell_word(cursor);
}

}  // namespace

int list_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto limit = args.number("limit", 20);
  if (!limit || *limit < 1 || *limit != static_cast<uint64_t>(*limit)) {
    return usage_error(args, "--limit takes a whole number of workflows, at least 1");
  }
  client::ListQuery query;
  const std::string sort = args.get("sort").value_or("created");
  if (sort == "created") {
    query.sort = client::ListSort::CREATED;
  } else if (sort == "id") {
    query.sort = client::ListSort::ID;
  } else {
    return usage_error(args, "--sort takes created (newest first) or id, not '" + sort + "'");
  }
  query.state = args.get("state").value_or("");
  std::transform(query.state.begin(), query.state.end(), query.state.begin(), ::toupper);
  query.definition_name = args.get("name").value_or("");
  query.after = args.get("after").value_or("");
  // --since D / --until D: created within the last D / more than D ago.
  const int64_t now = now_us();
  for (const char* option : {"since", "until"}) {
    if (auto text = args.get(option)) {
      auto ago = parse_duration(*text);
      if (!ago) return usage_error(args, std::string("--") + option + ": " + ago.error().message);
      (std::string(option) == "since" ? query.created_from_us : query.created_to_us) = now - ago->count();
    }
  }
  auto client = connect(args);
  if (!client) return failed(client.error());
  // Pages until `limit` workflows were found or the index ends: a page may hold few matches.
  const auto wanted = static_cast<size_t>(*limit);
  std::vector<client::WorkflowSummary> found;
  std::string cursor = query.after;
  do {
    query.after = cursor;
    query.limit = static_cast<uint32_t>(std::min<size_t>(wanted - found.size(), 1000));
    auto page = (*client)->list(query);
    if (!page) return failed(page.error());
    for (auto& w : page->workflows) found.push_back(std::move(w));
    cursor = page->next_cursor;
  } while (!cursor.empty() && found.size() < wanted);
  if (*json) {
    Json out = Json::object();
    Json list = Json::array();
    for (const auto& w : found) {
      Json item = Json::object();
      item.set("workflowId", w.workflow_id);
      item.set("name", w.definition_name);
      item.set("state", w.state);
      item.set("stateCode", std::string(name_of(w.state_code)));
      item.set("createdUs", w.created_us);
      item.set("closedUs", w.closed_us);
      list.push(std::move(item));
    }
    out.set("workflows", std::move(list));
    out.set("nextCursor", cursor);
    std::cout << out.dump() << "\n";
    return exit_ok;
  }
  // The widest state, READY_PAUSE, sets the STATE column's width.
  size_t id_width = 11, state_width = 11;
  for (const auto& w : found) {
    id_width = std::max(id_width, w.workflow_id.size());
    state_width = std::max(state_width, w.state.size());
  }
  auto line = [&](const std::string& id, const std::string& state, const std::string& created,
                  const std::string& name) {
    std::printf("%-*s  %-*s  %-19s  %s\n", static_cast<int>(id_width), id.c_str(), static_cast<int>(state_width),
                state.c_str(), created.c_str(), name.c_str());
  };
  line("WORKFLOW ID", "STATE", "CREATED", "NAME");
  for (const auto& w : found) line(w.workflow_id, w.state, utc_time(w.created_us), w.definition_name);
  if (!cursor.empty()) std::printf("more: %s\n", next_page_command(args, cursor).c_str());
  return exit_ok;
}

int complete_command(const Args& args) {
  const auto& words = args.positionals();
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  if (auto within = within_most("the task's result", words.at(1).size(), most().result_bytes, "result_size"); !within) {
    return failed(within.error());
  }
  if (auto checked = check_json(words.at(1), "the task's result"); !checked) return failed(checked.error());
  auto client = connect(args);
  if (!client) return failed(client.error());
  if (auto done = (*client)->complete_task(words.at(0), words.at(1)); !done) return failed(done.error());
  if (*json) {
    Json out = Json::object();
    out.set("outcome", "completed");
    std::cout << out.dump() << "\n";
  } else {
    std::cout << "completed: the task's result is recorded\n";
  }
  return exit_ok;
}

int fail_command(const Args& args) {
  const auto& words = args.positionals();
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  if (auto checked = check_task_failure(words.at(1), args.get("details").value_or(""), most()); !checked) {
    return failed(checked.error());
  }
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto done = (*client)->fail_task(words.at(0), words.at(1), args.get("details").value_or(""));
  if (!done) return failed(done.error());
  if (*json) {
    Json out = Json::object();
    out.set("outcome", "failed");
    out.set("reason", words.at(1));
    std::cout << out.dump() << "\n";
  } else {
    std::cout << "failed: " << words.at(1) << " is recorded; the task is retried per its retry policy\n";
  }
  return exit_ok;
}

}  // namespace troupe::cli
