// A troupe-node child process of the CLI: started with its output in a log file, observed
// through /proc, stopped by pid (SIGTERM, then SIGKILL after a grace).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "schema/duration.hpp"
#include "schema/result.hpp"

namespace troupe::cli {

class NodeProcess {
 public:
  /// Starts `argv` (argv[0] a path) with stdout and stderr appended to `log_path`.
  static Result<NodeProcess> start(const std::vector<std::string>& argv, const std::string& log_path);

  NodeProcess(NodeProcess&& other) noexcept;
  NodeProcess& operator=(NodeProcess&& other) noexcept;
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;
  /// Kills (SIGKILL) and reaps a process still running.
  ~NodeProcess();

  pid_t pid() const { return pid_; }
  /// True while the process has not exited.
  bool running();
  /// Its peak resident set size (VmHWM) in bytes; 0 once it has exited.
  uint64_t peak_rss_bytes() const;
  /// CPU time it has used so far (user + system, all threads), in seconds; 0 once it has exited.
  double cpu_seconds() const;
  /// SIGTERM, then SIGKILL if it has not exited after `grace`; its exit status text
  /// ("exited with 0", "killed by signal 9").
  std::string stop(Duration grace);

 private:
  explicit NodeProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

/// The directory of the running executable, e.g. to find troupe-node beside troupe.
std::string executable_directory();

/// A TCP port on 127.0.0.1 that was free a moment ago.
Result<uint16_t> free_local_port();

}  // namespace troupe::cli
