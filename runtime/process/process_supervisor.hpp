// The process supervisor: runs shell tasks in their own process groups, each under a keeper
// process that kills the group when the supervisor's process ends or its lease runs out; copies
// their output to a capped log file, reports each exit once, and cancels by signal.
// std + POSIX (Linux >= 5.3 for pidfds); one thread, no signal handlers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "schema/duration.hpp"
#include "schema/result.hpp"

namespace troupe::runtime {

/// What to run and where its output goes.
struct ProcessSpec {
  /// The program and its arguments. argv[0] is looked up in PATH unless it contains a '/'
  /// (execvp semantics), using the PATH of the child's environment (so `env` may set it).
  std::vector<std::string> argv;
  /// "NAME=value" entries added to, or overriding, the environment the supervisor started with.
  std::vector<std::string> env;
  /// Working directory of the child. Default: empty, the supervisor's working directory.
  std::string cwd;
  /// The log file: stdout and stderr, interleaved in the order written. Created (with its
  /// parent directories) or truncated, mode 0644 before the umask. Required.
  std::string log_path;
  /// At most this many bytes of output go to the log; the rest is read and dropped, so the
  /// child never blocks on a full pipe, and one final line says how many bytes were dropped.
  /// Default: 16 MiB.
  uint64_t log_cap_bytes = uint64_t{16} << 20;
};

/// How a process ended, and what happened to its output.
struct ProcessExit {
  int pid = 0;                 ///< the process id it had (also its process group id)
  int exit_code = -1;          ///< its exit status when it exited normally, else -1
  int signal = 0;              ///< the signal that killed it, else 0
  bool cancelled = false;      ///< terminate() reached it before it ended
  bool lease_expired = false;  ///< the lease ran out while it ran, and its group was SIGKILLed
  uint64_t log_bytes = 0;      ///< bytes of its output written to the log (markers excluded)
  uint64_t dropped_bytes = 0;  ///< bytes of its output beyond the cap, read and dropped
  bool log_truncated = false;  ///< dropped_bytes > 0
  /// Empty, or what went wrong writing or closing the log ("write to 'x.log' failed: No
  /// space left on device"); output after such an error is dropped and not counted.
  std::string log_error;

  /// True when it exited with status 0.
  bool success() const { return exit_code == 0 && signal == 0; }

  /// "exited with 0", "exited with 3", "killed by SIGKILL", "killed by SIGTERM (cancelled)",
  /// "killed by SIGKILL (the lease ran out)".
  std::string describe() const;
};

/// Supervisor-wide settings.
struct SupervisorOptions {
  /// How long the output pipe may stay open after the process itself exited (a background
  /// grandchild still holding it). After that the rest of the process group is killed, what
  /// is buffered is copied, and the exit is reported. Default: 100ms.
  Duration drain_window = std::chrono::milliseconds(100);
  /// A directory for a record of each running process (its keeper's and its own pid and start
  /// time, and its marker), removed when it is reported. start() kills what the records of a
  /// dead process name: what a previous instance left when its keepers could not act (they were
  /// SIGKILLed too, or frozen). Records of a live process (another instance using the same
  /// directory) are left alone. Give each node one that outlives it, on local disk.
  /// Default: empty, no records.
  std::string record_dir;
};

/// Runs processes and reports their exits. Each process is the child of a keeper process of its
/// own, forked from the supervisor (see keeper.hpp); one supervisor thread watches every
/// keeper's socket and pidfd and every output pipe (epoll); nothing polls or sleeps, and no
/// signal handler is installed.
///
/// Guarantees:
/// - Each child runs in its own process group (pgid = pid), with stdin from /dev/null,
///   stdout and stderr to one pipe, default signal dispositions, an empty signal mask and no
///   inherited file descriptors besides 0, 1 and 2. Its environment carries
///   TROUPE_PROCESS_MARK=<random>, which its descendants inherit.
/// - When a process has ended, the rest of its process group is killed (SIGKILL) before its
///   exit is reported: a task leaves nothing behind in its group. A program that must outlive
///   its task has to leave the group (setsid).
/// - No process group outlives the supervisor's process: when that process ends, however it
///   ends (kill -9 included), each keeper sees its socket close and SIGKILLs its group at once.
///   A keeper that dies itself takes its child with it (PR_SET_PDEATHSIG); the rest of that
///   group is killed by the supervisor, or by the next instance through the records
///   (SupervisorOptions::record_dir).
/// - Once extend_lease() has been called, no process group runs past the lease: each keeper
///   SIGKILLs its group when the deadline passes without an extension, even while the
///   supervisor's process is frozen (SIGSTOP) and cannot act.
/// - Signals go to a group only while its leader is unreaped, so they can never reach a
///   process that reused the id.
/// - Every descriptor the supervisor creates is close-on-exec, so processes started by other
///   threads at the same time do not inherit them.
///
/// Nobody else in the process may reap the supervisor's children (no waitpid(-1, ...), no
/// SIGCHLD set to SIG_IGN); a keeper reaped elsewhere counts as lost.
class ProcessSupervisor {
 public:
  using Id = uint64_t;

