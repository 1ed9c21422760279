// A recursive-descent walk over JSON text that builds nothing: it stops at the first error and
// says what was expected there and what was found.
#include "schema/json_syntax.hpp"

namespace troupe {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_'; }

/// Where the walk stopped and why.
struct Stop {
  size_t offset = 0;
  std::string message;
};

class Walk {
 public:
  Walk(std::string_view text, size_t max_depth) : text_(text), max_depth_(max_depth) {}

  /// False at the first error, which stopped() then holds.
  bool document() {
    skip_space();
    if (!value(0)) return false;
    skip_space();
    if (pos_ < text_.size()) return stop(pos_, "unexpected " + found(pos_) + " after the JSON value");
    return true;
  }

  const Stop& stopped() const { return stop_; }

 private:
  bool stop(size_t at, std::string message) {
    stop_ = Stop{at, std::move(message)};
    return false;
  }

  /// What stands at `at`, for a message: a word whole ('notjson'), a character, or the end.
  std::string found(size_t at) const {
    if (at >= text_.size()) return "the end of the text";
    const char c = text_[at];
    if (is_word(c)) {
      size_t end = at;
      while (end < text_.size() && is_word(text_[end]) && end - at < 24) ++end;
      return "'" + std::string(text_.substr(at, end - at)) + "'";
    }
    if (c == '\n' || c == '\r') return "the end of the line";
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      static const char digits[] = "0123456789abcdef";
      return std::string("the control character 0x") + digits[byte >> 4] + digits[byte & 15];
    }
    if (byte >= 0x80) return "a non-ASCII character";
    return std::string("'") + c + "'";
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }

  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }

  bool value(size_t depth) {
    if (at_end()) return stop(pos_, "expected a value, found the end of the text");
    switch (peek()) {
      case '{': return object(depth + 1);
      case '[': return array(depth + 1);
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default:
        if (peek() == '-' || is_digit(peek())) return number();
        return stop(pos_, "expected a value (an object, array, string, number, true, false or null), found " +
                              found(pos_));
    }
  }

  bool literal(std::string_view word) {
    const size_t start = pos_;
    size_t end = pos_;
    while (end < text_.size() && is_word(text_[end])) ++end;
    if (text_.substr(start, end - start) != word) {
      return stop(start, "expected a value (an object, array, string, number, true, false or null), found " +
                             found(start));
    }
    pos_ = end;
    return true;
  }

  void digits() {
    while (is_digit(peek())) ++pos_;
  }

  bool number() {
    if (peek() == '-') ++pos_;
    if (!is_digit(peek())) return stop(pos_, "expected a digit after '-', found " + found(pos_));
    if (peek() == '0') {
      ++pos_;
      if (is_digit(peek())) return stop(pos_ - 1, "a number may not start with 0 unless it is 0 (no leading zeros)");
    } else {
      digits();
    }
    if (peek() == '.') {
      ++pos_;
      if (!is_digit(peek())) return stop(pos_, "expected a digit after the decimal point, found " + found(pos_));
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) return stop(pos_, "expected a digit in the exponent, found " + found(pos_));
      digits();
    }
    return true;
  }

  bool string() {
    const size_t start = pos_++;
    for (;;) {
      if (at_end()) return stop(start, "this string is never closed (a '\"' is missing)");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\n' || c == '\r') {
        return stop(pos_, "a string may not span lines: write a line break as \\n (or is a closing '\"' missing?)");
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return stop(pos_, "a control character in a string must be escaped (\\t, \\n or \\u00XX)");
      }
      if (c != '\\') {
        ++pos_;
        continue;
      }
      const size_t escape = pos_++;
      if (at_end()) return stop(start, "this string is never closed (a '\"' is missing)");
      switch (text_[pos_]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
          ++pos_;
          break;
        case 'u':
          ++pos_;
          for (int i = 0; i < 4; ++i, ++pos_) {
            if (!is_hex(peek())) return stop(escape, "\\u must be followed by four hexadecimal digits");
          }
          break;
        default:
          return stop(escape, "unknown escape '\\" + std::string(1, text_[pos_]) +
                                  "' (known: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
      }
    }
  }

  bool object(size_t depth) {
    if (depth > max_depth_) return stop(pos_, "nested deeper than " + std::to_string(max_depth_) + " levels");
    ++pos_;  // '{'
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    for (bool after_comma = false;; after_comma = true) {
      if (peek() != '"') {
        return stop(pos_, std::string(after_comma ? "a comma must be followed by another member; " : "") +
                              "expected a member name (a string in double quotes), found " + found(pos_));
      }
      if (!string()) return false;
      skip_space();
      if (peek() != ':') return stop(pos_, "expected ':' after the member name, found " + found(pos_));
      ++pos_;
      skip_space();
      if (!value(depth)) return false;
      skip_space();
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      if (peek() != ',') return stop(pos_, "expected ',' or '}' after a member, found " + found(pos_));
      ++pos_;
      skip_space();
    }
  }

  bool array(size_t depth) {
    if (depth > max_depth_) return stop(pos_, "nested deeper than " + std::to_string(max_depth_) + " levels");
    ++pos_;  // '['
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    for (bool after_comma = false;; after_comma = true) {
      if (after_comma && peek() == ']') return stop(pos_, "a comma must be followed by another element, found ']'");
      if (!value(depth)) return false;
      skip_space();
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      if (peek() != ',') return stop(pos_, "expected ',' or ']' after an element, found " + found(pos_));
      ++pos_;
      skip_space();
    }
  }

  std::string_view text_;
  size_t max_depth_;
  size_t pos_ = 0;
  Stop stop_;
};

}  // namespace

std::string JsonSyntaxError::to_string() const {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

std::optional<JsonSyntaxError> json_syntax_error(std::string_view text, size_t max_depth) {
  Walk walk(text, max_depth);
  if (walk.document()) return std::nullopt;
  JsonSyntaxError error;
  error.offset = walk.stopped().offset;
  error.message = walk.stopped().message;
  for (size_t i = 0; i < error.offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++error.line;
      error.column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) {
      ++error.column;  // a UTF-8 continuation byte adds nothing to the column
    }
  }
  return error;
}

Result<void> check_json(std::string_view text, std::string_view what) {
  if (auto error = json_syntax_error(text)) {
    return fail(Errc::INVALID_ARGUMENT, std::string(what) + " is not valid JSON: " + error->to_string());
  }
  return ok();
}

std::string json_quote(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

const char* json_kind_of(std::string_view json) {
  size_t at = 0;
  while (at < json.size() && is_space(json[at])) ++at;
  if (at == json.size()) return "nothing";
  switch (json[at]) {
    case '{': return "an object";
    case '[': return "an array";
    case '"': return "a string";
    case 't': case 'f': return "a boolean";
    case 'n': return "null";
    default: return "a number";
  }
}

}  // namespace troupe
