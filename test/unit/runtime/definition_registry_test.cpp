// The registry of definition files: lookups by name, files added, edited, renamed, broken or
// duplicated while the scheduler runs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "runtime/definitions/definition_registry.hpp"
#include "test/support/temp_dir.hpp"

using namespace troupe;
using troupe::runtime::DefinitionRegistry;
using troupe::runtime::is_definition_name;

namespace {

std::string definition(const std::string& name, const std::string& handler = "noop") {
  return R"({"name": ")" + name + R"(", "tasks": [{"name": "a", "handler": ")" + handler + R"("}]})";
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_SUITE("runtime.definition_registry") {
  TEST_CASE("a name is any text that does not open a JSON object, array or string") {
    CHECK(is_definition_name("nightly"));
    CHECK(is_definition_name(" nightly-2.v1"));
    CHECK_FALSE(is_definition_name(R"({"name": "x"})"));
    CHECK_FALSE(is_definition_name("  \n{"));
    CHECK_FALSE(is_definition_name(""));
    CHECK_FALSE(is_definition_name("   "));
    // JSON that is no definition is refused as such by the definition checker, not looked up.
    CHECK_FALSE(is_definition_name("[]"));
    CHECK_FALSE(is_definition_name("\n [{\"name\": \"x\"}]"));
    CHECK_FALSE(is_definition_name("\"nightly\""));
  }

  TEST_CASE("definitions are found by the name inside them, read afresh each time") {
    test::TempDir dir;
    const std::string d = dir.path();
    write(d + "/first.json", definition("nightly"));
    write(d + "/notes.txt", "not a definition");
    DefinitionRegistry registry(d);
    auto json = registry.json_of("nightly");
    REQUIRE_MESSAGE(json, (json ? "" : json.error().message));
    CHECK(*json == definition("nightly"));

    // Edited: the next lookup reads the new text.
    write(d + "/first.json", definition("nightly", "sleep"));
    CHECK(*registry.json_of("nightly") == definition("nightly", "sleep"));

    // Added while running: found by a rescan.
    write(d + "/second.json", definition("hourly"));
    CHECK(registry.json_of("hourly"));

    // Renamed inside the file: the old name is gone, the new one is found.
    write(d + "/second.json", definition("every-hour"));
    auto gone = registry.json_of("hourly");
    REQUIRE_FALSE(gone);
    CHECK(gone.error().code == Errc::NOT_FOUND);
    CHECK(registry.json_of("every-hour"));

    // Moved: found under its new file name.
    std::filesystem::rename(d + "/first.json", d + "/moved.json");
    CHECK(*registry.json_of("nightly") == definition("nightly", "sleep"));

    auto names = registry.list();
    REQUIRE(names);
    REQUIRE(names->size() == 2);
    CHECK((*names)[0].name == "every-hour");
    CHECK((*names)[1].name == "nightly");
    CHECK((*names)[1].path == d + "/moved.json");
  }

  TEST_CASE("unknown, broken and duplicated definitions are refused with what to fix") {
    test::TempDir dir;
    const std::string d = dir.path();
    write(d + "/broken.json", R"({"name": "broken", "tasks": []})");
    write(d + "/a.json", definition("twice"));
    write(d + "/b.json", definition("twice"));
    DefinitionRegistry registry(d);

    auto unknown = registry.json_of("nope");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().code == Errc::NOT_FOUND);
    CHECK(unknown.error().message.find("no definition named 'nope' in " + d) == 0);
    CHECK(unknown.error().message.find("1 file there did not parse: broken.json:") != std::string::npos);

    auto twice = registry.json_of("twice");
    REQUIRE_FALSE(twice);
    CHECK(twice.error().code == Errc::INVALID_ARGUMENT);
    CHECK(twice.error().message ==
          "definition 'twice' is defined by more than one file (" + d + "/a.json, " + d + "/b.json): keep one");

    // A file that breaks after it was found says so.
    write(d + "/b.json", definition("once"));
    REQUIRE(registry.json_of("once"));
    write(d + "/b.json", R"({"name": "once", "tasks": [{"name": "a"}]})");
    auto broken = registry.json_of("once");
    REQUIRE_FALSE(broken);
    CHECK(broken.error().code == Errc::INVALID_ARGUMENT);
    CHECK(broken.error().message.find("definition file " + d + "/b.json does not parse:") == 0);

    DefinitionRegistry missing(d + "/nowhere");
    auto nowhere = missing.json_of("x");
    REQUIRE_FALSE(nowhere);
    CHECK(nowhere.error().code == Errc::UNAVAILABLE);
  }
}
