// JSON serialisation.
#include "tools/troupe/json.hpp"

#include <cmath>
#include <cstdio>

#include "schema/json_syntax.hpp"

namespace troupe::cli {
namespace {

void quote(std::string& out, const std::string& s) { out += json_quote(s); }

}  // namespace

Json Json::raw(const std::string& text) {
  Raw compact;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      in_string = escaped || c != '"';
      escaped = !escaped && c == '\\';
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      continue;
    } else {
      in_string = c == '"';
    }
    compact.text.push_back(c);
  }
  Json j;
  j.value_ = std::move(compact);
  return j;
}

Json& Json::set(const std::string& key, Json value) {
  auto& object = std::get<Object>(value_);
  for (auto& [k, v] : object) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  object.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  std::get<Array>(value_).push_back(std::move(value));
  return *this;
}

std::string Json::dump() const {
  std::string out;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out += std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          if (!std::isfinite(v)) {
            out += "null";
          } else {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.6g", v);
            out += buf;
          }
        } else if constexpr (std::is_same_v<T, std::string>) {
          quote(out, v);
        } else if constexpr (std::is_same_v<T, Raw>) {
          out += v.text;
        } else if constexpr (std::is_same_v<T, Object>) {
          out.push_back('{');
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out.push_back(',');
            quote(out, v[i].first);
            out.push_back(':');
            out += v[i].second.dump();
          }
          out.push_back('}');
        } else {
          out.push_back('[');
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out.push_back(',');
            out += v[i].dump();
          }
          out.push_back(']');
        }
      },
      value_);
  return out;
}

}  // namespace troupe::cli
