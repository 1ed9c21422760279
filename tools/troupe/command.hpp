// A command of the troupe CLI as data: its words, arguments, options, help text and the
// function that runs it. The table of every command (command_table.cpp) is the one source of
// the parser (command_line.cpp), of `troupe help` and of the README's CLI reference (help.cpp).
//
// Adding an option: one OptionSpec line in the command's entry, then read it in the command's
// function with args.get("name") / args.boolean("name", ...). Adding a command: one entry and
// its function.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tools/troupe/args.hpp"
#include "tools/troupe/exit_codes.hpp"

namespace troupe::cli {

struct OptionSpec {
  /// The long name without dashes: "timeout" is given as `--timeout D` or `--timeout=D`.
  std::string name{};
  /// What it takes, as the help shows it ("D", "HOST:PORT"); empty for a flag, which takes no
  /// value (`--json`, or `--json=false`).
  std::string value{};
  /// What it does, with its default; wrapped when printed.
  std::string help{};
  /// May be given more than once, every value kept (`--node a --node b`); otherwise the last
  /// one counts.
  bool repeated = false;
  /// A one-letter alias without the dash (`-c` for "c"); empty: none.
  std::string short_name{};
};

struct ArgumentSpec {
  std::string name{};  ///< as the help shows it: "ID", "FILE.json|NAME"
  bool optional = false;
  bool repeated = false;  ///< takes every remaining word
};

struct CommandSpec {
  /// The command's words: "submit", "bench chain". A command of two words is listed after
  /// its group ("bench"), which has no `run` and is only shown in help.
  std::string path{};
  /// The overview's heading a top-level command is listed under.
  std::string section{};
  /// One line, for the overview and the group's list.
  std::string summary{};
  std::vector<ArgumentSpec> arguments{};
  /// Paragraphs separated by "\n\n", wrapped when printed.
  std::string description{};
  std::vector<OptionSpec> options{};
  /// Also takes connection_options(), listed apart in the help.
  bool connects = false;
  /// Command lines, each optionally followed by "  # what it does".
  std::vector<std::string> examples{};
  std::vector<ExitStatus> exits{};
  /// Runs the command and returns its exit code; empty for a group.
  std::function<int(const Args&)> run{};
};

/// The options every command that talks to a scheduler takes: where it is, and its token.
const std::vector<OptionSpec>& connection_options();

/// Every command, groups before their commands (defined in command_table.cpp). `help` is not
/// among them: the command line adds it (command_line.hpp).
std::vector<CommandSpec> command_table();

}  // namespace troupe::cli
