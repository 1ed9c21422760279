// Stopping a node process with a signal the way an operator does, and how it ended: in time or
// not, its exit status, what it printed.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>

#include "test/support/child_process.hpp"
#include "test/support/cluster.hpp"

namespace troupe::test {

struct Stopped {
  bool in_time = false;                ///< it exited within the deadline
  std::chrono::milliseconds took{0};   ///< from the signal to the exit seen
  int status = 0;                      ///< its wait status
  std::string output;                  ///< what it wrote after its start (output joined to stdout)

  bool exited_with(int code) const { return in_time && WIFEXITED(status) && WEXITSTATUS(status) == code; }

  /// "exit 0 after 23 ms", "signal 11 after 40 ms", "still running after 2000 ms", then the output.
  std::string describe() const {
    std::string how = !in_time            ? "still running"
                      : WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                            : "exit " + std::to_string(WEXITSTATUS(status));
    return how + " after " + std::to_string(took.count()) + " ms; output:\n" + output;
  }
};

/// Sends `signal` to `child` and waits up to `deadline` for it to exit (polling every 5 ms), then
/// reads what is left of its output. A child still running at the deadline is SIGKILLed.
inline Stopped stop_with(ChildProcess& child, int signal, std::chrono::milliseconds deadline) {
  Stopped stopped;
  const auto start = std::chrono::steady_clock::now();
  child.kill(signal);
  while (still_running(child) && std::chrono::steady_clock::now() - start <= deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stopped.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  stopped.in_time = !still_running(child);
  if (!stopped.in_time) child.kill(SIGKILL);
  stopped.status = child.wait();
  stopped.output = read_output(child, std::chrono::seconds(3));
  return stopped;
}

}  // namespace troupe::test
