// The CLI's JSON syntax check (what it reports, and where) and its "did you mean".
#include <doctest/doctest.h>

#include <string>

#include "tools/troupe/json_syntax.hpp"
#include "tools/troupe/suggest.hpp"

using troupe::cli::check_json_syntax;
using troupe::cli::near_miss;

TEST_SUITE("tools.json_syntax") {
  TEST_CASE("well-formed JSON of every kind passes") {
    for (const char* text : {"{}", "[]", "0", "-0.5e+3", "1E9", "\"a\\\"b\\u00e9\\n\"", "true", "false", "null",
                             " \n\t{\"a\": [1, 2.5, {\"b\": null}], \"c\": \"\xc3\xa9\"} \n",
                             "[[[[[[[[[[1]]]]]]]]]]"}) {
      CAPTURE(text);
      CHECK_FALSE(check_json_syntax(text));
    }
  }

  TEST_CASE("a problem is reported at its line and column, with what was found and expected") {
    struct Case {
      std::string text;
      size_t line, column;
      std::string message;
    };
    const Case cases[] = {
        {"", 1, 1, "no JSON value: the text is empty"},
        {"notjson", 1, 1, "found word 'notjson' (text must be a string in double quotes)"},
        {"{'a': 1}", 1, 2, "expected a key in double quotes, found '''"},
        {"'a'", 1, 1, "(strings take double quotes)"},
        {"{\"a\": 1,}", 1, 9, "expected a key in double quotes, found '}' (a trailing comma)"},
        {"[1, 2,]", 1, 7, "expected a value, found ']' (a trailing comma)"},
        {"{\"name\": \"x\",\n  \"tasks\": [\n    {\"name\": \"a\" \"handler\": \"noop\"}]}", 3, 18,
         "expected ',' or '}', found '\"'"},
        {"{\"a\" 1}", 1, 6, "expected ':' after the key, found '1'"},
        {"[1 2]", 1, 4, "expected ',' or ']', found '2'"},
        {"[1, 2", 1, 6, "expected ',' or ']', found end of text"},
        {"{\"a\": 1} x", 1, 10, "unexpected word 'x' after the JSON value"},
        {"\"abc", 1, 1, "the string that starts here never ends"},
        {"\"a\nb\"", 1, 3, "a line break in a string (write it as \\n)"},
        {"\"\\q\"", 1, 3, "unknown escape \\q"},
        {"\"\\u12G4\"", 1, 6, "\\u takes four hex digits, found word 'G4'"},
        {"01", 1, 2, "a number cannot start with 0"},
        {"-", 1, 2, "expected a digit in the number, found end of text"},
        {"1.", 1, 3, "expected a digit after the decimal point"},
        {"1e+", 1, 4, "expected a digit in the exponent"},
        {"nul", 1, 1, "found word 'nul'"},
        {"nullx", 1, 1, "found word 'nullx'"},
        // Columns count characters: the two-byte é is one.
        {"[\"\xc3\xa9\", x]", 1, 7, "found word 'x'"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      auto error = check_json_syntax(c.text);
      REQUIRE(error);
      CHECK(error->line == c.line);
      CHECK(error->column == c.column);
      CHECK_MESSAGE(error->message.find(c.message) != std::string::npos, error->message);
    }
  }

  TEST_CASE("nesting is bounded, so no input can exhaust the stack") {
    CHECK_FALSE(check_json_syntax(std::string(500, '[') + std::string(500, ']')));
    auto deep = check_json_syntax(std::string(100000, '['));
    REQUIRE(deep);
    CHECK(deep->message.find("nested more than 512 levels") != std::string::npos);
  }
}

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
