#include "schema/node_log.hpp"

#include <doctest/doctest.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <string>
#include <chrono>
#include <mutex>
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
    // A write may carry several lines (those of other threads that waited meanwhile).
    std::vector<std::string> lines;
    NodeLog log("worker-a", LogLevel::INFO, LogFormat::TEXT, [&](std::string_view written) {
      while (!written.empty()) {
        const size_t end = written.find('\n');
        REQUIRE(end != std::string_view::npos);  // whole lines only
        lines.emplace_back(written.substr(0, end + 1));
        written.remove_prefix(end + 1);
      }
    });
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
    std::vector<int> next(4, 0);  // each thread's lines in the order it logged them
    for (const auto& l : lines) {
      auto parsed = parse_log_line(l);
      REQUIRE(parsed);
      CHECK(parsed->level == "WARN");
      CHECK(parsed->node == "worker-a");
      const int t = std::stoi(parsed->field("thread").value_or("0"));
      CHECK(parsed->field("i") == std::to_string(next[static_cast<size_t>(t)]++));
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

  TEST_CASE("INFO lines wait for their batch; a WARN line goes at once, with what waited before it, in order") {
    std::mutex mutex;
    std::vector<std::string> writes;
    auto written = [&] {
      std::lock_guard lock(mutex);
      return writes;
    };
    {
      // A batch longer than any test: only a WARN line, or the end of the log, writes.
      NodeLog log("scheduler-1", LogLevel::INFO, LogFormat::TEXT,
                  [&](std::string_view lines) {
                    std::lock_guard lock(mutex);
                    writes.emplace_back(lines);
                  },
                  std::chrono::hours(1));
      log.info("workflow started", {{"workflow", "a"}});
      log.info("workflow closed", {{"workflow", "a"}});
      CHECK(written().empty());
      log.warn("worker lost", {{"worker", "w1"}});
      REQUIRE(written().size() == 1);  // one write for the three
      const std::string batch = written()[0];
      CHECK(batch.find("workflow started") < batch.find("workflow closed"));
      CHECK(batch.find("workflow closed") < batch.find("worker lost"));
      log.info("workflow started", {{"workflow", "b"}});
      CHECK(written().size() == 1);
    }
    // The log's end wrote what waited.
    REQUIRE(written().size() == 2);
    CHECK(parse_log_line(written()[1])->field("workflow") == "b");
  }

  TEST_CASE("a batch is written once its time has passed, without anything else logged") {
    std::mutex mutex;
    std::string out;
    NodeLog log("scheduler-1", LogLevel::INFO, LogFormat::TEXT,
                [&](std::string_view lines) {
                  std::lock_guard lock(mutex);
                  out += lines;
                },
                std::chrono::milliseconds(20));
    log.info("workflow started", {{"workflow", "a"}});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool seen = false;
    while (!seen && std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mutex);
        seen = out.find("workflow=a") != std::string::npos;
      }
      if (!seen) std::this_thread::yield();
    }
    CHECK(seen);
  }

  TEST_CASE("the thread that writes batches takes no signal: the node's own handling does") {
    // SIGUSR1 blocked here and in every thread but the log's writer would end the process if
    // the writer took it; blocked there too, it stays pending for sigtimedwait.
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, &usr1, &before);
    {
      sigset_t none;
      sigemptyset(&none);
      pthread_sigmask(SIG_SETMASK, &none, nullptr);  // the writer starts with nothing blocked
      NodeLog log("worker-a", LogLevel::INFO, LogFormat::TEXT, [](std::string_view) {}, std::chrono::milliseconds(5));
      pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
      log.info("workflow started");
      ::kill(::getpid(), SIGUSR1);
      const timespec wait{5, 0};
      CHECK(sigtimedwait(&usr1, nullptr, &wait) == SIGUSR1);
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }

  TEST_CASE("the log of nothing writes nothing") {
    CHECK_FALSE(log_or_none(nullptr).enabled(LogLevel::ERROR));
    log_or_none(nullptr).error("ignored");
  }
}
