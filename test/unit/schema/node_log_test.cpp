#include "schema/node_log.hpp"

#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

using namespace troupe;

namespace {

/// 2026-11-24T10:15:03.120456Z
constexpr int64_t some_time_us = 1'795'515'303'120'456;

std::string line_of(LogFormat format, LogFields fields, std::string_view message = "workflow closed") {
  return format_log_line(
      LogRecord{some_time_us, LogLevel::INFO, "scheduler-1", message, {fields.begin(), fields.size()}}, format);
}

}  // namespace

TEST_SUITE("schema.node_log") {
  TEST_CASE("a text line reads time, level, node, message, then key=value fields") {
    CHECK(line_of(LogFormat::TEXT, {{"workflow", "order-42"}, {"state", "SUCCESS"}, {"duration_ms", 1250}}) ==
          "2026-11-24T10:15:03.120Z INFO scheduler-1: workflow closed workflow=order-42 state=SUCCESS "
          "duration_ms=1250\n");
  }

  TEST_CASE("a text value with a space, '=', a quote or a line break is quoted and escaped; an empty one too") {
    CHECK(line_of(LogFormat::TEXT, {{"error", "exited with 3"}}).ends_with(" error=\"exited with 3\"\n"));
    CHECK(line_of(LogFormat::TEXT, {{"why", "a=b"}}).ends_with(" why=\"a=b\"\n"));
    CHECK(line_of(LogFormat::TEXT, {{"why", "say \"hi\"\nbye\\"}}).ends_with(" why=\"say \\\"hi\\\"\\nbye\\\\\"\n"));
    CHECK(line_of(LogFormat::TEXT, {{"reason", ""}}).ends_with(" reason=\"\"\n"));
  }

  TEST_CASE("a JSON line is one object: strings escaped, numbers and booleans bare") {
    CHECK(line_of(LogFormat::JSON, {{"workflow", "a\"b"}, {"attempt", 2u}, {"delta", -3}, {"ok", true}, {"ratio", 0.5}}) ==
          "{\"time\":\"2026-11-24T10:15:03.120Z\",\"level\":\"INFO\",\"node\":\"scheduler-1\",\"msg\":\"workflow "
          "closed\",\"workflow\":\"a\\\"b\",\"attempt\":2,\"delta\":-3,\"ok\":true,\"ratio\":0.5}\n");
  }

  TEST_CASE("either format reads back to the same parts") {
    const LogFields fields = {{"workflow", "order 42"}, {"error", "x=\"y\"\nz"}, {"tasks", 4}};
    for (auto format : {LogFormat::TEXT, LogFormat::JSON}) {
      CAPTURE(static_cast<int>(format));
      auto parsed = parse_log_line(line_of(format, fields, "workflow started"));
      REQUIRE(parsed);
      CHECK(parsed->time == "2026-11-24T10:15:03.120Z");
      CHECK(parsed->level == "INFO");
      CHECK(parsed->node == "scheduler-1");
      CHECK(parsed->message == "workflow started");
      CHECK(parsed->field("workflow") == "order 42");
      CHECK(parsed->field("error") == "x=\"y\"\nz");
      CHECK(parsed->field("tasks") == "4");
      CHECK_FALSE(parsed->field("state"));
    }
  }

  TEST_CASE("a line without fields reads back with its whole message") {
    auto parsed = parse_log_line(line_of(LogFormat::TEXT, {}, "ready"));
    REQUIRE(parsed);
    CHECK(parsed->message == "ready");
    CHECK(parsed->fields.empty());
  }

  TEST_CASE("what is not a log line is not read as one") {
    CHECK_FALSE(parse_log_line(""));
    CHECK_FALSE(parse_log_line("troupe-node: cannot read the config"));
    CHECK_FALSE(parse_log_line("{\"a\":1}"));
    CHECK_FALSE(parse_log_line("{\"time\":\"x\",\"level\":\"INFO\""));
  }

  TEST_CASE("levels and formats are read as the config writes them, and anything else is refused") {
    CHECK(parse_log_level("debug").value() == LogLevel::DEBUG);
    CHECK(parse_log_level("warn").value() == LogLevel::WARN);
    CHECK(parse_log_format("json").value() == LogFormat::JSON);
    auto bad = parse_log_level("verbose");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message == "bad log level \"verbose\" (expected debug, info, warn or error)");
    CHECK_FALSE(parse_log_format("xml"));
  }

  TEST_CASE("a log writes the lines at its level and above, whole, from many threads") {
    std::vector<std::string> lines;
    NodeLog log("worker-a", LogLevel::INFO, LogFormat::TEXT, [&](std::string_view l) { lines.emplace_back(l); });
    log.debug("not this");
    CHECK(lines.empty());
    CHECK_FALSE(log.enabled(LogLevel::DEBUG));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 100; ++i) log.warn("worker status changed", {{"thread", t}, {"i", i}});
      });
    }
    for (auto& thread : threads) thread.join();
    REQUIRE(lines.size() == 400);
    for (const auto& l : lines) {
      auto parsed = parse_log_line(l);
      REQUIRE(parsed);
      CHECK(parsed->level == "WARN");
      CHECK(parsed->node == "worker-a");
    }
  }

  TEST_CASE("a node's start and stop are written whatever its level") {
    std::vector<std::string> lines;
    NodeLog log("scheduler-1", LogLevel::ERROR, LogFormat::TEXT, [&](std::string_view l) { lines.emplace_back(l); });
    log.info("workflow started");
    log.lifecycle("ready", {{"roles", "scheduler"}});
    REQUIRE(lines.size() == 1);
    CHECK(parse_log_line(lines[0])->message == "ready");
    CHECK(parse_log_line(lines[0])->level == "INFO");
  }

  TEST_CASE("the log of nothing writes nothing") {
    CHECK_FALSE(log_or_none(nullptr).enabled(LogLevel::ERROR));
    log_or_none(nullptr).error("ignored");
  }
}
