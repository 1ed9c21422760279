// A node's log: one line per thing that happened (a workflow started or closed, a worker's
// status changed, a failover), each with a level, a fixed message and fields that carry the ids
// and figures. Two formats: text for people (`2026-11-24T10:15:03.120Z INFO scheduler-1:
// workflow closed workflow=order-42 state=SUCCESS`) and JSON lines for log shippers. Std-only, so
// every layer may log; a node builds one NodeLog from its config and hands it down (no globals).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "schema/result.hpp"

namespace troupe {

/// How much a node logs: every line at its level or above. OFF logs nothing.
enum class LogLevel : uint8_t { DEBUG, INFO, WARN, ERROR, OFF };
enum class LogFormat : uint8_t { TEXT, JSON };

/// "debug", "info", "warn" or "error" (as the config writes them); INVALID_ARGUMENT naming the
/// accepted values otherwise.
Result<LogLevel> parse_log_level(std::string_view text);
/// "text" or "json"; INVALID_ARGUMENT naming the accepted values otherwise.
Result<LogFormat> parse_log_format(std::string_view text);
/// "DEBUG", "INFO", "WARN", "ERROR", "OFF": how a line names its level.
std::string_view log_level_name(LogLevel level);

/// One field of a line: a key ([a-z_][a-z0-9_]*) and a string, integer, number or boolean. It
/// refers to the caller's values, which outlive the call that writes the line.
struct LogField {
  using Value = std::variant<std::string_view, int64_t, uint64_t, double, bool>;

  LogField(std::string_view key, std::string_view v) : key(key), value(v) {}
  LogField(std::string_view key, const std::string& v) : key(key), value(std::string_view(v)) {}
  LogField(std::string_view key, const char* v) : key(key), value(std::string_view(v ? v : "")) {}
  LogField(std::string_view key, bool v) : key(key), value(v) {}
  LogField(std::string_view key, double v) : key(key), value(v) {}
  template <typename Int>
    requires std::is_integral_v<Int>
  LogField(std::string_view key, Int v) : key(key) {
    if constexpr (std::is_signed_v<Int>) {
      value = static_cast<int64_t>(v);
    } else {
      value = static_cast<uint64_t>(v);
    }
  }

  std::string_view key;
  Value value;
};

using LogFields = std::initializer_list<LogField>;

/// What a line says, before it is formatted.
struct LogRecord {
  int64_t time_us = 0;  ///< microseconds since the Unix epoch
  LogLevel level = LogLevel::INFO;
  std::string_view node;
  std::string_view message;  ///< fixed words, no '=': what varies goes in the fields
  std::span<const LogField> fields;
};

/// `record` as one line, ending in '\n'. Text: `TIME LEVEL NODE: MESSAGE key=value ...`, a value
/// quoted (with \" \\ \n escapes) when it is empty or holds a space, '=', '"' or a control
/// character. JSON: `{"time":..,"level":..,"node":..,"msg":..,key:value...}`, numbers as numbers.
std::string format_log_line(const LogRecord& record, LogFormat format);

/// A line read back (tools and tests look for what a node said): its parts as text, numbers
/// included. Either format.
struct ParsedLogLine {
  std::string time;
  std::string level;
  std::string node;
  std::string message;
  std::vector<std::pair<std::string, std::string>> fields;

  /// The field's value, if the line has it.
  std::optional<std::string> field(std::string_view key) const;
};

/// Parses one line (without or with its '\n') in either format; nullopt if it is not a log line.
std::optional<ParsedLogLine> parse_log_line(std::string_view line);

/// A node's log. INFO and DEBUG lines wait up to `batch_for` to be written together: a busy
/// scheduler logs two lines per workflow, and one write(2) per line cost CHAIN 4% of its
/// throughput. WARN and ERROR lines, a node's start and stop, and anything once 64 KiB wait,
/// are written at once with whatever waited before them, so what explains a failure is out
/// before the failure stops the node (glog buffers INFO the same way).
class NodeLog {
 public:
  /// Where finished lines go, whole lines in the order they were logged, one call at a time.
  using Sink = std::function<void(std::string_view lines)>;

  /// Writes to standard error, where `troupe up` and service managers collect a node's output.
  NodeLog(std::string node, LogLevel level, LogFormat format,
          std::chrono::milliseconds batch_for = std::chrono::milliseconds(100));
  /// Writes to `sink`; `batch_for` 0 writes each line at once.
  NodeLog(std::string node, LogLevel level, LogFormat format, Sink sink,
          std::chrono::milliseconds batch_for = std::chrono::milliseconds(0));
  /// Writes what waits.
  ~NodeLog();
  NodeLog(const NodeLog&) = delete;
  NodeLog& operator=(const NodeLog&) = delete;

  /// A log that writes nothing: for actors a test spawns without one.
  static std::shared_ptr<NodeLog> none();

  bool enabled(LogLevel level) const { return level >= level_; }
  LogFormat format() const { return format_; }
  const std::string& node() const { return node_; }

  void write(LogLevel level, std::string_view message, std::span<const LogField> fields) const;
  void write(LogLevel level, std::string_view message, LogFields fields = {}) const {
    write(level, message, std::span<const LogField>(fields.begin(), fields.size()));
  }
  void debug(std::string_view message, LogFields fields = {}) const { write(LogLevel::DEBUG, message, fields); }
  void info(std::string_view message, LogFields fields = {}) const { write(LogLevel::INFO, message, fields); }
  void warn(std::string_view message, LogFields fields = {}) const { write(LogLevel::WARN, message, fields); }
  void error(std::string_view message, LogFields fields = {}) const { write(LogLevel::ERROR, message, fields); }
  /// An INFO line written whatever the level (but OFF): a node's start and stop, which tools
  /// and operators wait for.
  void lifecycle(std::string_view message, LogFields fields = {}) const;
  /// Writes the lines that wait, now.
  void flush() const;

 private:
  void emit(LogLevel level, std::string_view message, std::span<const LogField> fields, bool at_once) const;

  struct Batch;
  std::string node_;
  LogLevel level_;
  LogFormat format_;
  std::unique_ptr<Batch> batch_;
};

/// The log of whatever holds `log`, or one that writes nothing: callers need not check.
inline const NodeLog& log_or_none(const std::shared_ptr<NodeLog>& log) {
  static const std::shared_ptr<NodeLog> none = NodeLog::none();
  return log ? *log : *none;
}

}  // namespace troupe
