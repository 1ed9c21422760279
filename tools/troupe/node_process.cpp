// NodeProcess: posix_spawn with the log file as stdout and stderr, waitpid by pid; and /proc and
// pidfds for processes that are not our children.
#include "tools/troupe/node_process.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

extern char** environ;

namespace troupe::cli {

Result<NodeProcess> NodeProcess::start(const std::vector<std::string>& argv, const std::string& log_path) {
  return spawn(argv, log_path, false);
}

Result<NodeProcess> NodeProcess::start_detached(const std::vector<std::string>& argv,
                                                const std::string& log_path) {
  return spawn(argv, log_path, true);
}

Result<NodeProcess> NodeProcess::spawn(const std::vector<std::string>& argv, const std::string& log_path,
                                       bool detached) {
  if (argv.empty()) return fail(Errc::INVALID_ARGUMENT, "no program to start");
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return fail(Errc::UNAVAILABLE, "cannot open '" + log_path + "': " + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log, 1);
  posix_spawn_file_actions_adddup2(&actions, log, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (detached) {
    // A session of its own: no controlling terminal, so neither a Ctrl-C nor the terminal
    // closing reaches it. Signals the caller ignores or blocks (a shell's background job
    // ignores SIGINT) would stay ignored across exec; the node relies on SIGINT and SIGTERM.
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(log);
  if (rc != 0) return fail(Errc::UNAVAILABLE, "cannot start '" + argv[0] + "': " + std::strerror(rc));
  return NodeProcess(pid, detached);
}

NodeProcess::NodeProcess(NodeProcess&& other) noexcept
    : pid_(other.pid_), status_(other.status_), reaped_(other.reaped_), detached_(other.detached_) {
  other.pid_ = -1;
}

NodeProcess& NodeProcess::operator=(NodeProcess&& other) noexcept {
  if (this != &other) {
    this->~NodeProcess();
    new (this) NodeProcess(std::move(other));
  }
  return *this;
}

NodeProcess::~NodeProcess() {
  if (detached_) {
    running();  // reaps it if it has exited, so no zombie outlives this object
    return;
  }
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
  }
}

bool NodeProcess::running() {
  if (pid_ <= 0 || reaped_) return false;
  if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

uint64_t NodeProcess::peak_rss_bytes() const {
  if (pid_ <= 0 || reaped_) return 0;
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

double NodeProcess::cpu_seconds() const {
  if (pid_ <= 0 || reaped_) return 0;
  std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces: state is
  // field 3, utime and stime are fields 14 and 15.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return double(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string NodeProcess::stop(Duration grace) {
  if (pid_ <= 0) return "not started";
  if (running()) {
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    // The exit is polled: a SIGCHLD handler or pidfd would be shared state in a CLI that may
    // run several nodes; a few milliseconds of latency on stop does not matter.
    while (running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      reaped_ = true;
    }
  }
  return exit_status();
}

std::string NodeProcess::exit_status() {
  if (pid_ <= 0) return "not started";
  if (running()) return "running";
  if (WIFEXITED(status_)) return "exited with " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
  return "ended";
}

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  // The state follows the command name, which is in parentheses and may hold anything.
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

std::vector<std::string> process_command_line(pid_t pid) {
  std::vector<std::string> argv;
  if (pid <= 0) return argv;
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(cmdline, arg, '\0')) argv.push_back(arg);
  return argv;
}

std::vector<pid_t> wait_for_exit(const std::vector<pid_t>& pids, Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // A pidfd turns readable when its process exits, child or not, so the wait is an event.
  // Where pidfd_open is refused (kernels before 5.3, some sandboxes) the pid is polled.
  std::vector<pollfd> watched;
  std::vector<pid_t> watched_pids, polled;
  for (pid_t pid : pids) {
    if (!process_alive(pid)) continue;
    // The raw system call: Debian 12's <sys/pidfd.h> declares pidfd_open without C linkage.
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
      watched.push_back({fd, POLLIN, 0});
      watched_pids.push_back(pid);
    } else if (errno != ESRCH) {
      polled.push_back(pid);
    }
  }
  for (;;) {
    std::erase_if(polled, [](pid_t pid) { return !process_alive(pid); });
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const bool waiting = std::any_of(watched.begin(), watched.end(), [](const pollfd& p) { return p.fd >= 0; });
    if ((!waiting && polled.empty()) || left.count() <= 0) break;
    const auto wait = polled.empty() ? left : std::min(left, std::chrono::milliseconds(10));
    if (::poll(watched.data(), watched.size(), static_cast<int>(wait.count())) < 0 && errno != EINTR) break;
    for (auto& p : watched) {
      if (p.fd >= 0 && p.revents != 0) {
        ::close(p.fd);
        p.fd = -1;  // poll ignores negative descriptors
      }
    }
  }
  std::vector<pid_t> alive = polled;
  for (size_t i = 0; i < watched.size(); ++i) {
    if (watched[i].fd >= 0) {
      ::close(watched[i].fd);
      alive.push_back(watched_pids[i]);
    }
  }
  return alive;
}

std::string executable_directory() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

Result<uint16_t> free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(Errc::UNAVAILABLE, std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int error = errno;
  ::close(fd);
  if (!bound) return fail(Errc::UNAVAILABLE, std::string("no free port on 127.0.0.1: ") + std::strerror(error));
  return static_cast<uint16_t>(ntohs(addr.sin_port));
}

}  // namespace troupe::cli
