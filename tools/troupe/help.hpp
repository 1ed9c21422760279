// The help texts of the troupe CLI, rendered from the command table: the overview
// (`troupe help`), one command's help (`troupe help CMD`, `troupe CMD --help`), and the whole
// reference as text or as the Markdown the README holds (`troupe help --all --format markdown`).
#pragma once

#include <string>
#include <vector>

#include "tools/troupe/command.hpp"

namespace troupe::cli {

/// The command whose path is `path` ("bench chain"), or nullptr.
const CommandSpec* find_command(const std::vector<CommandSpec>& table, const std::string& path);

/// The commands of group `group` ("bench"), in table order; the top-level commands for "".
std::vector<const CommandSpec*> subcommands(const std::vector<CommandSpec>& table, const std::string& group);

/// "troupe result ID [options]"
std::string usage_line(const CommandSpec& command);

/// The overview: usage, the commands by section with one line each, exit codes.
std::string overview_text(const std::vector<CommandSpec>& table);

/// A command's help: usage, description, options (with -h, --help), its commands when it is a
/// group, examples and exit codes.
std::string command_text(const CommandSpec& command, const std::vector<CommandSpec>& table);

/// command_text() as Markdown, as the README's CLI reference holds it.
std::string command_markdown(const CommandSpec& command, const std::vector<CommandSpec>& table);

/// The overview, then every command's help.
std::string reference_text(const std::vector<CommandSpec>& table);

/// The same as Markdown: the README's CLI reference.
std::string reference_markdown(const std::vector<CommandSpec>& table);

}  // namespace troupe::cli
