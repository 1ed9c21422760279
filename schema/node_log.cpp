#include "schema/node_log.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

#include "schema/duration.hpp"
#include "schema/json_syntax.hpp"

namespace troupe {

Result<LogLevel> parse_log_level(std::string_view text) {
  if (text == "debug") return LogLevel::DEBUG;
  if (text == "info") return LogLevel::INFO;
  if (text == "warn") return LogLevel::WARN;
  if (text == "error") return LogLevel::ERROR;
  return fail(Errc::INVALID_ARGUMENT,
              "bad log level \"" + std::string(text) + "\" (expected debug, info, warn or error)");
}

Result<LogFormat> parse_log_format(std::string_view text) {
  if (text == "text") return LogFormat::TEXT;
  if (text == "json") return LogFormat::JSON;
  return fail(Errc::INVALID_ARGUMENT, "bad log format \"" + std::string(text) + "\" (expected text or json)");
}

std::string_view log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::DEBUG: return "DEBUG";
    case LogLevel::INFO: return "INFO";
    case LogLevel::WARN: return "WARN";
    case LogLevel::ERROR: return "ERROR";
    case LogLevel::OFF: return "OFF";
  }
  return "?";
}

namespace {

/// RFC 3339 in UTC with milliseconds: "2026-11-24T10:15:03.120Z".
void append_time(std::string& out, int64_t time_us) {
  const std::time_t seconds = static_cast<std::time_t>(time_us / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  const int n = std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                              utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                              static_cast<int>((time_us % 1'000'000) / 1000));
  out.append(buffer, static_cast<size_t>(n));
}

template <typename Number>
void append_number(std::string& out, Number n) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, n);
  out.append(buffer, end);
}

bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (char c : s) {
    if (c == ' ' || c == '=' || c == '"' || static_cast<unsigned char>(c) < 0x20) return true;
  }
  return false;
}

void append_text_value(std::string& out, std::string_view s) {
  if (!needs_quotes(s)) {
    out += s;
    return;
  }
  // The same escapes as JSON's, so one reader serves both.
  out += json_quote(s);
}

void append_value(std::string& out, const LogField::Value& value, LogFormat format) {
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::string_view>) {
          if (format == LogFormat::JSON) {
            out += json_quote(v);
          } else {
            append_text_value(out, v);
          }
        } else if constexpr (std::is_same_v<V, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<V, double>) {
          // JSON has no NaN or infinity: such a value is written as text.
          if (std::isfinite(v)) {
            append_number(out, v);
          } else {
            const std::string_view text = std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
            if (format == LogFormat::JSON) {
              out += json_quote(text);
            } else {
              out += text;
            }
          }
        } else {
          append_number(out, v);
        }
      },
      value);
}

}  // namespace

std::string format_log_line(const LogRecord& record, LogFormat format) {
  std::string out;
  out.reserve(160);
  if (format == LogFormat::JSON) {
    out += "{\"time\":\"";
    append_time(out, record.time_us);
    out += "\",\"level\":\"";
    out += log_level_name(record.level);
    out += "\",\"node\":";
    out += json_quote(record.node);
    out += ",\"msg\":";
    out += json_quote(record.message);
    for (const auto& field : record.fields) {
      out += ',';
      out += json_quote(field.key);
      out += ':';
      append_value(out, field.value, format);
    }
    out += "}\n";
    return out;
  }
  append_time(out, record.time_us);
  out += ' ';
  out += log_level_name(record.level);
  out += ' ';
  out += record.node;
  out += ": ";
  out += record.message;
  for (const auto& field : record.fields) {
    out += ' ';
    out += field.key;
    out += '=';
    append_value(out, field.value, format);
  }
  out += '\n';
  return out;
}

// --- reading lines back ----------------------------------------------------------------------

std::optional<std::string> ParsedLogLine::field(std::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return std::nullopt;
}

