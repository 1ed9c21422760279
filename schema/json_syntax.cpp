// A recursive-descent walk over JSON text that builds nothing: it stops at the first error and
// says what was expected there and what was found. It keeps the path to where it is (one frame
// per open container, names as offsets into the text) so that an error can say where in the
// document it is; member names are collected per object only when duplicates are refused.
#include "schema/json_syntax.hpp"

#include <deque>
#include <unordered_map>
#include <vector>

#include "schema/utf8.hpp"

namespace troupe {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_'; }

/// Where the walk stopped and why.
struct Stop {
  JsonErrorKind kind = JsonErrorKind::SYNTAX;
  size_t offset = 0;
  std::string path = "$";
  std::string message;
};

/// The value of hexadecimal digit `c`.
unsigned hex_value(char c) {
  if (is_digit(c)) return static_cast<unsigned>(c - '0');
  return static_cast<unsigned>((c | 0x20) - 'a' + 10);
}

/// `code` (up to U+10FFFF) appended to `out` as UTF-8.
void append_utf8(std::string& out, unsigned code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xc0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xe0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  }
}

/// The string whose text (between its quotes, escapes and all) is `raw`, decoded. Only for
/// text the walk has accepted: every escape is well-formed.
std::string unescape(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      out += raw[i];
      continue;
    }
    const char e = raw[++i];
    switch (e) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned code = 0;
        for (int k = 0; k < 4; ++k) code = code * 16 + hex_value(raw[++i]);
        if (code >= 0xd800 && code <= 0xdbff && i + 6 < raw.size() && raw.substr(i + 1, 2) == "\\u") {
          unsigned low = 0;
          for (int k = 0; k < 4; ++k) low = low * 16 + hex_value(raw[i + 3 + k]);
          if (low >= 0xdc00 && low <= 0xdfff) {
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
            i += 6;
          }
        }
        append_utf8(out, code);
        break;
      }
      default: out += e;  // '"', '\\' and '/' stand for themselves
    }
  }
  return out;
}

/// Whether a member name can follow a '.' in a path as it is.
bool is_plain_name(std::string_view name) {
  if (name.empty() || is_digit(name[0])) return false;
  for (char c : name) {
    if (!is_word(c) && c != '-') return false;
  }
  return true;
}

class Walk {
 public:
  Walk(std::string_view text, const JsonRules& rules) : text_(text), rules_(rules) {}

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
  /// An open array or object.
  struct Frame {
    bool object = false;
    size_t index = 0;  ///< array: the element being read
    /// object: the member being read, its name as it stands between its quotes (0, 0: none yet)
    size_t name_begin = 0;
    size_t name_end = 0;
    /// object, with unique_names: each name read so far (decoded) and where it stood. A vector
    /// while small (most objects have a few members), then a map.
    std::vector<std::pair<std::string_view, size_t>> few;
    std::unordered_map<std::string_view, size_t> many;
  };

  bool stop(size_t at, std::string message, JsonErrorKind kind = JsonErrorKind::SYNTAX) {
    stop_ = Stop{kind, at, path(), std::move(message)};
    return false;
  }

  /// The JSON path of what is being read: "$", then each open container's place in its parent.
  std::string path() const {
    std::string out = "$";
    for (size_t i = 0; i < depth_; ++i) {
      const Frame& frame = frames_[i];
      if (!frame.object) {
        out += "[" + std::to_string(frame.index) + "]";
      } else if (frame.name_begin != 0) {
        const std::string_view raw = text_.substr(frame.name_begin, frame.name_end - frame.name_begin);
        const std::string name = raw.find('\\') == std::string_view::npos ? std::string(raw) : unescape(raw);
        out += is_plain_name(name) ? "." + name : "[\"" + printable(name) + "\"]";
      }
    }
    return out;
  }

