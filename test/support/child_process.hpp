// A child process with pipes to its stdin and stdout, for tests that run real binaries.
// The destructor kills (SIGKILL) and reaps a child that is still running, by pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace troupe::test {

class ChildProcess {
 public:
  /// Starts argv[0] (a path) with `argv`; throws std::runtime_error if it cannot.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  /// The next line of the child's stdout without its newline; nullopt at end of output or
  /// when `timeout` passes first.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);

  /// Writes `text` to the child's stdin (all of it; false if the child no longer reads it).
  bool write_stdin(const std::string& text);
  /// Closes the child's stdin, so a child reading it sees end of file.
  void close_stdin();

  /// Sends `signal` to the child.
  void kill(int signal);

  /// Waits for the child to exit; returns its wait status.
  int wait();

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  bool reaped_ = false;
};

}  // namespace troupe::test
