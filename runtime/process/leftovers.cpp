// Task records and the /proc scan that finds and kills what a dead instance left.
#include "runtime/process/leftovers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <system_error>
#include <vector>

namespace troupe::runtime::leftovers {
namespace {

std::string errno_text(int err) { return std::generic_category().message(err); }

/// The whole of a small /proc file; empty when it cannot be read.
std::string slurp(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

/// True when the NUL-separated environment of `pid` holds exactly `entry`.
bool environment_has(int pid, const std::string& entry) {
  const std::string environ_text = slurp("/proc/" + std::to_string(pid) + "/environ");
  size_t at = 0;
  while (at < environ_text.size()) {
    size_t end = environ_text.find('\0', at);
    if (end == std::string::npos) end = environ_text.size();
    if (environ_text.compare(at, end - at, entry) == 0) return true;
    at = end + 1;
  }
  return false;
}

/// A pidfd names one process for as long as it is open, whatever its pid becomes.
class Pidfd {
 public:
  explicit Pidfd(int pid) : fd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U))) {}
  Pidfd(const Pidfd&) = delete;
  Pidfd& operator=(const Pidfd&) = delete;
  ~Pidfd() {
    if (fd_ >= 0) ::close(fd_);
  }
  explicit operator bool() const { return fd_ >= 0; }
  /// False when the process has ended (or was never opened).
  bool signal(int sig) const {
    return fd_ >= 0 && ::syscall(SYS_pidfd_send_signal, fd_, sig, nullptr, 0U) == 0;
  }
  /// Waits up to `timeout_ms` for the process to end.
  void wait_exit(int timeout_ms) const {
    pollfd p{fd_, POLLIN, 0};
    while (fd_ >= 0 && ::poll(&p, 1, timeout_ms) < 0 && errno == EINTR) {
      // nop
    }
  }

 private:
  int fd_;
};

/// Every pid in /proc whose stat says it is in group `pgid` and not a zombie.
std::vector<int> members_of(int pgid) {
  std::vector<int> pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    auto stat = read_stat(static_cast<int>(pid));
    if (stat && stat->pgrp == pgid && stat->state != 'Z' && stat->state != 'X') {
      pids.push_back(static_cast<int>(pid));
    }
  }
  ::closedir(proc);
  return pids;
}

std::string read_boot_id() {
  std::string id = slurp("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

std::string read_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::optional<Record> parse(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  int version = 0;
  Record record;
  if (!(in >> word >> version) || word != "troupe-task-record" || version != 1) return std::nullopt;
  bool boot = false, host = false, agent = false, keeper = false, task = false, mark = false;
  while (in >> word) {
    if (word == "boot") {
      boot = static_cast<bool>(in >> record.boot_id);
    } else if (word == "host") {
      host = static_cast<bool>(in >> record.host);
    } else if (word == "agent") {
      agent = static_cast<bool>(in >> record.agent.pid >> record.agent.start);
    } else if (word == "keeper") {
      keeper = static_cast<bool>(in >> record.keeper.pid >> record.keeper.start);
    } else if (word == "task") {
      task = static_cast<bool>(in >> record.task.pid >> record.task.start);
    } else if (word == "mark") {
      mark = static_cast<bool>(in >> record.mark);
    } else {
      return std::nullopt;
    }
  }
  if (!(boot && host && agent && keeper && task && mark) || record.task.pid <= 0) return std::nullopt;
  return record;
}

/// SIGKILLs `id` if it is still that process (pid and start time, checked through a pidfd).
bool kill_if_same(const ProcessId& id) {
  Pidfd pidfd(id.pid);
  if (!pidfd) return false;
  auto stat = read_stat(id.pid);
  // The pidfd was opened before the stat was read and its process is alive after it, so the
  // stat describes the pidfd's process.
  if (!stat || stat->start != id.start || !pidfd.signal(0)) return false;
  return pidfd.signal(SIGKILL);
}

}  // namespace

std::optional<Stat> read_stat(int pid) {
  const std::string text = slurp("/proc/" + std::to_string(pid) + "/stat");
  // "PID (COMM) STATE PPID PGRP ..." where COMM may hold spaces and parentheses: the fields
  // that follow start after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(text.substr(close + 1));
  Stat stat;
  std::string skip;
  if (!(in >> stat.state >> stat.ppid >> stat.pgrp)) return std::nullopt;
  // Fields 6-21 (session .. itrealvalue), then 22: starttime.
  for (int field = 6; field <= 21; ++field) {
    if (!(in >> skip)) return std::nullopt;
  }
  if (!(in >> stat.start)) return std::nullopt;
  // Fields 23-47, then 48 and 49: arg_start and arg_end (Linux 3.5 and later).
  for (int field = 23; field <= 47; ++field) {
    if (!(in >> skip)) return stat;
  }
  in >> stat.arg_start >> stat.arg_end;
  return stat;
}

bool alive(const ProcessId& id) {
  auto stat = read_stat(id.pid);
  return stat && stat->start == id.start && stat->state != 'Z' && stat->state != 'X';
}

std::string new_mark() {
  unsigned char bytes[16] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // ENOSYS: the address and clock below still make it unique enough
    got += static_cast<size_t>(n);
  }
  if (got < sizeof bytes) {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const uint64_t mix[2] = {static_cast<uint64_t>(now.tv_nsec) ^ static_cast<uint64_t>(::getpid()),
                             static_cast<uint64_t>(now.tv_sec)};
    std::memcpy(bytes, mix, sizeof bytes);
  }
  std::string mark = std::string(mark_name) + "=";
  static constexpr char hex[] = "0123456789abcdef";
  for (unsigned char b : bytes) {
    mark += hex[b >> 4];
    mark += hex[b & 15];
  }
  return mark;
}