namespace {

/// Reads a JSON string starting at `s[i] == '"'`; leaves `i` after its closing quote.
std::optional<std::string> read_quoted(std::string_view s, size_t& i) {
  if (i >= s.size() || s[i] != '"') return std::nullopt;
  std::string out;
  for (++i; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      ++i;
      return out;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    switch (s[i]) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        if (i + 4 >= s.size()) return std::nullopt;
        unsigned code = 0;
        auto [end, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 5, code, 16);
        if (ec != std::errc() || end != s.data() + i + 5) return std::nullopt;
        // Lines escape only control characters this way; others pass through as UTF-8.
        if (code < 0x80) out += static_cast<char>(code);
        i += 4;
        break;
      }
      default: out += s[i];
    }
  }
  return std::nullopt;
}

/// A field's value at `s[i]`: quoted (read_quoted), or bare up to the first of `ends` (trailing
/// blanks dropped). Leaves `i` after it.
std::optional<std::string> read_value(std::string_view s, size_t& i, std::string_view ends) {
  if (i < s.size() && s[i] == '"') return read_quoted(s, i);
  const size_t start = i;
  while (i < s.size() && ends.find(s[i]) == std::string_view::npos) ++i;
  std::string value(s.substr(start, i - start));
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

bool is_key(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return !(k[0] >= '0' && k[0] <= '9');
}

std::optional<ParsedLogLine> parse_json_line(std::string_view s) {
  ParsedLogLine line;
  size_t i = 1;
  auto skip_space = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  while (true) {
    skip_space();
    if (i < s.size() && s[i] == '}') break;
    auto key = read_quoted(s, i);
    if (!key) return std::nullopt;
    skip_space();
    if (i >= s.size() || s[i] != ':') return std::nullopt;
    ++i;
    skip_space();
    auto read = read_value(s, i, ",}");
    if (!read) return std::nullopt;
    std::string value = std::move(*read);
    if (*key == "time") {
      line.time = std::move(value);
    } else if (*key == "level") {
      line.level = std::move(value);
    } else if (*key == "node") {
      line.node = std::move(value);
    } else if (*key == "msg") {
      line.message = std::move(value);
    } else {
      line.fields.emplace_back(std::move(*key), std::move(value));
    }
    skip_space();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') break;
    return std::nullopt;
  }
  if (line.time.empty() || line.level.empty()) return std::nullopt;
  return line;
}

std::optional<ParsedLogLine> parse_text_line(std::string_view s) {
  ParsedLogLine line;
  const size_t time_end = s.find(' ');
  if (time_end == std::string_view::npos || time_end < 20 || s[time_end - 1] != 'Z') return std::nullopt;
  line.time = std::string(s.substr(0, time_end));
  const size_t level_end = s.find(' ', time_end + 1);
  if (level_end == std::string_view::npos) return std::nullopt;
  line.level = std::string(s.substr(time_end + 1, level_end - time_end - 1));
  const size_t node_end = s.find(": ", level_end + 1);
  if (node_end == std::string_view::npos) return std::nullopt;
  line.node = std::string(s.substr(level_end + 1, node_end - level_end - 1));
  // The message runs up to the first " key=": messages never hold '='.
  size_t i = node_end + 2;
  size_t fields_start = s.size();
  for (size_t at = s.find('=', i); at != std::string_view::npos; at = s.find('=', at + 1)) {
    const size_t space = s.rfind(' ', at);
    if (space != std::string_view::npos && space >= i && is_key(s.substr(space + 1, at - space - 1))) {
      fields_start = space + 1;
      break;
    }
  }
  line.message = std::string(s.substr(i, fields_start - i));
  while (!line.message.empty() && line.message.back() == ' ') line.message.pop_back();
  i = fields_start;
  while (i < s.size()) {
    const size_t eq = s.find('=', i);
    if (eq == std::string_view::npos) return std::nullopt;
    std::string key(s.substr(i, eq - i));
    i = eq + 1;
    auto value = read_value(s, i, " ");
    if (!value) return std::nullopt;
    line.fields.emplace_back(std::move(key), std::move(*value));
    while (i < s.size() && s[i] == ' ') ++i;
  }
  return line;
}

}  // namespace

