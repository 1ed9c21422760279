// submit and result: thin wrappers around GatewayClient that turn its answers into output and
// exit codes.
#include "tools/troupe/client_commands.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/client/gateway_client.hpp"
#include "runtime/config/cluster_config.hpp"
#include "schema/duration.hpp"
#include "tools/troupe/json.hpp"

namespace troupe::cli {
namespace {

constexpr int exit_failed = 1;
constexpr int exit_usage = 2;
constexpr int exit_unreachable = 3;

/// A wait with no --timeout: long enough to mean "until it ends".
constexpr Duration forever = std::chrono::hours(24 * 365);

int complain(int code, const std::string& message) {
  std::cerr << "troupe: " << message << "\n";
  return code;
}

/// The exit code for an error the client or the scheduler returned.
int exit_code_of(const Error& error) {
  switch (error.code) {
    case Errc::UNAVAILABLE: return exit_unreachable;
    case Errc::TIMED_OUT: return exit_failed;
    case Errc::INVALID_ARGUMENT:
    case Errc::NOT_FOUND:
    case Errc::ALREADY_EXISTS:
    case Errc::NOT_ALLOWED_IN_STATE: return exit_usage;
    default: return exit_failed;
  }
}

/// The scheduler's address: --address, else --config's scheduler node, else $TROUPE_ADDRESS,
/// else 127.0.0.1:7700.
Result<runtime::Address> scheduler_address(const Args& args) {
  if (auto text = args.get("address")) return runtime::parse_address(*text);
  if (auto path = args.get("config")) {
    auto config = runtime::load_cluster_config(*path);
    if (!config) return config.error();
    for (const auto& node : config->nodes) {
      if (node.scheduler) return node.listen;
    }
    return fail(Errc::INVALID_ARGUMENT, *path + " has no node with the scheduler role");
  }
  if (const char* env = std::getenv("TROUPE_ADDRESS"); env != nullptr && *env != '\0') {
    return runtime::parse_address(env);
  }
  return runtime::Address{"127.0.0.1", 7700};
}

Result<std::unique_ptr<client::GatewayClient>> connect(const Args& args) {
  auto address = scheduler_address(args);
  if (!address) return address.error();
  return client::GatewayClient::connect(address->host, address->port);
}

Result<Duration> timeout_option(const Args& args) {
  auto text = args.get("timeout");
  if (!text) return forever;
  auto parsed = parse_duration(*text);
  if (!parsed) return fail(Errc::INVALID_ARGUMENT, "--timeout: " + parsed.error().message);
  return parsed;
}

/// Prints how a workflow ended and returns its exit code: 0 for SUCCESS, 1 otherwise.
int print_result(const client::WorkflowResult& result, bool json) {
  if (json) {
    Json out = Json::object();
    out.set("workflowId", result.workflow_id);
    out.set("state", result.state);
    out.set("detail", result.detail);
    std::cout << out.dump() << "\n";
  } else {
    std::cout << result.workflow_id << " " << result.state << (result.detail.empty() ? "" : ": " + result.detail)
              << "\n";
  }
  return result.state == "SUCCESS" ? 0 : exit_failed;
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

}  // namespace

int submit_command(const Args& args) {
  if (auto known = args.only({"id", "input", "wait", "timeout", "json", "address", "config"}); !known) {
    return complain(exit_usage, known.error().message);
  }
  const auto& words = args.positionals();
  if (words.size() != 1) return complain(exit_usage, "submit takes one definition file (or - for stdin)");
  auto definition = read_file(words[0]);
  if (!definition) return complain(exit_usage, definition.error().message);
  auto wait = args.boolean("wait", false);
  auto json = args.boolean("json", false);
  auto timeout = timeout_option(args);
  if (!wait) return complain(exit_usage, wait.error().message);
  if (!json) return complain(exit_usage, json.error().message);
  if (!timeout) return complain(exit_usage, timeout.error().message);

  auto client = connect(args);
  if (!client) return complain(exit_code_of(client.error()), client.error().message);
  auto id = (*client)->start(client::StartRequest{*definition, args.get("input").value_or(""),
                                                  args.get("id").value_or(""), ""});
  if (!id) return complain(exit_code_of(id.error()), id.error().message);
  if (!*wait) {
    if (*json) {
      Json out = Json::object();
      out.set("workflowId", *id);
      std::cout << out.dump() << "\n";
    } else {
      std::cout << *id << "\n";
    }
    return 0;
  }
  auto result = (*client)->result(*id, *timeout);
  if (!result) return complain(exit_code_of(result.error()), result.error().message);
  return print_result(*result, *json);
}

int result_command(const Args& args) {
  if (auto known = args.only({"timeout", "json", "address", "config"}); !known) {
    return complain(exit_usage, known.error().message);
  }
  const auto& words = args.positionals();
  if (words.size() != 1) return complain(exit_usage, "result takes one workflow id");
  auto json = args.boolean("json", false);
  auto timeout = timeout_option(args);
  if (!json) return complain(exit_usage, json.error().message);
  if (!timeout) return complain(exit_usage, timeout.error().message);
  auto client = connect(args);
  if (!client) return complain(exit_code_of(client.error()), client.error().message);
  auto result = (*client)->result(words[0], *timeout);
  if (!result) return complain(exit_code_of(result.error()), result.error().message);
  return print_result(*result, *json);
}

int control_command(const std::string& action, const Args& args) {
  if (auto known = args.only({"json", "address", "config"}); !known) return complain(exit_usage, known.error().message);
  const auto& words = args.positionals();
  if (words.size() != 1) return complain(exit_usage, action + " takes one workflow id");
  auto json = args.boolean("json", false);
  if (!json) return complain(exit_usage, json.error().message);
  const auto which = action == "pause"    ? client::GatewayClient::Control::PAUSE
                     : action == "resume" ? client::GatewayClient::Control::RESUME
                                          : client::GatewayClient::Control::STOP;
  auto client = connect(args);
  if (!client) return complain(exit_code_of(client.error()), client.error().message);
  auto state = (*client)->control(words[0], which);
  if (!state) return complain(exit_code_of(state.error()), state.error().message);
  if (*json) {
    Json out = Json::object();
    out.set("workflowId", words[0]);
    out.set("state", *state);
    std::cout << out.dump() << "\n";
  } else {
    std::cout << words[0] << " " << *state << "\n";
  }
  return 0;
}

int status_command(const Args& args) {
  if (auto known = args.only({"json", "address", "config"}); !known) return complain(exit_usage, known.error().message);
  const auto& words = args.positionals();
  if (words.size() != 1) return complain(exit_usage, "status takes one workflow id");
  auto json = args.boolean("json", false);
  if (!json) return complain(exit_usage, json.error().message);
  auto client = connect(args);
  if (!client) return complain(exit_code_of(client.error()), client.error().message);
  auto status = (*client)->describe(words[0]);
  if (!status) return complain(exit_code_of(status.error()), status.error().message);
  if (*json) {
    Json out = Json::object();
    out.set("workflowId", status->workflow_id);
    out.set("state", status->state);
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
      tasks.push(std::move(task));
    }
    out.set("tasks", std::move(tasks));
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << status->workflow_id << " " << status->state
            << (status->detail.empty() ? "" : ": " + status->detail) << "\n";
  size_t name_width = 4;
  for (const auto& t : status->tasks) name_width = std::max(name_width, t.name.size());
  std::printf("  %-*s  %-15s  %7s  %-12s  %s\n", static_cast<int>(name_width), "TASK", "STATE", "ATTEMPT",
              "WORKER", "PROGRESS / FAILURE");
  for (const auto& t : status->tasks) {
    std::string note = t.failure.empty() ? t.progress : t.failure;
    if (note.size() > 60) note = note.substr(0, 57) + "...";
    std::printf("  %-*s  %-15s  %7u  %-12s  %s\n", static_cast<int>(name_width), t.name.c_str(), t.state.c_str(),
                t.attempt, t.worker.c_str(), note.c_str());
  }
  return 0;
}

}  // namespace troupe::cli
