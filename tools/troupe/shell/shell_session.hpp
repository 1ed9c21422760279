// One `troupe shell`: its connection to a scheduler's admin interface, its commands (the admin
// ones, and the CLI's own commands that talk to a scheduler, passed through), and what tab
// completion offers. No line editing here (shell_command.cpp has it), so it runs the same under
// `-c` and in a terminal.
#pragma once

#include <iosfwd>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/client/admin_client.hpp"
#include "tools/troupe/command.hpp"

namespace troupe::cli {

struct ShellCommand {
  std::string name;
  std::string usage;    ///< "actors [KIND] [--sort mailbox|age] [--limit N]"
  std::string summary;  ///< one line
  std::string help;     ///< what it shows, for `help NAME`
  /// What its arguments complete to: "workflow", "actor", "worker", "kind", "task list" or "".
  std::string completes;
};

class ShellSession {
 public:
  /// `connection`: the command line's connection options (--address ...), passed on to the
  /// CLI commands the shell runs; `json`: every command answers in JSON.
  ShellSession(std::unique_ptr<client::AdminClient> admin, std::vector<std::string> connection, bool json);

  /// Runs one line; returns the command's exit code (exit_ok, exit_usage, ...). Output goes to
  /// `out`, complaints to `err`. Sets `quit` for quit/exit.
  int run(const std::string& line, std::ostream& out, std::ostream& err);
  bool quit() const { return quit_; }

  /// The words the word being typed may become, given the words before it.
  std::vector<std::string> complete(const std::vector<std::string>& before, const std::string& prefix);

  /// Where completion finds workflow ids beyond the live actors' (closed workflows, and open
  /// ones passivated to their histories): the index, newest first. Unset: the live actors only.
  void complete_workflows_from(std::function<std::vector<std::string>()> indexed) { indexed_ = std::move(indexed); }

  /// The shell's commands, the admin ones first.
  const std::vector<ShellCommand>& commands() const { return commands_; }

  /// How to connect again when the admin connection is gone (the scheduler closed it as idle,
  /// or restarted): the next admin command connects again and carries on. Unset: it fails.
  using Reconnect = std::function<Result<std::unique_ptr<client::AdminClient>>()>;
  void reconnect_with(Reconnect reconnect) { reconnect_ = std::move(reconnect); }

 private:
  /// `call(admin)`; once more on a new connection if the connection was lost (every admin
  /// call only reads, so repeating one is safe).
  template <class Call>
  auto on_admin(Call call) -> decltype(call(std::declval<client::AdminClient&>()));

  std::unique_ptr<client::AdminClient> admin_;
  Reconnect reconnect_;
  std::vector<std::string> connection_;
  bool json_;
  bool quit_ = false;
  std::vector<ShellCommand> commands_;
  std::vector<CommandSpec> cli_;
  std::function<std::vector<std::string>()> indexed_;
};

/// A line split into words: blanks separate them, "double" or 'single' quotes keep blanks
/// inside one. INVALID_ARGUMENT for an unterminated quote.
Result<std::vector<std::string>> split_words(const std::string& line);

}  // namespace troupe::cli
