#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "storage/keys.hpp"

using namespace troupe;
using namespace troupe::storage;

TEST_SUITE("storage.keys") {
  TEST_CASE("event keys sort by workflow, then by sequence numerically") {
    std::vector<std::string> keys = {event_key("wf1", 256), event_key("wf1", 2), event_key("wf10", 1),
                                     event_key("wf1", 1), event_key("wf0", 99)};
    std::sort(keys.begin(), keys.end());
    CHECK(keys == std::vector<std::string>{event_key("wf0", 99), event_key("wf1", 1),
                                           event_key("wf1", 2), event_key("wf1", 256),
                                           event_key("wf10", 1)});
  }

  TEST_CASE("a workflow's prefix does not cover a longer id's events") {
    const auto prefix = event_prefix("wf1");
    CHECK(event_key("wf1", 5).starts_with(prefix));
    CHECK_FALSE(event_key("wf10", 5).starts_with(prefix));
  }

  TEST_CASE("an event key parses back to its parts") {
    const auto key = event_key("orders/42", 0x0102030405060708ull);
    auto parsed = parse_event_key(key);
    REQUIRE(parsed);
    CHECK(parsed->workflow_id == "orders/42");
    CHECK(parsed->sequence == 0x0102030405060708ull);
    CHECK_FALSE(parse_event_key("short"));
    CHECK_FALSE(parse_event_key(std::string("wf\x01" "12345678", 11)));
  }

  TEST_CASE("damaged keys are described in hex, good ones by name") {
    CHECK(describe_event_key(event_key("wf", 3)) == "workflow 'wf' sequence 3");
    CHECK(describe_event_key("ab") == "key 0x6162");
  }

  TEST_CASE("ids must be non-empty, bounded and free of NUL") {
    CHECK(check_id("wf-1", "workflow id").has_value());
    auto empty = check_id("", "workflow id");
    REQUIRE_FALSE(empty);
    CHECK(empty.error().message == "workflow id is empty");
    auto nul = check_id(std::string("a\0b", 3), "shard id");
    REQUIRE_FALSE(nul);
    CHECK(nul.error().message == "shard id contains a NUL byte");
    auto long_id = check_id(std::string(max_id_bytes + 1, 'x'), "workflow id");
    REQUIRE_FALSE(long_id);
    CHECK(long_id.error().code == Errc::INVALID_ARGUMENT);
  }
}