size_t kill_group_if_ours(int pgid, uint64_t leader_start, const std::string& mark) {
  std::set<int> killed;
  // A member that was forking when the group was killed is caught by the next round.
  for (int round = 0; round < 8; ++round) {
    const std::vector<int> pids = members_of(pgid);
    if (pids.empty()) break;
    std::vector<std::unique_ptr<Pidfd>> members;
    bool anchored = false;
    for (int pid : pids) {
      auto pidfd = std::make_unique<Pidfd>(pid);
      if (!*pidfd) continue;
      auto stat = read_stat(pid);
      if (!stat || stat->pgrp != pgid) continue;
      // SIGSTOP through the pidfd: it succeeds only if the process the stat described is still
      // alive, and a stopped process stays in the group until the SIGKILL below.
      if (!anchored && ((pid == pgid && stat->start == leader_start) || environment_has(pid, mark))) {
        anchored = pidfd->signal(SIGSTOP);
      }
      members.push_back(std::move(pidfd));
    }
    if (!anchored) break;  // nothing provably the task's is left: leave the rest alone
    ::kill(-pgid, SIGKILL);
    // Let them go before looking again, so that the dying are not counted twice.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (const auto& member : members) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      member->wait_exit(static_cast<int>(std::max<int64_t>(left.count(), 0)));
    }
    killed.insert(pids.begin(), pids.end());
  }
  return killed.size();
}

Result<Records> Records::open(std::string dir) {
  Records records;
  records.dir_ = std::move(dir);
  std::error_code ec;
  std::filesystem::create_directories(records.dir_, ec);
  if (ec) {
    return fail(Errc::UNAVAILABLE, "cannot create the directory of running task records '" + records.dir_ +
                                       "': " + ec.message());
  }
  auto self = read_stat(::getpid());
  if (!self) {
    return fail(Errc::UNAVAILABLE,
                "cannot read /proc/self/stat: /proc must be mounted so that a restarted node can tell its "
                "earlier instance's task processes from others");
  }
  records.self_ = ProcessId{::getpid(), self->start};
  records.boot_id_ = read_boot_id();
  records.host_ = read_host();
  if (records.boot_id_.empty()) records.boot_id_ = "unknown";
  return records;
}

Result<std::string> Records::write(const ProcessId& keeper, const ProcessId& task, const std::string& mark) const {
  const std::string path = dir_ + "/" + std::to_string(self_.pid) + "." + std::to_string(self_.start) + "." +
                           std::to_string(task.pid) + ".task";
  std::ostringstream text;
  text << "troupe-task-record 1\nboot " << boot_id_ << "\nhost " << host_ << "\nagent " << self_.pid << " "
       << self_.start << "\nkeeper " << keeper.pid << " " << keeper.start << "\ntask " << task.pid << " "
       << task.start << "\nmark " << mark << "\n";
  const std::string content = text.str();
  // No fsync: after a crash of the machine the boot id differs and the record is moot.
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT) {
    // Removed while the node ran (a clean-up of the log directory): make it again.
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  }
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    const char* data = content.data();
    size_t left = content.size();
    while (left > 0 && err == 0) {
      const ssize_t n = ::write(fd, data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) err = errno;
      if (n > 0) {
        data += n;
        left -= static_cast<size_t>(n);
      }
    }
    if (::close(fd) != 0 && err == 0) err = errno;
  }
  if (err != 0) {
    ::unlink(path.c_str());
    return fail(Errc::UNAVAILABLE, "cannot write the running task record '" + path + "': " + errno_text(err));
  }
  return path;
}

size_t Records::kill_leftovers() const {
  size_t killed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".task") continue;  // not ours to judge
    auto record = parse(slurp(path));
    if (!record) {
      // Cut short by a crash while it was written: its keeper was alive then and saw to it.
      ::unlink(path.c_str());
      continue;
    }
    if (record->boot_id != boot_id_) {
      if (record->host == host_) ::unlink(path.c_str());  // an earlier boot: nothing of it runs
      continue;                                           // another host's, sharing the directory
    }
    if (alive(record->agent)) continue;  // an instance still running (perhaps frozen) keeps its own
    killed += kill_group_if_ours(record->task.pid, record->task.start, record->mark);
    // A keeper that is frozen (it cannot act on its lifeline) goes too.
    kill_if_same(record->keeper);
    ::unlink(path.c_str());
  }
  return killed;
}

}  // namespace troupe::runtime::leftovers
