// UTF-8 validity (RFC 3629). Text troupe takes from users (names, ids, JSON) must be UTF-8, so
// that what it stores prints back as what was sent, in a terminal or a JSON document. Std-only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace troupe {

/// Where a text stops being UTF-8 and why.
struct Utf8Problem {
  size_t offset = 0;    ///< of the first byte of the bad sequence, from the text's start
  std::string message;  ///< e.g. "byte 0xff cannot occur in UTF-8"
};

/// The length (1-4) of the well-formed UTF-8 character at `text[at]`, or 0 if none starts
/// there (then `why`, if given, says what is wrong). Overlong forms, UTF-16 surrogates
/// (U+D800-DFFF) and code points beyond U+10FFFF are not well-formed.
size_t utf8_length(std::string_view text, size_t at, std::string* why = nullptr);

/// The first problem of `text` as UTF-8, or nullopt if it is UTF-8 throughout.
std::optional<Utf8Problem> utf8_problem(std::string_view text);

/// `text` for a message: control characters, '\\' and bytes that are not UTF-8 written as
/// \xNN, so that a name that is refused can be shown without the damage it would do.
std::string printable(std::string_view text);

}  // namespace troupe
