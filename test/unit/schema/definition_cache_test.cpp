#include <doctest/doctest.h>

#include "schema/definition_cache.hpp"

using namespace troupe;

namespace {

std::string definition(int n) {
  return R"({"name": "w)" + std::to_string(n) + R"(", "tasks": [{"name": "a", "handler": "noop"}]})";
}

}  // namespace

TEST_SUITE("schema.definition_cache") {
  TEST_CASE("instances of one definition share one parsed spec and one text") {
    DefinitionCache cache;
    auto first = cache.get(definition(1));
    auto second = cache.get(definition(1));
    REQUIRE(first);
    REQUIRE(second);
    CHECK(first->spec.get() == second->spec.get());
    CHECK(first->json.get() == second->json.get());
    CHECK(first->spec->name == "w1");
    CHECK(cache.size() == 1);
  }

  TEST_CASE("invalid definitions are refused and not kept") {
    DefinitionCache cache;
    auto bad = cache.get(R"({"name": "x", "tasks": []})");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("$.tasks: a workflow needs at least one task") != std::string::npos);
    CHECK(cache.size() == 0);
  }

  TEST_CASE("the least recently used definition goes when the cache is full") {
    DefinitionCache cache(2);
    auto one = cache.get(definition(1));
    REQUIRE(cache.get(definition(2)));
    REQUIRE(cache.get(definition(1)));  // 1 is now the most recent
    REQUIRE(cache.get(definition(3)));  // evicts 2
    CHECK(cache.size() == 2);
    auto again = cache.get(definition(1));
    CHECK(again->spec.get() == one->spec.get());
    // 2 was parsed again: still correct, just a new spec object.
    CHECK(cache.get(definition(2))->spec->name == "w2");
  }
}
