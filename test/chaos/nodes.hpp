// The chaos cluster: a scheduler and workers as troupe-node processes on 127.0.0.1, a service
// manager that restarts a node that exits (unless a fault holds it down), faults by pid
// (SIGKILL, SIGSTOP/SIGCONT, SIGTERM), and each node's output kept with the time every line
// was read, so the test can tell when the scheduler said something.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test/chaos/timings.hpp"

namespace troupe::chaos {

/// A port on 127.0.0.1 that is free now and outside the kernel's ephemeral range, so no
/// outgoing connection takes it while a restarted scheduler is between two binds.
uint16_t stable_port();

/// One process of a node. Its stdout and stderr are read by a thread; each line is kept with
/// the time it was read and appended to `log_path` as "TIME_US line".
class NodeProcess {
 public:
  NodeProcess(const std::vector<std::string>& argv, const std::string& log_path);
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;
  /// SIGKILLs it if it still runs, reaps it, and joins the reader.
  ~NodeProcess();

  pid_t pid() const { return pid_; }
  int64_t started_us() const { return started_us_; }
  void signal(int sig) const;

  /// Reaps it if it has exited (without blocking): true once it has.
  bool poll_exit();
  /// Waits up to `timeout` for it to exit; true once it has.
  bool wait_exit(milliseconds timeout);
  /// Its wait status once reaped.
  std::optional<int> status() const;
  /// When it was seen to have exited (0 while running).
  int64_t exited_us() const;

  /// The time of the first line read at or after `since_us` that contains every one of `parts`.
  std::optional<int64_t> find_line(int64_t since_us, const std::vector<std::string>& parts) const;
  /// Its last `n` lines, one per line.
  std::string tail(size_t n) const;
  /// The lines it printed at or after `since_us`.
  std::vector<std::string> lines_since(int64_t since_us) const;
  /// Its lines (with their times) in [from_us, to_us].
  std::vector<std::pair<int64_t, std::string>> lines_between(int64_t from_us, int64_t to_us) const;

 private:
  void read_loop(int fd, std::string log_path);

  pid_t pid_ = -1;
  int64_t started_us_ = 0;
  mutable std::mutex mutex_;
  std::optional<int> status_;
  int64_t exited_us_ = 0;
  std::vector<std::pair<int64_t, std::string>> lines_;
  std::atomic<bool> stop_reading_{false};
  std::thread reader_;
};

/// "exited 0", "killed by signal 9", ...
std::string describe_status(int status);

/// A worker of the chaos cluster.
struct WorkerSpec {
  std::string name;
  uint32_t slots = 4;  ///< on the "default" task list
};

/// An exit the service manager saw: the node was not held by a fault.
struct UnplannedExit {
  std::string node;
  pid_t pid = 0;
  int status = 0;
  int64_t at_us = 0;
  std::string tail;  ///< its last lines
};

/// A scheduler start and when it first answered a client (0: it did not before it went away).
struct SchedulerStart {
  int64_t started_us = 0;
  int64_t served_us = 0;
};

class ChaosCluster {
 public:
  /// Writes DIR/cluster.toml: one scheduler ("scheduler", its data in `data_dir`, relative to
  /// DIR) and `workers`, with `t`'s durations.
  ChaosCluster(const std::string& dir, const Timings& t, std::vector<WorkerSpec> workers,
               const std::string& data_dir = "data");
  ChaosCluster(const ChaosCluster&) = delete;
  ChaosCluster& operator=(const ChaosCluster&) = delete;
  /// stop() if the test did not.
  ~ChaosCluster();

  /// Starts every node (the scheduler first) and the service manager; waits until the
  /// scheduler answers a client and every worker said it registered (60 s at most; throws).
  void start();
  /// Stops the service manager, then every node: workers get SIGTERM (then SIGKILL after 5 s),
  /// then the scheduler. Their output stays readable. Idempotent.
  void stop();

  const std::string& dir() const { return dir_; }
  const std::string& config() const { return config_; }
  uint16_t port() const { return port_; }
  const std::vector<WorkerSpec>& workers() const { return workers_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  /// Keeps the service manager off `name` until release(): a fault owns it meanwhile.
  void hold(const std::string& name);
  void release(const std::string& name);

  /// Sends `sig` to the running process of `name`; the time just before the kill(2), and its pid.
  std::pair<int64_t, pid_t> signal(const std::string& name, int sig);
  /// Waits up to `timeout` for the current process of `name` to exit; its wait status.
  std::optional<int> wait_exit(const std::string& name, milliseconds timeout);
  /// Starts `name` again (its previous process must have exited).
  void restart(const std::string& name);
  /// The pid of the current process of `name` (-1 when none runs).
  pid_t pid(const std::string& name) const;

  /// The earliest time at or after `since_us` at which any process of `node` printed a line
  /// containing every one of `parts`.
  std::optional<int64_t> find_line(const std::string& node, int64_t since_us,
                                   const std::vector<std::string>& parts) const;
  /// The last `n` lines of the current (or last) process of `node`.
  std::string tail(const std::string& node, size_t n) const;
  /// The lines the current (or last) process of `node` printed at or after `since_us`.
  std::vector<std::string> lines_since(const std::string& node, int64_t since_us) const;
  /// At most `limit` lines any process of `node` printed in [from_us, to_us], each "    TIME
  /// line\n".
  std::string lines_between(const std::string& node, int64_t from_us, int64_t to_us,
                            size_t limit = 12) const;

  std::vector<UnplannedExit> unplanned_exits() const;
  std::vector<SchedulerStart> scheduler_starts() const;
  /// How many processes of `name` were started.
  int starts(const std::string& name) const;

 private:
  void start_locked(const std::string& name);
  void supervise();
  void probe();

  std::string dir_;
  Timings timings_;
  std::vector<WorkerSpec> workers_;
  uint16_t port_;
  std::string config_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<std::unique_ptr<NodeProcess>>>
      processes_;  ///< every incarnation
  std::map<std::string, bool> held_;
  std::map<std::string, int64_t>
      exit_seen_us_;                        ///< an unplanned exit waiting for its restart delay
  std::map<std::string, int> quick_exits_;  ///< unplanned exits in a row within 10 s of a start
  std::vector<UnplannedExit> unplanned_;
  std::vector<SchedulerStart> scheduler_starts_;
  bool stopping_ = false;
  std::thread supervisor_;
  std::thread prober_;
};

}  // namespace troupe::chaos
