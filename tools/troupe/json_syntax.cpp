// A recursive-descent JSON recogniser that keeps its position as line and column. Each step
// returns false at the first problem, which it has recorded.
#include "tools/troupe/json_syntax.hpp"

#include <algorithm>
#include <cctype>

namespace troupe::cli {
namespace {

constexpr size_t max_depth = 512;

class Checker {
 public:
  explicit Checker(std::string_view text) : text_(text) {}

  std::optional<JsonSyntaxError> document() {
    skip_space();
    if (at_end()) return JsonSyntaxError{line_, column_, "no JSON value: the text is empty"};
    if (value(0)) {
      skip_space();
      if (!at_end()) fail("unexpected " + found() + " after the JSON value");
    }
    return error_;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  bool next_is(char c) const { return !at_end() && peek() == c; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

  /// Moves past one byte, counting lines and characters (UTF-8 continuation bytes add none).
  void advance() {
    const unsigned char c = static_cast<unsigned char>(text_[pos_++]);
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column_;
    }
  }

  /// Records a problem at the current position; returns false for `return fail(...)`.
  bool fail(std::string message) {
    error_ = JsonSyntaxError{line_, column_, std::move(message)};
    return false;
  }

  /// What stands at the position, for a message: "end of text", "'x'", or "word 'nul'".
  std::string found() const {
    if (at_end()) return "end of text";
    const char c = peek();
    if (is_letter(c)) {
      size_t end = pos_;
      while (end < text_.size() && (is_letter(text_[end]) || is_digit(text_[end]))) ++end;
      return "word '" + std::string(text_.substr(pos_, std::min<size_t>(end - pos_, 40))) + "'";
    }
    if (static_cast<unsigned char>(c) < 0x20) return "control character " + std::to_string(static_cast<int>(c));
    // A whole UTF-8 sequence, so a non-ASCII character is shown as itself.
    size_t end = pos_ + 1;
    while (end < text_.size() && (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80) ++end;
    return "'" + std::string(text_.substr(pos_, end - pos_)) + "'";
  }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) advance();
  }

  bool expect(char c, const char* what) {
    if (!next_is(c)) return fail("expected " + std::string(what) + ", found " + found());
    advance();
    return true;
  }

  bool value(size_t depth) {
    if (depth >= max_depth) return fail("nested more than " + std::to_string(max_depth) + " levels deep");
    if (at_end()) return fail("expected a value, found end of text");
    const char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return string();
    if (c == '-' || is_digit(c)) return number();
    if (literal("true") || literal("false") || literal("null")) return true;
    const char* hint = c == '\'' ? " (strings take double quotes)"
                       : is_letter(c) ? " (text must be a string in double quotes)"
                                      : "";
    return fail("expected a value (object, array, string, number, true, false or null), found " + found() + hint);
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    const size_t after = pos_ + word.size();
    if (after < text_.size() && (is_letter(text_[after]) || is_digit(text_[after]))) return false;  // "nullx"
    for (size_t i = 0; i < word.size(); ++i) advance();
    return true;
  }

  bool object(size_t depth) {
    advance();  // {
    skip_space();
    if (next_is('}')) {
      advance();
      return true;
    }
    while (true) {
      if (!next_is('"')) {
        return fail("expected a key in double quotes, found " + found() + (next_is('}') ? " (a trailing comma)" : ""));
      }
      if (!string()) return false;
      skip_space();
      if (!expect(':', "':' after the key")) return false;
      skip_space();
      if (!value(depth + 1)) return false;
      skip_space();
      if (!next_is(',')) return expect('}', "',' or '}'");
      advance();
      skip_space();
    }
  }

  bool array(size_t depth) {
    advance();  // [
    skip_space();
    if (next_is(']')) {
      advance();
      return true;
    }
    while (true) {
      if (next_is(']')) return fail("expected a value, found ']' (a trailing comma)");
      if (!value(depth + 1)) return false;
      skip_space();
      if (!next_is(',')) return expect(']', "',' or ']'");
      advance();
      skip_space();
    }
  }

  bool string() {
    const size_t line = line_, column = column_;
    advance();  // "
    while (!at_end()) {
      const char c = peek();
      if (c == '"') {
        advance();
        return true;
      }
      if (c == '\n') return fail("a line break in a string (write it as \\n)");
      if (static_cast<unsigned char>(c) < 0x20) return fail("a control character in a string");
      if (c == '\\') {
        advance();
        if (at_end()) break;
        const char e = peek();
        if (e == 'u') {
          advance();
          for (int i = 0; i < 4; ++i) {
            if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) {
              return fail("\\u takes four hex digits, found " + found());
            }
            advance();
          }
          continue;
        }
        if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return fail("unknown escape \\" + std::string(1, e) + " (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
        }
      }
      advance();
    }
    error_ = JsonSyntaxError{line, column, "the string that starts here never ends (no closing '\"')"};
    return false;
  }

  bool digits(const char* where) {
    if (at_end() || !is_digit(peek())) return fail(std::string("expected a digit ") + where + ", found " + found());
    while (!at_end() && is_digit(peek())) advance();
    return true;
  }

  bool number() {
    if (next_is('-')) advance();
    if (next_is('0')) {
      advance();
      if (!at_end() && is_digit(peek())) return fail("a number cannot start with 0 (leading zeros)");
    } else if (!digits("in the number")) {
      return false;
    }
    if (next_is('.')) {
      advance();
      if (!digits("after the decimal point")) return false;
    }
    if (next_is('e') || next_is('E')) {
      advance();
      if (next_is('+') || next_is('-')) advance();
      if (!digits("in the exponent")) return false;
    }
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t column_ = 1;
  std::optional<JsonSyntaxError> error_;
};

}  // namespace

std::optional<JsonSyntaxError> check_json_syntax(std::string_view text) { return Checker(text).document(); }

}  // namespace troupe::cli
