// The command line: the table becomes a CLI11 app, CLI11 splits the words, and what it
// cannot place (an unknown option or command, a missing value) becomes a short message here.
#include "tools/troupe/command_line.hpp"

#include <CLI/CLI.hpp>

#include <deque>
#include <iostream>
#include <map>

#include "tools/troupe/help.hpp"
#include "schema/suggest.hpp"

namespace troupe::cli {
namespace {

CommandSpec help_spec() {
  return {
      .path = "help",
      .section = "Tools",
      .summary = "this overview, or a command's help: its options and examples",
      .arguments = {{"COMMAND", true, true}},
      .description = "Without a command, a short overview of every command and the exit codes. With one (or a "
                     "group and its command, as in 'troupe help bench chain'), that command's help, the same as "
                     "'troupe COMMAND --help'.",
      .options = {{"all", "", "every command's help, after the overview"},
                  {"format", "F", "text (the default) or markdown, as the README's CLI reference"}},
      .examples = {"troupe help submit", "troupe help bench chain",
                   "troupe help --all --format markdown  # the README's CLI reference"},
      .exits = {{exit_ok, "the help was printed"}, {exit_usage, "no such command"}},
  };
}

/// The group of a command path ("bench" for "bench chain", "" for a top-level command), and
/// the command's own word.
std::string parent_of(const std::string& path) {
  const auto space = path.rfind(' ');
  return space == std::string::npos ? "" : path.substr(0, space);
}
std::string last_word(const std::string& path) {
  const auto space = path.rfind(' ');
  return space == std::string::npos ? path : path.substr(space + 1);
}

/// A command as CLI11 parses it, with what its results are read from.
struct Parsed {
  const CommandSpec* spec = nullptr;
  std::vector<CLI::Option*> positionals;
  std::vector<std::pair<const OptionSpec*, CLI::Option*>> options;
};

class CommandLine {
 public:
  explicit CommandLine(std::vector<CommandSpec> table) : table_(std::move(table)) {
    auto help = help_spec();
    help.run = [this](const Args& args) { return help_command(args); };
    table_.push_back(std::move(help));
    // Words CLI11 cannot place are kept, not refused, so that leftover() names them with the
    // nearest option or command instead of CLI11's "The following arguments were not expected".
    root_.allow_extras(true);
    // One command per line: an argument named like another command ("troupe status list")
    // stays an argument.
    root_.require_subcommand(0, 1);
    root_.set_help_flag("-h,--help");
    version_ = root_.add_flag("--version");
    apps_[""] = &root_;
    for (const auto& spec : table_) add(spec);
  }

  int run(const std::vector<std::string>& words) {
    std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 takes them backwards
    try {
      root_.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      const CLI::App* app = deepest();
      if (app == &root_) {
        std::cout << overview_text(table_);
      } else {
        std::cout << command_text(*parsed_.at(app).spec, table_);
      }
      return exit_ok;
    } catch (const CLI::ParseError& e) {
      return parse_error(e);
    }
    const CLI::App* app = deepest();
    if (app == &root_) return top_level();
    const Parsed& parsed = parsed_.at(app);
    const CommandSpec& spec = *parsed.spec;
    if (auto problem = leftover(*app, parsed)) return usage_error(spec.path, *problem);
    if (!spec.run) {
      std::string names;
      for (const auto* sub : subcommands(table_, spec.path)) names += (names.empty() ? "" : ", ") + last_word(sub->path);
      return usage_error(spec.path, "missing " + spec.arguments.front().name + ": " + names);
    }
    std::vector<std::string> positionals;
    for (size_t i = 0; i < parsed.positionals.size(); ++i) {
      const CLI::Option* option = parsed.positionals[i];
      if (option->count() == 0 && !spec.arguments[i].optional) {
        return usage_error(spec.path, "missing " + spec.arguments[i].name + "\nusage: " + usage_line(spec));
      }
      for (const auto& value : option->results()) positionals.push_back(value);
    }
    std::map<std::string, std::vector<std::string>> options;
    for (const auto& [option, cli] : parsed.options) {
      if (cli->count() == 0) continue;
      for (const auto& value : cli->results()) {
        if (!option->value.empty() && names_option(parsed, value)) {
          return usage_error(spec.path, "--" + option->name + " needs a value (" + value + " is an option)");
        }
      }
      options[option->name] = cli->results();
    }
    return spec.run(Args(spec.path, std::move(positionals), std::move(options)));
  }

 private:
  void add(const CommandSpec& spec) {
    CLI::App* parent = apps_.at(parent_of(spec.path));
    CLI::App* app = parent->add_subcommand(last_word(spec.path), spec.summary);
    app->allow_extras(true);
    // At most one command of a group. A group that runs too ("describe ID") takes a word that is
    // none of its commands as its argument.
    app->require_subcommand(0, 1);
    apps_[spec.path] = app;
    Parsed& parsed = parsed_[app];
    parsed.spec = &spec;
    if (spec.run) {
      // CLI11 fills a required argument before it looks for a command, so a group's argument
      // is optional to it (or "describe states" would describe a workflow called "states"), and
      // run() asks for it.
      const bool group = !subcommands(table_, spec.path).empty();
      for (size_t i = 0; i < spec.arguments.size(); ++i) {
        const auto& argument = spec.arguments[i];
        const std::string name = "argument" + std::to_string(i);
        CLI::Option* option = argument.repeated ? app->add_option(name, lists_.emplace_back())
                                                : app->add_option(name, words_.emplace_back());
        option->required(!argument.optional && !group);
        parsed.positionals.push_back(option);
      }
    }
    auto add_option = [&](const OptionSpec& o) {
      const std::string names = (o.short_name.empty() ? "" : "-" + o.short_name + ",") + "--" + o.name;
      CLI::Option* option = o.value.empty() ? app->add_flag(names) : app->add_option(names);
      if (!o.value.empty()) {
        option->allow_extra_args(false)->multi_option_policy(o.repeated ? CLI::MultiOptionPolicy::TakeAll
                                                                        : CLI::MultiOptionPolicy::TakeLast);
      }
      parsed.options.emplace_back(&o, option);
    };
    for (const auto& o : spec.options) add_option(o);
    if (spec.connects) {
      for (const auto& o : connection_options()) add_option(o);
    }
  }

