// A small JSON value for benchmark reports and `--json` output: objects keep insertion order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::cli {

class Json {
 public:
  Json() : value_(nullptr) {}
  Json(bool b) : value_(b) {}
  Json(int i) : value_(static_cast<int64_t>(i)) {}
  Json(int64_t i) : value_(i) {}
  Json(uint64_t i) : value_(static_cast<int64_t>(i)) {}
  Json(double d) : value_(d) {}
  Json(const char* s) : value_(std::string(s)) {}
  Json(std::string s) : value_(std::move(s)) {}

  static Json object() { Json j; j.value_ = Object{}; return j; }
  static Json array() { Json j; j.value_ = Array{}; return j; }
  /// A value given as JSON text (a task's result), written out without its whitespace so the
  /// output stays one line; the caller has checked that `text` is one JSON value.
  static Json raw(const std::string& text);

  /// Sets `key` of an object (appending it if new).
  Json& set(const std::string& key, Json value);
  /// Appends to an array.
  Json& push(Json value);

  /// Compact JSON text.
  std::string dump() const;

 private:
  using Object = std::vector<std::pair<std::string, Json>>;
  using Array = std::vector<Json>;
  struct Raw {
    std::string text;
  };
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Object, Array, Raw> value_;
};

}  // namespace troupe::cli
