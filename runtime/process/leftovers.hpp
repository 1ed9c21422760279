// Leftovers: what a task left running when its keeper could not stop it (the keeper was
// SIGKILLed too, or frozen). A record per running task, in a directory of the node, names the
// processes by pid and start time and the task's environment marker, so that a later instance
// kills exactly what is provably that task's and never a process that reused an id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "schema/result.hpp"

namespace troupe::runtime::leftovers {

/// A process as /proc shows it: its pid and its start time (clock ticks after boot), which
/// together name one process for the life of the boot.
struct ProcessId {
  int pid = 0;
  uint64_t start = 0;
};

/// Fields of /proc/PID/stat; nullopt when the process is gone (or /proc unreadable).
struct Stat {
  char state = '?';
  int ppid = 0;
  int pgrp = 0;
  uint64_t start = 0;
  /// Where its command line lies in its memory (0 unless it is this process, or one we may
  /// trace).
  uint64_t arg_start = 0;
  uint64_t arg_end = 0;
};
std::optional<Stat> read_stat(int pid);

/// True while `id` names a live (not zombie) process.
bool alive(const ProcessId& id);

/// The environment entry that marks a task's processes: "TROUPE_PROCESS_MARK=<32 hex digits>",
/// random per task. Descendants inherit it unless they replace their environment.
std::string new_mark();
inline constexpr const char* mark_name = "TROUPE_PROCESS_MARK";

/// SIGKILLs process group `pgid` if it is provably the task's: some member either is the
/// leader (pid == pgid) with the task's start time, or carries `mark` in its environment. That
/// member is stopped (through a pidfd, so the check and the signal are about the same process)
/// before the group is killed, so the group cannot have changed hands in between. Waits (up to a
/// second) for them to exit. Returns how many processes it killed (0: nothing of the task's
/// was found).
size_t kill_group_if_ours(int pgid, uint64_t leader_start, const std::string& mark);

/// The record of one running task.
struct Record {
  std::string boot_id;  ///< /proc/sys/kernel/random/boot_id: start times count from this boot
  std::string host;
  ProcessId agent;   ///< the process that ran the supervisor
  ProcessId keeper;
  ProcessId task;    ///< also the process group id
  std::string mark;  ///< the environment entry
};

/// The records of one process: its identity and the directory, created if missing.
class Records {
 public:
  /// UNAVAILABLE (naming the directory) when it cannot be created, or /proc cannot tell this
  /// process's start time.
  static Result<Records> open(std::string dir);

  const std::string& dir() const { return dir_; }
  const ProcessId& self() const { return self_; }

  /// Writes the record of a task just started; returns its path. UNAVAILABLE when the file
  /// cannot be written (a full disk), with the reason.
  Result<std::string> write(const ProcessId& keeper, const ProcessId& task, const std::string& mark) const;

  /// Kills what the records of dead processes name, and removes those records (and those of
  /// an earlier boot of this host). Records of live processes (another instance sharing the
  /// directory) are left alone. Returns the number of processes killed.
  size_t kill_leftovers() const;

 private:
  std::string dir_;
  ProcessId self_;
  std::string boot_id_;
  std::string host_;
};

}  // namespace troupe::runtime::leftovers