std::optional<ParsedLogLine> parse_log_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty()) return std::nullopt;
  return line.front() == '{' ? parse_json_line(line) : parse_text_line(line);
}

// --- the log ---------------------------------------------------------------------------------

/// The lines that wait, and the thread that writes them once `batch_for` has passed since the
/// first of them. Appending takes `mutex` only; writing takes `writing` first, so a line is
/// never held up by a slow write of earlier ones, and batches go out in order.
struct NodeLog::Batch {
  Sink sink;
  std::chrono::milliseconds batch_for{0};
  std::mutex writing;
  std::mutex mutex;
  std::condition_variable wake;
  std::string waiting;
  bool stopping = false;
  std::thread writer;

  void write_waiting() {
    std::lock_guard write_lock(writing);
    std::string lines;
    {
      std::lock_guard lock(mutex);
      lines.swap(waiting);
    }
    if (!lines.empty()) sink(lines);
  }

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || !waiting.empty(); });
      if (stopping) return;
      // Let the batch gather; a stop cuts the wait short.
      wake.wait_for(lock, batch_for, [&] { return stopping; });
      lock.unlock();
      write_waiting();
      lock.lock();
    }
  }
};

namespace {

/// What waits is written at once past this, whatever the level.
constexpr size_t batch_bytes = 64 * 1024;

void write_to_stderr(std::string_view lines) {
  while (!lines.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, lines.data(), lines.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to say it
    lines.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

NodeLog::NodeLog(std::string node, LogLevel level, LogFormat format, std::chrono::milliseconds batch_for)
    : NodeLog(std::move(node), level, format, write_to_stderr, batch_for) {}

NodeLog::NodeLog(std::string node, LogLevel level, LogFormat format, Sink sink, std::chrono::milliseconds batch_for)
    : node_(std::move(node)), level_(level), format_(format), batch_(std::make_unique<Batch>()) {
  batch_->sink = std::move(sink);
  batch_->batch_for = batch_for;
  if (batch_for.count() > 0 && level_ != LogLevel::OFF) {
    // The writer starts with every signal blocked: signals are for the node's own handling (a
    // graceful shutdown on SIGTERM), and one delivered to the writer would take its default
    // action and end the process.
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    batch_->writer = std::thread([b = batch_.get()] { b->run(); });
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
}

NodeLog::~NodeLog() {
  if (batch_->writer.joinable()) {
    {
      std::lock_guard lock(batch_->mutex);
      batch_->stopping = true;
    }
    batch_->wake.notify_one();
    batch_->writer.join();
  }
  batch_->write_waiting();
}

std::shared_ptr<NodeLog> NodeLog::none() {
  return std::make_shared<NodeLog>("", LogLevel::OFF, LogFormat::TEXT, [](std::string_view) {});
}

void NodeLog::write(LogLevel level, std::string_view message, std::span<const LogField> fields) const {
  if (!enabled(level) || level == LogLevel::OFF) return;
  emit(level, message, fields, level >= LogLevel::WARN);
}

void NodeLog::lifecycle(std::string_view message, LogFields fields) const {
  if (level_ == LogLevel::OFF) return;
  emit(LogLevel::INFO, message, std::span<const LogField>(fields.begin(), fields.size()), true);
}

void NodeLog::flush() const { batch_->write_waiting(); }

void NodeLog::emit(LogLevel level, std::string_view message, std::span<const LogField> fields, bool at_once) const {
  const std::string line = format_log_line(LogRecord{wall_clock_us(), level, node_, message, fields}, format_);
  bool first = false;
  {
    std::lock_guard lock(batch_->mutex);
    first = batch_->waiting.empty();
    batch_->waiting += line;
    at_once = at_once || !batch_->writer.joinable() || batch_->waiting.size() >= batch_bytes;
  }
  if (at_once) {
    batch_->write_waiting();
  } else if (first) {
    batch_->wake.notify_one();
  }
}

}  // namespace troupe
