// UTF-8 well-formedness after RFC 3629's table (also Unicode's Table 3-7): the second byte's
// range depends on the first, which rules out overlong forms, surrogates and values past
// U+10FFFF without decoding.
#include "schema/utf8.hpp"

#include <cstdio>

namespace troupe {
namespace {

std::string hex_byte(unsigned char c) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", c);
  return text;
}

bool is_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

}  // namespace

size_t utf8_length(std::string_view text, size_t at, std::string* why) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  auto bad = [&](std::string message) -> size_t {
    if (why != nullptr) *why = std::move(message);
    return 0;
  };
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // below: overlong
    if (lead == 0xed) high = 0x9f;  // above: a UTF-16 surrogate, U+D800-DFFF
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // below: overlong
    if (lead == 0xf4) high = 0x8f;  // above: past U+10FFFF
  } else if (is_continuation(lead)) {
    return bad("byte " + hex_byte(lead) + " continues a character that never began");
  } else if (lead == 0xc0 || lead == 0xc1) {
    return bad("byte " + hex_byte(lead) + " begins an overlong encoding, which UTF-8 forbids");
  } else {
    return bad("byte " + hex_byte(lead) + " cannot occur in UTF-8");
  }
  for (size_t i = 1; i < length; ++i) {
    if (at + i >= text.size()) {
      return bad("the character that begins with byte " + hex_byte(lead) + " is cut short by the end of the text");
    }
    const unsigned char c = byte(at + i);
    const bool in_range = i == 1 ? (c >= low && c <= high) : is_continuation(c);
    if (!in_range) {
      if (i == 1 && is_continuation(c)) {
        return bad("bytes " + hex_byte(lead) + " " + hex_byte(c) +
                   (lead == 0xed ? " encode a UTF-16 surrogate, which UTF-8 forbids"
                                 : lead == 0xf4 ? " encode a code point past U+10FFFF"
                                                : " begin an overlong encoding, which UTF-8 forbids"));
      }
      return bad("the character that begins with byte " + hex_byte(lead) + " is cut short by byte " +
                 hex_byte(c));
    }
  }
  return length;
}

std::optional<Utf8Problem> utf8_problem(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    if (static_cast<unsigned char>(text[at]) < 0x80) {
      ++at;
      continue;
    }
    std::string why;
    const size_t length = utf8_length(text, at, &why);
    if (length == 0) return Utf8Problem{at, std::move(why)};
    at += length;
  }
  return std::nullopt;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const auto c = static_cast<unsigned char>(text[at]);
    const size_t length = c < 0x80 ? 1 : utf8_length(text, at);
    if (c < 0x20 || c == 0x7f || c == '\\' || length == 0) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
      ++at;
      continue;
    }
    out.append(text.substr(at, length));
    at += length;
  }
  return out;
}

}  // namespace troupe
