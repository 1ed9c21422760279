// The keeper: a process forked per task that starts the task as its child, tells the supervisor
// how it ended, signals its process group on request, and SIGKILLs that group when the
// supervisor's process is gone or the lease has run out. It is forked from a multithreaded
// process and never execs, so everything it runs is async-signal-safe.
#pragma once

#include <atomic>
#include <cstdint>

namespace troupe::runtime::keeper {

/// One packet on the SOCK_SEQPACKET socket between the supervisor and a keeper.
enum class Kind : int32_t {
  // keeper -> supervisor
  STARTED = 1,    ///< a: the task's pid (also its process group id)
  START_FAILED,   ///< a: the errno of the keeper's failed vfork or pidfd_open; the keeper exits
  EXITED,         ///< a: si_code, b: si_status of the task's exit; it stays unreaped
  LEASE_EXPIRED,  ///< the lease ran out and the task's group was SIGKILLed
  // supervisor -> keeper
  SIGNAL,         ///< a: a signal for the task's group (sent only while the task is unreaped)
  FINISH,         ///< SIGKILL the group, reap the task, exit with 0
  LEASE_CHANGED,  ///< the lease was moved earlier: read it again
};

struct Message {
  Kind kind;
  int32_t a = 0;
  int32_t b = 0;
};

/// What the task's process writes to the status pipe when it cannot exec.
struct ChildFailure {
  int32_t stage;
  int32_t err;
};
enum Stage : int32_t { STAGE_SETUP = 1, STAGE_CHDIR, STAGE_EXEC };

/// Everything the task's process needs, prepared before the keeper is forked.
struct TaskPlan {
  char** argv;
  char** envp;
  const char* cwd;  ///< nullptr: inherit
  int out_fd;       ///< write end of the output pipe
  int status_fd;    ///< write end of the status pipe (close-on-exec)
  int max_fd;       ///< for closing descriptors where close_range is missing
};

struct KeeperPlan {
  TaskPlan task;
  int channel_fd;                        ///< the keeper's end of the socket
  const std::atomic<int64_t>* lease_ns;  ///< CLOCK_MONOTONIC deadline; INT64_MAX: none
  /// The command line's bytes (what /proc/PID/cmdline shows), overwritten in the keeper's
  /// copy so that `ps` tells it from the node. Null: leave it.
  char* title;
  size_t title_size;
};

/// Runs in the forked keeper; never returns. Exit status 0 means it did its job (the task's
/// group was SIGKILLed and the task reaped) or could not start the task (START_FAILED said so).
[[noreturn]] void run(const KeeperPlan& plan);

}  // namespace troupe::runtime::keeper
