// The JSON syntax checker: where each kind of error is reported, and what it accepts; and the
// definition checker's use of it (syntax errors with positions, JSON that is no object).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schema/definition.hpp"
#include "schema/json_syntax.hpp"

using namespace troupe;

namespace {

struct Bad {
  std::string text;
  uint32_t line;
  uint32_t column;
  std::string says;  ///< a part of the message
};

}  // namespace

TEST_SUITE("schema.json_syntax") {
  TEST_CASE("JSON of every kind is accepted, with whitespace around it") {
    for (const std::string text :
         {"{}", "[]", "null", "true", "false", "0", "-0.5e+10", "1E3", "\"\"", " \n\t{\"a\": [1, 2.5, \"x\\n\\u00e9\"]}\r\n",
          R"({"nested": {"deeper": [[], {}, [null, {"k": false}]]}, "unicode": "été"})", "\"\\\" \\\\ \\/ \\b \\f \\r \\t\""}) {
      CAPTURE(text);
      CHECK_FALSE(json_syntax_error(text));
      CHECK(check_json(text, "x"));
    }
  }

  TEST_CASE("each error is reported at its line and column, saying what was expected and found") {
    const std::vector<Bad> cases = {
        {"notjson", 1, 1, "expected a value (an object, array, string, number, true, false or null), found 'notjson'"},
        {"", 1, 1, "expected a value, found the end of the text"},
        {"   ", 1, 4, "found the end of the text"},
        {"{\"a\": 1,\n \"b\": }", 2, 7, "expected a value"},
        {"{\"a\": 1,}", 1, 9, "a comma must be followed by another member; expected a member name"},
        {"[1, 2,]", 1, 7, "a comma must be followed by another element"},
        {"{\"a\" 1}", 1, 6, "expected ':' after the member name, found '1'"},
        {"{\"a\": 1 \"b\": 2}", 1, 9, "expected ',' or '}' after a member, found '\"'"},
        {"[1 2]", 1, 4, "expected ',' or ']' after an element, found '2'"},
        {"{a: 1}", 1, 2, "expected a member name (a string in double quotes), found 'a'"},
        {"{'a': 1}", 1, 2, "found '''"},
        {"\"open", 1, 1, "this string is never closed"},
        {"\"line\nbreak\"", 1, 6, "a string may not span lines"},
        {"\"tab\there\"", 1, 5, "a control character in a string must be escaped"},
        {"\"\\x\"", 1, 2, "unknown escape '\\x'"},
        {"\"\\u12g4\"", 1, 2, "\\u must be followed by four hexadecimal digits"},
        {"012", 1, 1, "no leading zeros"},
        {"-x", 1, 2, "expected a digit after '-'"},
        {"1.", 1, 3, "expected a digit after the decimal point, found the end of the text"},
        {"1e+", 1, 4, "expected a digit in the exponent"},
        {"tru", 1, 1, "found 'tru'"},
        {"nulls", 1, 1, "found 'nulls'"},
        {"{} {}", 1, 4, "unexpected '{' after the JSON value"},
        {"{\"a\": 1}\n}", 2, 1, "unexpected '}' after the JSON value"},
        // Columns count characters, not bytes: "é" is two bytes and one column.
        {"{\"é\": x}", 1, 7, "found 'x'"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      auto error = json_syntax_error(c.text);
      REQUIRE(error);
      CHECK(error->line == c.line);
      CHECK(error->column == c.column);
      CHECK_MESSAGE(error->message.find(c.says) != std::string::npos, error->message);
    }
  }

  TEST_CASE("check_json names the text, then the position and the problem") {
    auto checked = check_json("{\"n\": 3,\n}", "the workflow input");
    REQUIRE_FALSE(checked);
    CHECK(checked.error().code == Errc::INVALID_ARGUMENT);
    CHECK(checked.error().message ==
          "the workflow input is not valid JSON: line 2, column 1: a comma must be followed by another member; "
          "expected a member name (a string in double quotes), found '}'");
  }

  TEST_CASE("nesting beyond the limit is an error at the container that goes too deep, not a crash") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    auto error = json_syntax_error(deep);
    REQUIRE(error);
    CHECK(error->column == json_max_depth + 1);
    CHECK(error->message == "nested deeper than 512 levels");
    CHECK_FALSE(json_syntax_error(std::string(10, '[') + std::string(10, ']'), JsonRules{.max_depth = 10}));
    CHECK(json_syntax_error(std::string(11, '[') + std::string(11, ']'), JsonRules{.max_depth = 10}));
  }

  TEST_CASE("json_kind_of names what a text holds at its top level") {
    CHECK(std::string(json_kind_of(" {}")) == "an object");
    CHECK(std::string(json_kind_of("[]")) == "an array");
    CHECK(std::string(json_kind_of("\"x\"")) == "a string");
    CHECK(std::string(json_kind_of("-1")) == "a number");
    CHECK(std::string(json_kind_of("false")) == "a boolean");
    CHECK(std::string(json_kind_of("null")) == "null");
  }
}

