// JSON syntax (RFC 8259), checked on its own so that text refused as JSON is refused saying
// where: the line and column of the first error. One checker for everything troupe takes as
// JSON from outside: workflow inputs, task results and workflow definitions (whose decoder,
// capnp's JsonCodec, reports no position). Std-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe {

/// What json_syntax_error found wrong: the grammar, or one of the rules of JsonRules.
enum class JsonErrorKind : uint8_t {
  SYNTAX,          ///< not JSON's grammar (RFC 8259)
  INVALID_UTF8,    ///< a string that is not UTF-8 (JsonRules::utf8)
  DUPLICATE_NAME,  ///< a member named twice in one object (JsonRules::unique_names)
};

/// The first syntax error of a text.
struct JsonSyntaxError {
  JsonErrorKind kind = JsonErrorKind::SYNTAX;
  uint32_t line = 1;    ///< from 1
  uint32_t column = 1;  ///< from 1, in characters (UTF-8 code points) of that line
  size_t offset = 0;    ///< in bytes from the start of the text
  /// The JSON path of the value being read there, e.g. "$.tasks[2].name"; "$" is the whole
  /// text. A member name that is not a plain word is written ["like this"].
  std::string path = "$";
  std::string message;  ///< what is wrong there, e.g. "expected ',' or '}' after a member, found 'x'"

  /// "line 3, column 14: MESSAGE" for a SYNTAX error, "line 3, column 14, at PATH: MESSAGE"
  /// for the others.
  std::string to_string() const;
};

/// Containers nested deeper than this are refused by json_syntax_error's default: deep enough
/// for any real document, shallow enough that checking never exhausts a thread's stack.
inline constexpr size_t json_max_depth = 512;

/// What json_syntax_error holds a text to beyond the grammar.
struct JsonRules {
  /// Arrays and objects nested deeper than this are an error. Default: json_max_depth.
  size_t max_depth = json_max_depth;
  /// Strings must be UTF-8, as RFC 8259 requires of JSON exchanged between systems, and a \u
  /// escape of half a UTF-16 surrogate pair must come with its other half. Off only to read what
  /// was stored before troupe checked. Default: true.
  bool utf8 = true;
  /// No object may name a member twice. RFC 8259 leaves duplicates to each reader, so two readers
  /// may take different values from one text. Off for data troupe passes on as it is (inputs,
  /// results). Default: false.
  bool unique_names = false;
};

/// The first error of `text` as one JSON value (surrounding whitespace allowed) under `rules`,
/// or nullopt if it is JSON and keeps them. A UTF-8 or duplicate-name error's message names its
/// JSON path and byte offset.
std::optional<JsonSyntaxError> json_syntax_error(std::string_view text, const JsonRules& rules = {});

/// check: INVALID_ARGUMENT "WHAT is not valid JSON: line L, column C: MESSAGE" unless `text` is
/// JSON under the default rules (UTF-8 strings included). `what` names the text for the user,
/// e.g. "the workflow input".
Result<void> check_json(std::string_view text, std::string_view what);

/// `text` as a JSON string, quotes included: '"' and '\\' escaped, control characters as \n,
/// \t, \r or \u00XX; everything else (UTF-8 included) as it is.
std::string json_quote(std::string_view text);

/// What the JSON text `json` holds at its top level, for messages: "an object", "an array",
/// "a string", "a number", "a boolean", "null" (or "nothing" for a blank text).
const char* json_kind_of(std::string_view json);

}  // namespace troupe
