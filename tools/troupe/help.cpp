// Help texts from the command table: plain text filled to 80 columns, or Markdown.
#include "tools/troupe/help.hpp"

#include <algorithm>
#include <sstream>

namespace troupe::cli {
namespace {

constexpr size_t text_width = 80;
constexpr size_t markdown_width = 96;
/// Where the help of an option starts in text: after "  --config CLUSTER.toml  ".
constexpr size_t option_column = 26;

/// `text`'s words filled into lines of at most `width` columns; the first line starts with
/// `first`, the others with `rest`. A word longer than a line gets a line of its own.
std::string fill(const std::string& text, const std::string& first, const std::string& rest, size_t width) {
  std::istringstream words(text);
  std::string out = first, word;
  size_t column = first.size();
  bool line_empty = true;
  while (words >> word) {
    if (!line_empty && column + 1 + word.size() > width) {
      out += "\n" + rest;
      column = rest.size();
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    line_empty = false;
  }
  return out + "\n";
}

std::vector<std::string> paragraphs(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find("\n\n", start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 2;
  }
  return out;
}

std::string option_label(const OptionSpec& o) {
  if (o.name == "help") return "-h, --help";
  return (o.short_name.empty() ? "" : "-" + o.short_name + ", ") + "--" + o.name + (o.value.empty() ? "" : " " + o.value);
}

std::string arguments_text(const CommandSpec& c) {
  std::string out;
  for (const auto& a : c.arguments) {
    const std::string name = a.name + (a.repeated ? "..." : "");
    out += " " + (a.optional ? "[" + name + "]" : name);
  }
  return out;
}

std::string options_text(const std::vector<OptionSpec>& options) {
  std::string out;
  for (const auto& o : options) {
    std::string label = "  " + option_label(o);
    const std::string help = o.help + (o.repeated ? " (repeatable)" : "");
    if (label.size() + 2 > option_column) {
      out += label + "\n";
      label.clear();
    }
    label.resize(option_column, ' ');
    out += fill(help, label, std::string(option_column, ' '), text_width);
  }
  return out;
}

std::string exits_text(const std::vector<ExitStatus>& exits) {
  std::string out;
  for (const auto& e : exits) out += fill(e.meaning, "  " + std::to_string(e.code) + "  ", "     ", text_width);
  return out;
}

/// An example line split into its command and its "# comment".
std::pair<std::string, std::string> split_example(const std::string& example) {
  const auto hash = example.find("  # ");
  if (hash == std::string::npos) return {example, ""};
  std::string command = example.substr(0, hash);
  return {command, example.substr(hash + 4)};
}

/// Examples as text: the command, its comment indented below it when given.
std::string examples_text(const std::vector<std::string>& examples) {
  std::string out;
  for (const auto& example : examples) {
    auto [command, comment] = split_example(example);
    out += "  " + command + "\n";
    if (!comment.empty()) out += fill(comment, "      ", "      ", text_width);
  }
  return out;
}

/// A list of commands and their summaries, the summaries starting `width` + 2 columns after
/// `prefix`.
std::string command_list(const std::vector<const CommandSpec*>& commands, const std::string& prefix, size_t width) {
  std::string out;
  for (const auto* c : commands) {
    std::string label = prefix + c->path;
    label.resize(prefix.size() + width + 2, ' ');
    out += fill(c->summary, label, std::string(label.size(), ' '), text_width);
  }
  return out;
}

// --- Markdown -------------------------------------------------------------------------------

std::string md_options(const std::vector<OptionSpec>& options) {
  std::string out;
  for (const auto& o : options) {
    out += fill(o.help + (o.repeated ? " (repeatable)" : ""), "- `" + option_label(o) + "`: ", "  ", markdown_width);
  }
  return out;
}

std::string md_exits(const std::vector<ExitStatus>& exits) {
  std::string out;
  for (const auto& e : exits) out += fill(e.meaning, "- `" + std::to_string(e.code) + "`: ", "  ", markdown_width);
  return out;
}

}  // namespace

std::string command_markdown(const CommandSpec& c, const std::vector<CommandSpec>& table) {
  std::string out = "#### `troupe " + c.path + arguments_text(c) + "`\n\n";
  for (const auto& p : paragraphs(c.description)) out += fill(p, "", "", markdown_width) + "\n";
  if (const auto subs = subcommands(table, c.path); !subs.empty()) {
    for (const auto* sub : subs) out += fill(sub->summary, "- `troupe " + sub->path + "`: ", "  ", markdown_width);
    out += "\n";
  }
  std::string options = md_options(c.options);
  if (c.connects) options += "- `--address`, `--config`, `--token-file`, `--tls-ca`, `--plaintext`...: the connection options\n";
  if (!options.empty()) out += "Options:\n\n" + options + "\n";
  if (!c.examples.empty()) {
    out += "```sh\n";
    for (const auto& e : c.examples) {
      auto [command, comment] = split_example(e);
      out += command + (comment.empty() ? "" : "   # " + comment) + "\n";
    }
    out += "```\n\n";
  }
  if (!c.exits.empty()) {
    std::string exits;
    for (const auto& e : c.exits) exits += (exits.empty() ? "" : "; ") + ("`" + std::to_string(e.code) + "` " + e.meaning);
    out += fill("Exit codes: " + exits + ".", "", "", markdown_width) + "\n";
  }
  return out;
}

const CommandSpec* find_command(const std::vector<CommandSpec>& table, const std::string& path) {
  for (const auto& c : table) {
    if (c.path == path) return &c;
  }
  return nullptr;
}

std::vector<const CommandSpec*> subcommands(const std::vector<CommandSpec>& table, const std::string& group) {
  std::vector<const CommandSpec*> out;
  for (const auto& c : table) {
    const auto space = c.path.rfind(' ');
    const std::string parent = space == std::string::npos ? "" : c.path.substr(0, space);
    if (parent == group) out.push_back(&c);
  }
  return out;
}

std::string usage_line(const CommandSpec& command) {
  return "troupe " + command.path + arguments_text(command) + " [options]";
}

std::string overview_text(const std::vector<CommandSpec>& table) {
  std::string out =
      "usage: troupe COMMAND [ARGUMENTS] [OPTIONS]\n\n"
      "troupe runs workflows (DAGs of tasks) on a cluster: a scheduler dispatches their tasks\n"
      "to workers, and every step is durable. These commands talk to a scheduler, run one, or\n"
      "start a whole cluster on this machine.\n";
  // One column for every section, so the lists line up.
  size_t width = 0;
  for (const auto* c : subcommands(table, "")) width = std::max(width, c->path.size());
  std::string section;
  std::vector<const CommandSpec*> in_section;
  auto flush = [&] {
    if (in_section.empty()) return;
    out += "\n" + section + ":\n" + command_list(in_section, "  ", width);
    in_section.clear();
  };
  for (const auto* c : subcommands(table, "")) {
    if (c->section != section) {
      flush();
      section = c->section;
    }
    in_section.push_back(c);
  }
  flush();
  out += "\n'troupe help COMMAND' (or 'troupe COMMAND --help') shows a command's options and\n"
         "examples; 'troupe help --all' shows every command's.\n\nexit codes:\n" +
         exits_text(exit_code_table());
  return out;
}

std::string command_text(const CommandSpec& c, const std::vector<CommandSpec>& table) {
  std::string out = "usage: " + usage_line(c) + "\n\n";
  for (const auto& p : paragraphs(c.description)) out += fill(p, "", "", text_width) + "\n";
  if (!c.run) {
    const auto subs = subcommands(table, c.path);
    size_t width = 0;
    for (const auto* s : subs) width = std::max(width, s->path.size());
    out += "commands:\n" + command_list(subs, "  troupe ", width);
    const std::string which = c.arguments.empty() ? "COMMAND" : c.arguments.front().name;
    out += "\nsee 'troupe " + c.path + " " + which + " --help' for one of them.\n\n";
  } else {
    std::vector<OptionSpec> options = c.options;
    options.push_back({"help", "", "print this help"});
    out += "options:\n" + options_text(options) + "\n";
    // A group that runs too ("describe ID") lists its commands after its own options.
    if (const auto subs = subcommands(table, c.path); !subs.empty()) {
      size_t width = 0;
      for (const auto* s : subs) width = std::max(width, s->path.size());
      out += "commands:\n" + command_list(subs, "  troupe ", width) + "\n";
    }
  }
  if (c.connects) out += "connection options:\n" + options_text(connection_options()) + "\n";
  if (!c.examples.empty()) out += "examples:\n" + examples_text(c.examples) + "\n";
  if (!c.exits.empty()) out += "exit codes:\n" + exits_text(c.exits) + "\n";
  out.pop_back();  // no blank line at the end
  return out;
}

std::string reference_text(const std::vector<CommandSpec>& table) {
  std::string out = overview_text(table);
  for (const auto& c : table) out += "\n" + std::string(text_width, '-') + "\n" + command_text(c, table);
  return out;
}

std::string reference_markdown(const std::vector<CommandSpec>& table) {
  std::string out =
      "Every command prints its own help: `troupe help COMMAND`, `troupe COMMAND --help` or `-h`. This\n"
      "reference is that help, generated by `troupe help --all --format markdown`.\n\n"
      "Exit codes, the same for every command:\n\n" +
      md_exits(exit_code_table()) +
      "\nThe connection options, taken by every command that talks to a scheduler:\n\n" +
      md_options(connection_options()) + "\n";
  std::string section;
  for (const auto& c : table) {
    const bool top = c.path.find(' ') == std::string::npos;
    if (top && c.section != section) {
      section = c.section;
      out += "### " + section + "\n\n";
    }
    out += command_markdown(c, table);
  }
  while (out.size() > 1 && out.ends_with("\n\n")) out.pop_back();
  return out;
}

}  // namespace troupe::cli
