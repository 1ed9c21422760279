// `troupe shell`: the admin shell. In a terminal it reads lines with libedit (history kept in
// ~/.troupe_history, Tab completes commands and ids); with -c it runs one command for scripts;
// without a terminal it runs the lines of its standard input.
#include "tools/troupe/shell/shell_command.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>

#include <editline/readline.h>

#include "tools/troupe/connection.hpp"
#include "tools/troupe/exit_codes.hpp"
#include "tools/troupe/shell/shell_session.hpp"

namespace troupe::cli {
namespace {

/// The session libedit's completion callbacks reach: libedit takes plain functions.
ShellSession* completing = nullptr;

/// How many of the index's newest workflows Tab offers (the index pages at most this many).
constexpr uint32_t completed_workflows = 1000;
std::vector<std::string> matches;

char* next_match(const char*, int state) {
  if (static_cast<size_t>(state) >= matches.size()) return nullptr;
  return strdup(matches[static_cast<size_t>(state)].c_str());
}

char** complete_line(const char* text, int start, int) {
  rl_attempted_completion_over = 1;  // no file names
  if (!completing) return nullptr;
  const std::string line(rl_line_buffer, static_cast<size_t>(start));
  auto before = split_words(line);
  matches = completing->complete(before ? *before : std::vector<std::string>{}, text);
  return rl_completion_matches(text, next_match);
}

std::string history_file() {
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.troupe_history" : std::string();
}

/// The connection options the command line gave, passed on to the commands the shell runs.
std::vector<std::string> connection_words(const Args& args) {
  std::vector<std::string> out;
  for (const char* name : {"address", "config", "token-file"}) {
    if (auto value = args.get(name)) {
      out.push_back(std::string("--") + name);
      out.push_back(*value);
    }
  }
  return out;
}

int interactive(ShellSession& session) {
  completing = &session;
  rl_readline_name = "troupe";
  rl_attempted_completion_function = complete_line;
  const std::string history = history_file();
  if (!history.empty()) read_history(history.c_str());
  std::cout << "troupe admin shell: `help` lists the commands, Tab completes, Ctrl-D leaves.\n";
  int last = exit_ok;
  while (!session.quit()) {
    char* raw = readline("troupe> ");
    if (raw == nullptr) {
      std::cout << "\n";
      break;
    }
    const std::string line = raw;
    std::free(raw);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    add_history(line.c_str());
    if (!history.empty()) write_history(history.c_str());
    last = session.run(line, std::cout, std::cerr);
    std::cout.flush();
  }
  completing = nullptr;
  return last;
}

}  // namespace

int shell_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto connected = connect_admin(args);
  if (!connected) return failed(connected.error());
  ShellSession session(std::move(*connected), connection_words(args), *json);
  session.reconnect_with([&args] { return connect_admin(args); });
  if (auto command = args.get("command")) return session.run(*command, std::cout, std::cerr);
  if (isatty(STDIN_FILENO)) {
    // Tab offers the newest workflows of the index too, over a client connection made at the
    // first Tab that needs one.
    auto gateway = std::make_shared<std::unique_ptr<client::GatewayClient>>();
    session.complete_workflows_from([&args, gateway]() -> std::vector<std::string> {
      if (!*gateway) {
        auto connected_client = connect(args);
        if (!connected_client) return {};
        *gateway = std::move(*connected_client);
      }
      client::ListQuery newest;
      newest.limit = completed_workflows;
      auto page = (*gateway)->list(newest);
      if (!page) {
        gateway->reset();  // closed as idle, or the scheduler restarted: connect again next Tab
        return {};
      }
      std::vector<std::string> ids;
      for (const auto& w : page->workflows) ids.push_back(w.workflow_id);
      return ids;
    });
    return interactive(session);
  }
  // Lines from a pipe or a file: each run in turn; the exit code is the first failure's.
  int first_failure = exit_ok;
  std::string line;
  while (!session.quit() && std::getline(std::cin, line)) {
    const int code = session.run(line, std::cout, std::cerr);
    if (code != exit_ok && first_failure == exit_ok) first_failure = code;
  }
  return first_failure;
}

}  // namespace troupe::cli
