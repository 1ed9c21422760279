// Finding a test's processes through /proc by an entry of their environment (a unique marker
// that every descendant inherits), and killing what is left of them at the end of a test.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace troupe::test {

inline std::string read_proc_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct ProcessInfo {
  int pid = 0;
  int ppid = 0;
};

/// The live (not zombie) processes whose environment holds exactly `entry` ("NAME=value").
inline std::vector<ProcessInfo> processes_with_env(const std::string& entry) {
  std::vector<ProcessInfo> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string base = "/proc/" + std::to_string(pid);
    const std::string stat = read_proc_file(base + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    char state = '?';
    int ppid = 0;
    fields >> state >> ppid;
    if (state == 'Z' || state == 'X') continue;
    std::istringstream entries(read_proc_file(base + "/environ"));
    for (std::string item; std::getline(entries, item, '\0');) {
      if (item == entry) {
        found.push_back(ProcessInfo{static_cast<int>(pid), ppid});
        break;
      }
    }
  }
  ::closedir(proc);
  return found;
}

/// SIGKILLs the processes processes_with_env(entry) finds, each through a pidfd opened before
/// its environment is checked again, so that no other process is hit. For test cleanup.
inline void kill_processes_with_env(const std::string& entry) {
  for (const auto& p : processes_with_env(entry)) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, p.pid, 0U));
    if (fd < 0) continue;
    bool still = false;
    for (const auto& q : processes_with_env(entry)) still |= q.pid == p.pid;
    if (still) ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0U);
    ::close(fd);
  }
}

/// Whether process `pid` exists and is not a zombie.
inline bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  const std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

/// Kills a task's process group by pid when the test is over, whatever happened, so a task the
/// test left running (its worker was SIGKILLed, say) does not outlive it.
struct ReapTask {
  pid_t pid = 0;
  ~ReapTask() {
    if (pid > 0 && alive(pid)) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  }
};

/// Kills what is left of a test's marked processes when it goes away, whatever the outcome.
struct KillProcessesWithEnv {
  std::string entry;
  ~KillProcessesWithEnv() { kill_processes_with_env(entry); }
};

}  // namespace troupe::test