  /// Kills what a dead previous instance left (see SupervisorOptions::record_dir), then starts
  /// the supervisor thread. UNAVAILABLE when the kernel lacks pidfd_open (Linux < 5.3) or the
  /// record directory cannot be created; OVERLOADED when descriptors or threads run out.
  static Result<std::unique_ptr<ProcessSupervisor>> start(SupervisorOptions options = {});

  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  /// SIGKILLs every remaining process group, reaps the processes and joins the thread.
  /// on_exit is not called for them, and no on_exit runs after the destructor returns. Must
  /// not be called from an on_exit callback.
  ~ProcessSupervisor();

  /// Starts `spec` and returns its id once the program has been executed (it waits for the
  /// exec, never for the process). `on_exit` then runs exactly once, on the supervisor thread,
  /// when the process has exited and its output has reached end-of-file (or the drain window
  /// passed), after the log is flushed and closed. on_exit must not block for long (it delays
  /// every other report) and must not throw; it may call spawn() and terminate().
  ///
  /// Errors, each naming the program: INVALID_ARGUMENT (empty argv or log_path, an env entry
  /// without '=', a program that cannot be executed, a cwd that is not a directory),
  /// NOT_FOUND (no such program or cwd), OVERLOADED (out of processes or descriptors; retry
  /// later), UNAVAILABLE (the log file, or the record in record_dir, cannot be written: a
  /// process no later instance could find is not started). Any thread may call it.
  Result<Id> spawn(ProcessSpec spec, std::function<void(ProcessExit)> on_exit);

  /// Sends SIGTERM (then SIGCONT, so a stopped group sees it) to the process group of `id`,
  /// and SIGKILL after `grace` if the process has not exited by then; a zero or negative grace
  /// sends SIGKILL at once, and a grace beyond a year counts as a year. Idempotent: a second call
  /// only brings the SIGKILL forward if its grace ends earlier. An unknown or already-ended id is
  /// ignored. Any thread may call it; the signals are sent by the supervisor thread right away.
  void terminate(Id id, Duration grace);

  /// Processes spawned whose on_exit has not been called yet.
  size_t running() const;

  /// The lease now ends at `deadline` (std::chrono::steady_clock is CLOCK_MONOTONIC on Linux),
  /// earlier or later than before: from then on every process group, running or spawned later,
  /// is SIGKILLed by its keeper once the deadline passes, and reported with lease_expired. Until
  /// the first call there is no lease and processes run unbounded (a worker extends its lease
  /// when it registers, before it is given any task). Any thread; lock-free. Moving the deadline
  /// later costs the keepers nothing; moving it earlier wakes each one through the supervisor
  /// thread.
  void extend_lease(std::chrono::steady_clock::time_point deadline);

  /// How many processes start() killed that a previous instance had left running.
  size_t leftovers_killed() const;

 private:
  struct Impl;
  explicit ProcessSupervisor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe::runtime
