#include <doctest/doctest.h>

#include "schema/duration.hpp"

using namespace troupe;
using namespace std::chrono_literals;

TEST_SUITE("schema.duration") {
  TEST_CASE("durations parse as people write them") {
    struct Case {
      const char* text;
      Duration expected;
    };
    for (const auto& c : {Case{"250ms", 250ms}, Case{"10s", 10s}, Case{"5m", 5min}, Case{"2h", 2h},
                          Case{"1h30m", 90min}, Case{"1.5s", 1500ms}, Case{"1d", 24h},
                          Case{"750us", 750us}, Case{"0s", 0s}, Case{"1m0.5s", 60500ms}}) {
      CAPTURE(c.text);
      auto parsed = parse_duration(c.text);
      REQUIRE(parsed);
      CHECK(*parsed == c.expected);
    }
  }

  TEST_CASE("malformed durations say what is wrong") {
    struct Case {
      const char* text;
      const char* reason;
    };
    for (const auto& c : {Case{"", "it is empty"}, Case{"10", "the number has no unit"},
                          Case{"ten s", "expected a number at position 0"},
                          Case{"5x", "unknown unit at position 1"}, Case{"1..5s", "is not a number"},
                          Case{"-3s", "expected a number at position 0"}}) {
      CAPTURE(c.text);
      auto parsed = parse_duration(c.text);
      REQUIRE_FALSE(parsed);
      CHECK(parsed.error().code == Errc::INVALID_ARGUMENT);
      CHECK(parsed.error().message.find(c.reason) != std::string::npos);
      CHECK(parsed.error().message.find("write e.g.") != std::string::npos);
    }
  }

  TEST_CASE("formatting reads back to the same duration") {
    for (Duration d : {Duration(0s), Duration(250ms), Duration(90min), Duration(26h + 3s),
                       Duration(1500ms), Duration(7us)}) {
      auto text = format_duration(d);
      CAPTURE(text);
      auto back = parse_duration(text);
      REQUIRE(back);
      CHECK(*back == d);
    }
    CHECK(format_duration(90min) == "1h30m");
    CHECK(format_duration(250ms) == "250ms");
  }
}
