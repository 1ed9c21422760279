// The CLI's "did you mean": the nearest option or command to what was typed.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schema/suggest.hpp"

using troupe::near_miss;

TEST_SUITE("tools.suggest") {
  TEST_CASE("a typo finds the nearest candidate; an abbreviation its only completion; a stranger nothing") {
    const std::vector<std::string> options = {"--json", "--timeout", "--address", "--token-file", "--config"};
    CHECK(near_miss("--jsn", options) == "--json");
    CHECK(near_miss("--JSON", options) == "--json");
    CHECK(near_miss("--timeuot", options) == "--timeout");
    CHECK(near_miss("--time", options) == "--timeout");
    CHECK(near_miss("--adress", options) == "--address");
    CHECK_FALSE(near_miss("--colour", options));
    CHECK_FALSE(near_miss("--", options));  // an abbreviation of everything names nothing
    CHECK(near_miss("sbmit", {"submit", "status", "result"}) == "submit");
  }
}