TEST_SUITE("schema.definition") {
  TEST_CASE("a definition with a syntax error is refused with the error's line and column") {
    const std::string json = "{\"name\": \"x\",\n  \"tasks\": [\n    {\"name\": \"a\" \"handler\": \"noop\"}]}";
    auto parsed = parse_definition(json);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == Errc::INVALID_ARGUMENT);
    CHECK(parsed.error().message ==
          "the workflow definition has 1 problem:\n  $: is not valid JSON: line 3, column 18: expected ',' or '}' "
          "after a member, found '\"'");
  }

  TEST_CASE("JSON that is no object is refused as such") {
    for (const auto& [json, kind] : std::vector<std::pair<std::string, std::string>>{
             {"[]", "an array"}, {" \"diamond\"", "a string"}, {"42", "a number"}, {"null", "null"}}) {
      CAPTURE(json);
      auto check = check_definition(json);
      REQUIRE(check.problems.size() == 1);
      CHECK(check.problems[0].path == "$");
      CHECK(check.problems[0].message == "a workflow definition is a JSON object; this is " + kind);
    }
  }

  TEST_CASE("a task's own input is marked as given, even when it is null") {
    auto spec = parse_definition(R"({"name": "w", "tasks": [
      {"name": "none", "handler": "noop"},
      {"name": "own", "handler": "noop", "input": {"n": 1}},
      {"name": "null", "handler": "noop", "input": null}]})");
    REQUIRE(spec);
    CHECK_FALSE(spec->tasks[0].has_input);
    CHECK(spec->tasks[1].has_input);
    CHECK(spec->tasks[1].input_json == R"({"n":1})");
    CHECK(spec->tasks[2].has_input);
    CHECK(spec->tasks[2].input_json == "null");
  }
}

TEST_SUITE("schema.json_syntax") {
  TEST_CASE("a string that is not UTF-8 is refused at its JSON path and byte offset") {
    struct Bad {
      std::string text;
      std::string path;
      size_t offset;
      std::string says;
    };
    const std::vector<Bad> cases = {
        {"\"\xff\"", "$", 1, "invalid UTF-8 at byte offset 1 (byte 0 of the string): byte 0xff cannot occur in UTF-8"},
        {"{\"name\": \"ab\xc3(\"}", "$.name", 12, "byte 2 of the string): the character that begins with byte 0xc3"},
        {"{\"tasks\": [{\"name\": \"a\"}, {\"name\": \"\xed\xa0\x80\"}]}", "$.tasks[1].name", 36,
         "encode a UTF-16 surrogate"},
        // In a member name: the path is the object's.
        {"{\"ok\": 1, \"n\xe9me\": 2}", "$", 12, "(byte 1 of a member name)"},
        {"{\"a b\": [\"\x80\"]}", "$[\"a b\"][0]", 10, "continues a character that never began"},
        // Escapes that stand for half a surrogate pair decode to no character.
        {"[\"\\ud800\"]", "$[0]", 2, "\\ud800 is half of a UTF-16 surrogate pair without its other half"},
        {"[\"\\udc00\\ud800\"]", "$[0]", 2, "\\udc00 is half of a UTF-16 surrogate pair"},
        {"[\"\\ud83d\\u0041\"]", "$[0]", 2, "\\ud83d is half"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      auto error = json_syntax_error(c.text);
      REQUIRE(error);
      CHECK(error->kind == JsonErrorKind::INVALID_UTF8);
      CHECK(error->path == c.path);
      CHECK(error->offset == c.offset);
      CHECK_MESSAGE(error->message.find(c.says) != std::string::npos, error->message);
      // Read as troupe read it before it checked, it passes.
      CHECK_FALSE(json_syntax_error(c.text, JsonRules{.utf8 = false}));
    }
    // A whole surrogate pair is one character.
    CHECK_FALSE(json_syntax_error("\"\\ud83c\\udf89 \xf0\x9f\x8e\x89\""));
  }

  TEST_CASE("check_json says where invalid UTF-8 is: line, column, path and byte offset") {
    auto checked = check_json("{\"who\": \"x\xff\"}", "the workflow input");
    REQUIRE_FALSE(checked);
    CHECK(checked.error().message ==
          "the workflow input is not valid JSON: line 1, column 11, at $.who: invalid UTF-8 at byte offset 10 "
          "(byte 1 of the string): byte 0xff cannot occur in UTF-8; JSON text must be UTF-8");
  }

  TEST_CASE("with unique_names, a member named twice in one object is refused at its path") {
    const JsonRules strict{.unique_names = true};
    struct Twice {
      std::string text;
      std::string path;
      std::string says;
    };
    const std::vector<Twice> cases = {
        {"{\"a\": 1, \"a\": 2}", "$.a", "the member name \"a\" is given twice in one object (at byte offset 9, "
                                         "and first at line 1, column 2)"},
        {"{\"tasks\": [{\"name\": \"x\"}, {\"name\": \"y\",\n \"name\": \"z\"}]}", "$.tasks[1].name",
         "first at line 1, column 28"},
        // The same name however it is written.
        {"{\"a\": 1, \"\\u0061\": 2}", "$.a", "the member name \"a\" is given twice"},
        {"{\"x\": {\"k\": 1}, \"y\": {\"k\": 2, \"k\": 3}}", "$.y.k", "given twice"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      auto error = json_syntax_error(c.text, strict);
      REQUIRE(error);
      CHECK(error->kind == JsonErrorKind::DUPLICATE_NAME);
      CHECK(error->path == c.path);
      CHECK_MESSAGE(error->message.find(c.says) != std::string::npos, error->message);
      // RFC 8259 allows them, and so do inputs and results.
      CHECK_FALSE(json_syntax_error(c.text));
    }
    // The same name in different objects, and many names in one (past the small-object list).
    CHECK_FALSE(json_syntax_error("[{\"a\": 1}, {\"a\": 2, \"b\": {\"a\": 3}}]", strict));
    std::string many = "{";
    for (int i = 0; i < 100; ++i) many += (i ? ", \"k" : "\"k") + std::to_string(i) + "\": " + std::to_string(i);
    CHECK_FALSE(json_syntax_error(many + "}", strict));
    auto again = json_syntax_error(many + ", \"k57\": 0}", strict);
    REQUIRE(again);
    CHECK(again->path == "$.k57");
  }
}
