// A troupe-node child process of the CLI: started with its output in a log file, observed
// through /proc, stopped by pid (SIGTERM, then SIGKILL after a grace). Also the helpers that
// observe and signal a process that is not our child (a node started by an earlier troupe up).
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
  /// Starts `argv` like start(), stdin /dev/null, but in a session of its own (setsid) with the
  /// default handling of SIGINT, SIGTERM and SIGHUP, so it outlives this process and a Ctrl-C
  /// or hang-up of its terminal. The object never kills it: the destructor only reaps it if it
  /// has already exited, and the process is inherited by init when this one exits.
  static Result<NodeProcess> start_detached(const std::vector<std::string>& argv, const std::string& log_path);

  NodeProcess(NodeProcess&& other) noexcept;
  NodeProcess& operator=(NodeProcess&& other) noexcept;
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;
  /// Kills (SIGKILL) and reaps a process still running, unless it was started detached.
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
  /// How it ended ("exited with 3", "killed by signal 9"); "running" while running() is true.
  std::string exit_status();

 private:
  NodeProcess(pid_t pid, bool detached) : pid_(pid), detached_(detached) {}
  static Result<NodeProcess> spawn(const std::vector<std::string>& argv, const std::string& log_path,
                                   bool detached);
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  bool detached_ = false;
};

// --- any process, our child or not ---
// waitpid works only for children, so these look at /proc and signal by pid.

/// True while process `pid` exists and has not exited. A zombie counts as exited: its parent
/// (init, or a shell that does not reap) may leave it in the process table for a while.
bool process_alive(pid_t pid);

/// The argv of process `pid` (from /proc/PID/cmdline); empty when it is gone or is a zombie.
std::vector<std::string> process_command_line(pid_t pid);

/// Waits until none of `pids` is alive or `timeout` has passed (through pidfds, or by polling
/// where the kernel refuses them); returns the ones still alive.
std::vector<pid_t> wait_for_exit(const std::vector<pid_t>& pids, Duration timeout);

/// The directory of the running executable, e.g. to find troupe-node beside troupe.
std::string executable_directory();

/// A TCP port on 127.0.0.1 that was free a moment ago.
Result<uint16_t> free_local_port();

}  // namespace troupe::cli
