// `troupe watch` on a terminal (a pseudo-terminal of 70x15 made by script(1)): every frame fits
// the screen with its header on top, redraws go to the alternate screen so none piles up in the
// scrollback, the first frame shows the workflow as it is, and the last table stays on the
// normal screen when the watch ends.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/client/gateway_client.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"

using namespace std::chrono_literals;
namespace client = troupe::client;
using troupe::test::contains;
using troupe::test::eventually;

namespace {

/// root -> 20 tasks of 1 s -> join, on a worker of 8 slots: a few seconds of changes.
std::string wide_definition() {
  std::string tasks = R"({"name": "root", "handler": "noop"})";
  std::string all;
  for (int i = 0; i < 20; ++i) {
    const std::string name = "part-" + std::to_string(10 + i);
    tasks += R"(, {"name": ")" + name + R"(", "dependsOn": ["root"], "handler": "sleep", "input": {"duration": "1s"}})";
    all += (all.empty() ? "\"" : ", \"") + name + "\"";
  }
  tasks += R"(, {"name": "join", "dependsOn": [)" + all + R"(], "handler": "noop"})";
  return R"({"name": "wide", "tasks": [)" + tasks + "]}";
}

std::vector<std::string> split(const std::string& text, const std::string& by) {
  std::vector<std::string> parts;
  size_t at = 0;
  for (size_t next; (next = text.find(by, at)) != std::string::npos; at = next + by.size()) {
    parts.push_back(text.substr(at, next - at));
  }
  parts.push_back(text.substr(at));
  return parts;
}

/// Characters of `line` as a terminal shows them: escape sequences and carriage returns (the
/// terminal's own, before each line feed) take no room.
size_t visible_width(const std::string& line) {
  size_t width = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      while (i < line.size() && !(line[i] >= '@' && line[i] <= '~' && line[i] != '[')) ++i;
      continue;
    }
    if (line[i] != '\r' && (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++width;
  }
  return width;
}

}  // namespace

TEST_SUITE("integration.watch") {
  TEST_CASE("on a 70x15 terminal every frame fits under its header and the last table stays") {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 8}}, std::nullopt}};
    troupe::test::Cluster cluster(spec);
    cluster.start("scheduler");
    cluster.start("worker-a");
    std::unique_ptr<client::GatewayClient> api;
    REQUIRE(eventually(
        [&] {
          auto c = client::GatewayClient::connect("127.0.0.1", cluster.port);
          if (c) api = std::move(*c);
          return api != nullptr;
        },
        20s));
    auto started = api->start(client::StartRequest{wide_definition(), "", "wide-1", ""});
    REQUIRE_MESSAGE(started, started.error().message);
    // Watch a workflow already under way: its first frame must say so.
    REQUIRE(eventually(
        [&] {
          auto status = api->describe("wide-1");
          return status && status->tasks.size() == 22 && status->tasks[1].state == "RUNNING";
        },
        20s));

    const std::string command = "stty rows 15 cols 70; exec '" + troupe::test::cli_binary() +
                                "' watch wide-1 --address 127.0.0.1:" + std::to_string(cluster.port);
    troupe::test::ChildProcess watch({"/usr/bin/script", "-qfec", command, "/dev/null"});
    const std::string output = troupe::test::read_output(watch, 60s);
    const int status = watch.wait();
    INFO(output);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));

    const size_t enter = output.find("\x1b[?1049h");
    const size_t leave = output.find("\x1b[?1049l");
    REQUIRE(enter != std::string::npos);
    REQUIRE(leave != std::string::npos);
    REQUIRE(enter < leave);
    auto frames = split(output.substr(enter, leave - enter), "\x1b[H");
    frames.erase(frames.begin());  // what came before the first frame
    REQUIRE(frames.size() >= 2);
    for (const auto& frame : frames) {
      auto lines = split(frame, "\r\n");
      lines.pop_back();  // after the last line break: the clear below the frame
      CHECK(lines.size() <= 14);
      REQUIRE_FALSE(lines.empty());
      CHECK(lines[0].rfind("wide-1 ", 0) == 0);
      for (const auto& line : lines) CHECK_MESSAGE(visible_width(line) <= 70, "[" << line << "]");
    }
    CHECK(frames.front().rfind("wide-1 RUNNING", 0) == 0);
    CHECK(contains(frames.front(), "RUNNING"));
    CHECK(frames.back().rfind("wide-1 SUCCESS", 0) == 0);
    CHECK(contains(frames.front(), "... "));  // 22 tasks do not fit in 15 rows

    // Back on the normal screen: the whole final table, every task in it.
    const std::string after = output.substr(leave);
    CHECK(contains(after, "wide-1 SUCCESS"));
    for (int i = 0; i < 20; ++i) CHECK(contains(after, "part-" + std::to_string(10 + i)));
    CHECK(contains(after, "join"));
  }
}