  /// "line L, column C" of byte `at`, for a message that points back to an earlier place.
  std::string position(size_t at) const {
    uint32_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xc0) != 0x80) {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  Frame& open(bool object) {
    if (frames_.size() == depth_) frames_.emplace_back();
    Frame& frame = frames_[depth_++];
    frame.object = object;
    frame.index = 0;
    frame.name_begin = frame.name_end = 0;
    frame.few.clear();
    frame.many.clear();
    return frame;
  }

  void close() { --depth_; }

  /// Records the name of the member that starts at `quote` (its opening quote) in the innermost
  /// object; with unique_names, false (stopped) if the object has a member of that name already.
  bool member_name(size_t quote) {
    Frame& frame = frames_[depth_ - 1];
    frame.name_begin = quote + 1;
    frame.name_end = pos_ - 1;
    if (!rules_.unique_names) return true;
    std::string_view name = text_.substr(frame.name_begin, frame.name_end - frame.name_begin);
    if (name.find('\\') != std::string_view::npos) {
      // "a" and "\u0061" name the same member: compare names as decoded.
      decoded_.push_back(unescape(name));
      name = decoded_.back();
    }
    std::optional<size_t> first;
    if (frame.many.empty()) {
      for (const auto& [seen, at] : frame.few) {
        if (seen == name) first = at;
      }
      if (!first) {
        frame.few.emplace_back(name, quote);
        if (frame.few.size() > 16) {
          frame.many.insert(frame.few.begin(), frame.few.end());
          frame.few.clear();
        }
      }
    } else if (auto [it, inserted] = frame.many.emplace(name, quote); !inserted) {
      first = it->second;
    }
    if (!first) return true;
    return stop(quote,
                "the member name \"" + printable(name) + "\" is given twice in one object (at byte offset " +
                    std::to_string(quote) + ", and first at " + position(*first) +
                    "): an object may name each member once",
                JsonErrorKind::DUPLICATE_NAME);
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
      if (static_cast<unsigned char>(c) >= 0x80 && rules_.utf8) {
        std::string why;
        const size_t length = utf8_length(text_, pos_, &why);
        if (length == 0) return invalid_utf8(start, pos_, why);
        pos_ += length;
        continue;
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
        case 'u': {
          ++pos_;
          unsigned code = 0;
          for (int i = 0; i < 4; ++i, ++pos_) {
            if (!is_hex(peek())) return stop(escape, "\\u must be followed by four hexadecimal digits");
            code = code * 16 + hex_value(peek());
          }
          if (rules_.utf8 && code >= 0xd800 && code <= 0xdfff && !surrogate_pair(code)) {
            return invalid_utf8(start, escape,
                                "\\u" + std::string(text_.substr(escape + 2, 4)) +
                                    " is half of a UTF-16 surrogate pair without its other half, which "
                                    "stands for no character (a high half \\ud800-\\udbff must be followed by "
                                    "a low half \\udc00-\\udfff)");
          }
          break;
        }
        default:
          return stop(escape, "unknown escape '\\" + std::string(1, text_[pos_]) +
                                  "' (known: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
      }
    }
  }

  /// After the high half of a surrogate pair (\\ud800-\\udbff, `code`), at the next byte: takes
  /// the low half's escape if it follows. False for a low half alone, or a high one without it.
  bool surrogate_pair(unsigned code) {
    if (code >= 0xdc00) return false;
    if (text_.substr(pos_, 2) != "\\u" || pos_ + 6 > text_.size()) return false;
    unsigned low = 0;
    for (size_t i = pos_ + 2; i < pos_ + 6; ++i) {
      if (!is_hex(text_[i])) return false;
      low = low * 16 + hex_value(text_[i]);
    }
    if (low < 0xdc00 || low > 0xdfff) return false;
    pos_ += 6;
    return true;
  }

  /// Stops at byte `at` of the string that starts at `start`: it is not UTF-8, for `why`.
  bool invalid_utf8(size_t start, size_t at, const std::string& why) {
    const bool is_name = naming_;
    return stop(at,
                "invalid UTF-8 at byte offset " + std::to_string(at) + " (byte " + std::to_string(at - start - 1) +
                    " of " + (is_name ? "a member name" : "the string") + "): " + why +
                    "; JSON text must be UTF-8",
                JsonErrorKind::INVALID_UTF8);
  }

  bool object(size_t depth) {
    if (depth > rules_.max_depth) return stop(pos_, "nested deeper than " + std::to_string(rules_.max_depth) + " levels");
    ++pos_;  // '{'
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    open(true);
    const size_t at = depth_ - 1;  // an index: frames_ may move as deeper containers open
    for (bool after_comma = false;; after_comma = true) {
      if (peek() != '"') {
        return stop(pos_, std::string(after_comma ? "a comma must be followed by another member; " : "") +
                              "expected a member name (a string in double quotes), found " + found(pos_));
      }
      const size_t quote = pos_;
      frames_[at].name_begin = frames_[at].name_end = 0;  // an error in the name is the object's
      naming_ = true;
      const bool named = string();
      naming_ = false;
      if (!named || !member_name(quote)) return false;
      skip_space();
      if (peek() != ':') return stop(pos_, "expected ':' after the member name, found " + found(pos_));
      ++pos_;
      skip_space();
      if (!value(depth)) return false;
      skip_space();
      if (peek() == '}') {
        ++pos_;
        close();
        return true;
      }
      if (peek() != ',') return stop(pos_, "expected ',' or '}' after a member, found " + found(pos_));
      ++pos_;
      skip_space();
    }
  }

  bool array(size_t depth) {
    if (depth > rules_.max_depth) return stop(pos_, "nested deeper than " + std::to_string(rules_.max_depth) + " levels");
    ++pos_;  // '['
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    open(false);
    const size_t at = depth_ - 1;  // an index: frames_ may move as deeper containers open
    for (bool after_comma = false;; after_comma = true) {
      if (after_comma && peek() == ']') return stop(pos_, "a comma must be followed by another element, found ']'");
      if (!value(depth)) return false;
      skip_space();
      if (peek() == ']') {
        ++pos_;
        close();
        return true;
      }
      if (peek() != ',') return stop(pos_, "expected ',' or ']' after an element, found " + found(pos_));
      ++pos_;
      ++frames_[at].index;
      skip_space();
    }
  }

  std::string_view text_;
  const JsonRules& rules_;
  size_t pos_ = 0;
  Stop stop_;
  std::vector<Frame> frames_;  ///< frames_[0, depth_) are open; the rest are kept for reuse
  size_t depth_ = 0;
  bool naming_ = false;              ///< reading a member name
  std::deque<std::string> decoded_;  ///< names with escapes, decoded (views into them are kept)
};

}  // namespace

std::string JsonSyntaxError::to_string() const {
  std::string where = "line " + std::to_string(line) + ", column " + std::to_string(column);
  // A grammar error is found by its position alone; one in a well-formed document also by where
  // in the document it is.
  if (kind != JsonErrorKind::SYNTAX) where += ", at " + path;
  return where + ": " + message;
}

std::optional<JsonSyntaxError> json_syntax_error(std::string_view text, const JsonRules& rules) {
  Walk walk(text, rules);
  if (walk.document()) return std::nullopt;
  JsonSyntaxError error;
  error.kind = walk.stopped().kind;
  error.offset = walk.stopped().offset;
  error.path = walk.stopped().path;
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