  /// The command the words chose: the last one CLI11 entered.
  const CLI::App* deepest() const {
    const CLI::App* app = &root_;
    while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
    return app;
  }

  std::vector<std::string> option_names(const Parsed& parsed) const {
    std::vector<std::string> names{"--help"};
    for (const auto& [option, cli] : parsed.options) names.push_back("--" + option->name);
    return names;
  }

  /// `value` is one of the command's options ("--timeout --json": the value is missing).
  bool names_option(const Parsed& parsed, const std::string& value) const {
    if (value == "-h") return true;
    const std::string name = value.substr(0, value.find('='));
    for (const auto& known : option_names(parsed)) {
      if (name == known) return true;
    }
    return false;
  }

  /// What CLI11 could not place: an unknown option first, then a word too many.
  std::optional<std::string> leftover(const CLI::App& app, const Parsed& parsed) const {
    std::vector<std::string> words;
    for (const auto& w : app.remaining()) {
      if (w != "--") words.push_back(w);
    }
    for (const auto& w : words) {
      if (w.size() > 1 && w[0] == '-') return unknown_option(w, option_names(parsed));
    }
    if (words.empty()) return std::nullopt;
    if (!parsed.spec->run) {
      std::vector<std::string> names;
      for (const auto* sub : subcommands(table_, parsed.spec->path)) names.push_back(last_word(sub->path));
      return "unknown command '" + words.front() + "'" + did_you_mean(words.front(), names);
    }
    return "unexpected argument '" + words.front() + "'\nusage: " + usage_line(*parsed.spec);
  }

  static std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
    auto near = near_miss(word, candidates);
    return near ? " (did you mean " + *near + "?)" : "";
  }

  static std::string unknown_option(const std::string& word, const std::vector<std::string>& names) {
    const std::string name = word.substr(0, word.find('='));
    return "unknown option " + name + (name.starts_with("--") ? did_you_mean(name, names) : "");
  }

  /// `troupe` alone, `troupe --version`, or a word that is no command.
  int top_level() {
    if (version_->count() > 0) return find_command(table_, "version")->run(Args("version", {}, {}));
    std::vector<std::string> names;
    for (const auto* c : subcommands(table_, "")) names.push_back(c->path);
    for (const auto& w : root_.remaining()) {
      if (w.size() > 1 && w[0] == '-') return usage_error("", unknown_option(w, {"--help", "--version"}));
      return usage_error("", "unknown command '" + w + "'" + did_you_mean(w, names));
    }
    std::cout << overview_text(table_);
    return exit_usage;
  }

  /// A problem CLI11 found, said in a line.
  int parse_error(const CLI::ParseError& e) {
    const CLI::App* app = deepest();
    const std::string path = app == &root_ ? "" : parsed_.at(app).spec->path;
    const std::string what = e.what();
    // CLI11 says "--timeout: 1 required TEXT missing" for an option given no value.
    if (e.get_name() == "ArgumentMismatch" && what.starts_with("--")) {
      return usage_error(path, what.substr(0, what.find(':')) + " needs a value");
    }
    if (e.get_name() == "RequiredError" && app != &root_) {
      const Parsed& parsed = parsed_.at(app);
      for (size_t i = 0; i < parsed.positionals.size(); ++i) {
        if (parsed.positionals[i]->count() == 0 && !parsed.spec->arguments[i].optional) {
          return usage_error(path, "missing " + parsed.spec->arguments[i].name + "\nusage: " + usage_line(*parsed.spec));
        }
      }
    }
    return usage_error(path, what);
  }

  int help_command(const Args& args) {
    const std::string format = args.get("format").value_or("text");
    if (format != "text" && format != "markdown") {
      return usage_error(args, "--format takes text or markdown, not '" + format + "'");
    }
    auto all = args.boolean("all", false);
    if (!all) return usage_error(args, all.error().message);
    std::string path;
    for (const auto& w : args.positionals()) path += (path.empty() ? "" : " ") + w;
    if (*all || (path.empty() && format == "markdown")) {
      std::cout << (format == "markdown" ? reference_markdown(table_) : reference_text(table_));
      return exit_ok;
    }
    if (path.empty()) {
      std::cout << overview_text(table_);
      return exit_ok;
    }
    const CommandSpec* spec = find_command(table_, path);
    if (spec == nullptr) {
      std::vector<std::string> paths;
      for (const auto& c : table_) paths.push_back(c.path);
      return usage_error(args, "unknown command '" + path + "'" + did_you_mean(path, paths));
    }
    std::cout << (format == "markdown" ? command_markdown(*spec, table_) : command_text(*spec, table_));
    return exit_ok;
  }

  std::vector<CommandSpec> table_;
  CLI::App root_{"troupe", "troupe"};
  CLI::Option* version_ = nullptr;
  std::map<std::string, CLI::App*> apps_;
  std::map<const CLI::App*, Parsed> parsed_;
  /// Where CLI11 stores positional values (read back through the options' results).
  std::deque<std::string> words_;
  std::deque<std::vector<std::string>> lists_;
};

}  // namespace

int run_command_line(const std::vector<std::string>& words, std::vector<CommandSpec> table) {
  return CommandLine(std::move(table)).run(words);
}

}  // namespace troupe::cli
