// The troupe CLI's parsing, help and usage errors, as a user meets them: the binary
// ($TROUPE_CLI) run with good and bad words, checked by output and exit code. Nothing here needs
// a cluster, except `up`/`down --json`, which start and stop one scheduler node.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/temp_dir.hpp"

using troupe::test::contains;
using troupe::test::is_json;
using troupe::test::line_count;
using troupe::test::troupe_cli;

namespace {

/// Every command, groups included, as the words that name it.
const std::vector<std::vector<std::string>> every_command = {
    {"submit"}, {"result"}, {"status"}, {"watch"}, {"list"}, {"pause"}, {"resume"}, {"stop"}, {"kill"},
    {"rerun"}, {"retry"}, {"skip"}, {"update"}, {"purge"}, {"complete"}, {"fail"}, {"dev"}, {"up"}, {"down"},
    {"describe"}, {"describe", "states"}, {"bench"}, {"bench", "store"}, {"bench", "chain"},
    {"bench", "fanout"}, {"bench", "idle"}, {"version"}, {"help"}};

std::vector<std::string> plus(std::vector<std::string> words, const std::vector<std::string>& more) {
  words.insert(words.end(), more.begin(), more.end());
  return words;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

/// A usage error as it must look: exit 2, at most three lines, the last one pointing at help.
void check_usage_error(const std::vector<std::string>& words, const std::string& see) {
  CAPTURE(joined(words));
  auto run = troupe_cli(words);
  INFO(run.output);
  CHECK(run.code == 2);
  CHECK(line_count(run.output) <= 3);
  CHECK(run.output.ends_with("see '" + see + "'\n"));
}

}  // namespace

TEST_SUITE("integration.cli_help") {
  TEST_CASE("troupe alone or troupe help prints a short overview of the commands and the exit codes") {
    auto bare = troupe_cli({});
    CHECK(bare.code == 2);  // no command: a usage error, with the overview to choose from
    CHECK(bare.output.starts_with("usage: troupe COMMAND"));
    CHECK(line_count(bare.output) < 60);  // one screen
    for (const auto& command : {"submit", "result", "status", "watch", "list", "kill", "rerun", "complete", "fail",
                                "dev", "up", "down", "workers", "worker", "describe", "bench", "version", "help"}) {
      CHECK_MESSAGE(contains(bare.output, std::string("\n  ") + command + " "), command);
    }
    CHECK(contains(bare.output, "5  timed out waiting"));
    for (const auto& words : std::vector<std::vector<std::string>>{{"help"}, {"--help"}, {"-h"}}) {
      auto help = troupe_cli(words);
      CHECK(help.code == 0);
      CHECK(help.output == bare.output);
    }
  }

  TEST_CASE("every command has its help as 'help CMD', 'CMD --help' and 'CMD -h', with options and examples") {
    for (const auto& command : every_command) {
      CAPTURE(joined(command));
      auto help = troupe_cli(plus({"help"}, command));
      CHECK(help.code == 0);
      CHECK(help.output.starts_with("usage: troupe " + joined(command)));
      auto long_form = troupe_cli(plus(command, {"--help"}));
      CHECK(long_form.code == 0);
      CHECK(long_form.output == help.output);
      auto short_form = troupe_cli(plus(command, {"-h"}));
      CHECK(short_form.code == 0);
      CHECK(short_form.output == help.output);
      const bool group = command == std::vector<std::string>{"describe"} || command == std::vector<std::string>{"bench"};
      if (group) {
        CHECK(contains(help.output, "commands:\n"));
      } else {
        CHECK(contains(help.output, "options:\n"));
        CHECK(contains(help.output, "examples:\n  troupe " + joined(command)));
        CHECK(contains(help.output, "exit codes:\n  0  "));
      }
    }
    // Each option a command takes is in its help.
    auto submit = troupe_cli({"submit", "--help"});
    for (const auto& option : {"--id ID", "--input JSON|@FILE", "--wait", "--timeout D", "--json",
                               "--address HOST:PORT", "--config CLUSTER.toml", "--token-file F", "-h, --help"}) {
      CHECK_MESSAGE(contains(submit.output, std::string("\n  ") + option + " "), option);
    }
    CHECK(contains(submit.output, "5  with --wait: --timeout ran out"));
    auto up = troupe_cli({"help", "up"});
    CHECK(contains(up.output, "--node NAME             only this node (repeatable)"));
    auto kill = troupe_cli({"kill", "-h"});
    CHECK(contains(kill.output, "Prints \"ID STOPPED\""));
  }

  TEST_CASE("-h and --help show help wherever they are, and never run the command") {
    // Were -h a definition's name, this would try to reach the scheduler (exit 3).
    const std::string nowhere = "127.0.0.1:" + std::to_string(troupe::test::free_port());
    for (const auto& words : std::vector<std::vector<std::string>>{{"submit", "-h", "--address", nowhere},
                                                                   {"submit", "x.json", "--wait", "-h"},
                                                                   {"result", "wf-1", "--help", "--address", nowhere}}) {
      CAPTURE(joined(words));
      auto run = troupe_cli(words);
      CHECK(run.code == 0);
      CHECK(run.output.starts_with("usage: troupe " + words[0]));
      CHECK_FALSE(contains(run.output, "cannot reach"));
    }
    // A workflow id named like a command is an id.
    auto named_like_a_command = troupe_cli({"status", "submit", "--address", nowhere});
    CHECK(named_like_a_command.code == 3);
    CHECK(contains(named_like_a_command.output, "cannot reach the scheduler"));
    // After --, -h is an argument like any other: here the name of a registered definition.
    auto literal = troupe_cli({"submit", "--address", nowhere, "--", "-h"});
    CHECK(literal.code == 3);
    CHECK(contains(literal.output, "cannot reach the scheduler"));
  }

  TEST_CASE("an unknown option is named as such, with the command's nearest option") {
    auto jsn = troupe_cli({"submit", "x.json", "--jsn"});
    CHECK(jsn.code == 2);
    CHECK(jsn.output == "troupe: submit: unknown option --jsn (did you mean --json?)\nsee 'troupe submit --help'\n");
    auto time = troupe_cli({"result", "wf-1", "--time", "3s"});
    CHECK(time.output == "troupe: result: unknown option --time (did you mean --timeout?)\n"
                         "see 'troupe result --help'\n");
    auto workflow = troupe_cli({"bench", "chain", "--workflow", "3"});
    CHECK(workflow.code == 2);
    CHECK(contains(workflow.output, "troupe: bench chain: unknown option --workflow (did you mean --workflows?)\n"));
    auto far = troupe_cli({"status", "wf-1", "--colour"});
    CHECK(far.output == "troupe: status: unknown option --colour\nsee 'troupe status --help'\n");
    auto valued = troupe_cli({"list", "--stat=FAILED"});
    CHECK(contains(valued.output, "unknown option --stat (did you mean --state?)"));
  }

  TEST_CASE("an option without its value says so") {
    auto at_end = troupe_cli({"result", "wf-1", "--timeout"});
    CHECK(at_end.code == 2);
    CHECK(at_end.output == "troupe: result: --timeout needs a value\nsee 'troupe result --help'\n");
    auto before_option = troupe_cli({"result", "wf-1", "--timeout", "--json"});
    CHECK(before_option.code == 2);
    CHECK(contains(before_option.output, "troupe: result: --timeout needs a value"));
  }

  TEST_CASE("an unknown command gets the nearest command") {
    auto top = troupe_cli({"sbmit", "x.json"});
    CHECK(top.code == 2);
    CHECK(top.output == "troupe: unknown command 'sbmit' (did you mean submit?)\nsee 'troupe help'\n");
    auto workload = troupe_cli({"bench", "chan"});
    CHECK(workload.output == "troupe: bench: unknown command 'chan' (did you mean chain?)\n"
                             "see 'troupe bench --help'\n");
    auto help = troupe_cli({"help", "stauts"});
    CHECK(help.code == 2);
    CHECK(contains(help.output, "unknown command 'stauts' (did you mean status?)"));
  }

  TEST_CASE("usage errors are a line or two and where to read more, never the whole usage") {
    check_usage_error({"submit"}, "troupe submit --help");
    check_usage_error({"submit", "a.json", "b.json"}, "troupe submit --help");
    check_usage_error({"complete", "token-only"}, "troupe complete --help");
    check_usage_error({"list", "extra"}, "troupe list --help");
    check_usage_error({"list", "--limit", "0"}, "troupe list --help");
    check_usage_error({"result", "wf-1", "--timeout", "soon"}, "troupe result --help");
    check_usage_error({"up"}, "troupe up --help");
    check_usage_error({"bench"}, "troupe bench --help");
    check_usage_error({"describe"}, "troupe describe --help");
    check_usage_error({"describe", "states", "--format", "pdf"}, "troupe describe states --help");
    check_usage_error({"bench", "chain", "--workflows", "none"}, "troupe bench chain --help");
    check_usage_error({"help", "--format", "html"}, "troupe help --help");
    check_usage_error({"--bogus"}, "troupe help");
    auto missing = troupe_cli({"submit"});
    CHECK(missing.output == "troupe: submit: missing FILE.json|NAME\nusage: troupe submit FILE.json|NAME [options]\n"
                            "see 'troupe submit --help'\n");
  }

  TEST_CASE("--json is on every command that prints, and prints JSON") {
    auto version = troupe_cli({"version", "--json"});
    CHECK(version.code == 0);
    CHECK(is_json(version.output));
    CHECK(contains(version.output, R"("revision":")"));
    auto version_text = troupe_cli({"version", "--json=false"});
    CHECK(version_text.output.starts_with("troupe "));
    CHECK(troupe_cli({"--version"}).output == version_text.output);
    for (const auto& words : std::vector<std::vector<std::string>>{{"describe", "states", "--json"},
                                                                   {"describe", "states", "--format=json"}}) {
      CAPTURE(joined(words));
      auto states = troupe_cli(words);
      CHECK(states.code == 0);
      CHECK(is_json(states.output));
      CHECK(contains(states.output, R"({"workflow":{"states":["SUBMITTED","RUNNING",)"));
      CHECK(contains(states.output, R"({"from":"RUNNING","event":"STOP","to":"READY_STOP","actions":["persist",)"));
      CHECK(contains(states.output, R"("task":{)"));
      CHECK(contains(states.output, R"("workerHealth":{)"));
    }
    // Every client command has the option (what they print is checked against a cluster in
    // integration.cli).
    for (const auto& command : {"submit", "result", "status", "watch", "list", "pause", "resume", "stop", "kill",
                                "rerun", "complete", "fail", "up", "down", "version"}) {
      CHECK_MESSAGE(contains(troupe_cli({command, "--help"}).output, "\n  --json "), command);
    }
  }

  TEST_CASE("up and down print their node table as JSON; --node may repeat and takes --node=NAME") {
    troupe::test::ClusterSpec spec;
    spec.workers = {};
    troupe::test::Cluster cluster(spec);  // the config only: troupe up starts its node
    // Unknown nodes are refused before anything starts, every one of them named.
    auto unknown = troupe_cli({"up", cluster.config, "--node=nope-1", "--node", "nope-2"});
    CHECK(unknown.code == 2);
    CHECK(contains(unknown.output, "nope-1"));
    CHECK(contains(unknown.output, "nope-2"));
    struct Down {
      std::string config;
      ~Down() { troupe_cli({"down", config}); }
    } down_at_end{cluster.config};
    auto up = troupe_cli({"up", cluster.config, "--node=scheduler", "--json"});
    INFO(up.output);
    CHECK(up.code == 0);
    CHECK(is_json(up.output));
    CHECK(contains(up.output, R"({"nodes":[{"node":"scheduler","roles":"scheduler","pid":)"));
    CHECK(contains(up.output, R"("status":"started","ok":true)"));
    auto down = troupe_cli({"down", cluster.config, "--json"});
    INFO(down.output);
    CHECK(down.code == 0);
    CHECK(is_json(down.output));
    CHECK(contains(down.output, R"("status":"stopped","ok":true)"));
  }

  TEST_CASE("the README's CLI reference is the binary's help") {
    const char* readme_path = std::getenv("TROUPE_README");
    REQUIRE_MESSAGE(readme_path != nullptr, "TROUPE_README must name the README");
    const std::string readme = read_file(readme_path);
    const auto begin_marker = readme.find("<!-- BEGIN CLI REFERENCE");
    REQUIRE(begin_marker != std::string::npos);
    const auto begin = readme.find("-->\n", begin_marker);
    REQUIRE(begin != std::string::npos);
    const auto end = readme.find("<!-- END CLI REFERENCE -->", begin);
    REQUIRE(end != std::string::npos);
    const std::string in_readme = readme.substr(begin + 4, end - begin - 4);
    auto reference = troupe_cli({"help", "--all", "--format", "markdown"});
    CHECK(reference.code == 0);
    CHECK_MESSAGE(in_readme == reference.output,
                  "README.md's CLI reference differs from the help texts: run tools/update-cli-reference");
  }
}
