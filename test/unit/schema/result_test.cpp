#include <doctest/doctest.h>

#include <string>

#include "schema/errc.hpp"
#include "schema/result.hpp"

using namespace troupe;

TEST_SUITE("schema.result") {
  TEST_CASE("a result holds either its value or its error") {
    Result<int> good = 7;
    REQUIRE(good.has_value());
    CHECK(*good == 7);

    Result<int> bad = fail(Errc::NOT_FOUND, "workflow 'x' has no history");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == Errc::NOT_FOUND);
    CHECK(bad.error().to_string() == "not_found: workflow 'x' has no history");
  }

  TEST_CASE("a void result is ok until given an error") {
    Result<void> done = ok();
    CHECK(done.has_value());
    Result<void> failed = fail(Errc::CORRUPTION, "damaged");
    CHECK_FALSE(failed.has_value());
    CHECK(failed.error().message == "damaged");
  }

  TEST_CASE("every error code has a distinct name") {
    std::string previous;
    for (int code = static_cast<int>(Errc::INVALID_ARGUMENT); code <= static_cast<int>(Errc::INTERNAL);
         ++code) {
      auto name = std::string(errc_name(static_cast<Errc>(code)));
      CHECK(name != "unknown");
      CHECK(name != previous);
      previous = name;
    }
    CHECK(errc_name(static_cast<Errc>(200)) == "unknown");
  }
}
