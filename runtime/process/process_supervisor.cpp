// The process supervisor: a keeper process forked per task (keeper.hpp) that starts the task,
// a close-on-exec status pipe for exec errors, and one epoll thread over every keeper's socket
// and pidfd and every output pipe, plus an eventfd for requests from other threads.
//
// Why a keeper per task: the task's process group must die with the node however the node
// ends, and when its lease runs out even if the node is frozen. A keeper is a process of its
// own, so it acts while the node is SIGKILLed or SIGSTOPped; as the task's parent it holds the
// task unreaped, so it may signal the group without ever reaching a process that reused the id.
// The alternatives fall short: cgroup v2's cgroup.kill needs a delegated cgroup, which
// containers and CI seldom give; PR_SET_PDEATHSIG alone kills the task's leader but not the
// rest of its group, follows the forking thread rather than the process, and cannot enforce a
// lease; a subreaper is the node itself, so it dies with it.
#include "runtime/process/process_supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "runtime/process/keeper.hpp"
#include "runtime/process/lease.hpp"
#include "runtime/process/leftovers.hpp"

namespace troupe::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// glibc 2.36's <sys/pidfd.h> lacks extern "C" (fixed in 2.37), so call the kernel directly.
// The descriptor is always close-on-exec.
int open_pidfd(int pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U)); }

std::string errno_text(int err) { return std::generic_category().message(err); }

/// The Errc for a failed system call: resource exhaustion can be retried later.
Errc errno_code(int err, Errc otherwise) {
  switch (err) {
    case EAGAIN:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOSPC:
    case EDQUOT:
      return Errc::OVERLOADED;
    default:
      return otherwise;
  }
}

/// A bug in this file (a system call failing in a way its arguments rule out): there is no
/// caller to report it to on the supervisor thread.
[[noreturn]] void die(const char* what, int err) {
  std::fprintf(stderr, "troupe process supervisor: %s failed: %s\n", what, errno_text(err).c_str());
  std::abort();
}

/// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~Fd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  /// Closes and returns close()'s errno, 0 when it succeeded.
  int close() {
    int err = 0;
    if (fd_ >= 0 && ::close(fd_) != 0) err = errno;
    fd_ = -1;
    return err;
  }

 private:
  int fd_ = -1;
};

/// Writes all of `data`; returns 0 or the errno of the failed write.
int write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

/// Sends a packet to a keeper; false when it is gone (its end of the socket closed).
bool tell(const Fd& channel, keeper::Kind kind, int32_t a = 0) {
  if (!channel) return false;
  keeper::Message message{kind, a, 0};
  for (;;) {
    if (::send(channel.get(), &message, sizeof message, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) return true;
    if (errno != EINTR) return false;
  }
}

std::string signal_name(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

/// `now + d`, with `d` capped at a year so that Duration::max() means "never" without overflow.
Clock::time_point after(Clock::time_point now, Duration d) {
  return now + std::min<Duration>(d, std::chrono::hours(24 * 365));
}

constexpr size_t read_chunk = 64 * 1024;
constexpr int reads_per_wakeup = 16;  // fairness: at most 1 MiB per child per wakeup
/// How long the destructor waits for a keeper to finish before it kills the keeper itself.
constexpr auto keeper_finish_limit = std::chrono::seconds(2);

/// A running child and its keeper. Owned by the spawning thread until handed to the supervisor
/// thread.
struct Child {
  ProcessSupervisor::Id id = 0;
  uint64_t lease_moves_seen = 0;  // Impl::lease_moves before the keeper was forked
  int pid = 0;  // the task's process, also its group id
  uint64_t start = 0;  // its start time, for recognising it by /proc
  std::string mark;
  int keeper_pid = 0;
  Fd keeper_pidfd;
  Fd channel;  // our end of the keeper's socket; empty once the keeper closed it
  Fd pipe;     // read end of the output pipe; empty once at end-of-file or abandoned
  Fd log;
  std::string log_path;
  std::string record_path;  // empty: no record
  uint64_t cap = 0;
  std::function<void(ProcessExit)> on_exit;

  uint64_t written = 0;
  uint64_t dropped = 0;
  char last_byte = '\n';
  std::string log_error;

  bool exited = false;        // its exit was told (it is a zombie until the keeper finishes)
  bool finish_sent = false;   // the keeper was told to kill the group, reap and exit
  bool keeper_ended = false;  // the keeper has exited and been reaped
  bool lease_expired = false;
  int exit_code = -1;
  int signal = 0;
  bool cancelled = false;
  bool term_sent = false;
  bool kill_sent = false;
  std::optional<Clock::time_point> kill_at;      // SIGKILL the group then, unless exited
  std::optional<Clock::time_point> drain_until;  // exited: stop waiting for end-of-file then

  /// Signals the group through the keeper, which holds the leader unreaped meanwhile.
  void signal_group(int sig) const {
    if (!finish_sent) tell(channel, keeper::Kind::SIGNAL, sig);
  }

  void append_log(const char* data, size_t size) {
    if (!log || !log_error.empty()) return;
    uint64_t room = written < cap ? cap - written : 0;
    size_t keep = static_cast<size_t>(std::min<uint64_t>(room, size));
    if (keep > 0) {
      if (int err = write_all(log.get(), data, keep); err != 0) {
        log_error = "write to '" + log_path + "' failed: " + errno_text(err);
        return;
      }
      written += keep;
      last_byte = data[keep - 1];
    }
    dropped += size - keep;
  }

  /// A line of our own in the log, outside the cap.
  void append_notice(const std::string& text) {
    if (!log || !log_error.empty()) return;
    std::string line = (written > 0 && last_byte != '\n' ? "\n" : "") + text + "\n";
    if (int err = write_all(log.get(), line.data(), line.size()); err != 0) {
      log_error = "write to '" + log_path + "' failed: " + errno_text(err);
      return;
    }
    last_byte = '\n';
  }
};

/// Makes a keeper end: closing our end of its socket is its signal to SIGKILL the group, reap
/// the task and exit. A keeper that does not exit in time (stopped by someone) is killed, and
/// what is provably the task's with it. Then reaps the keeper. For paths that report nothing.
void end_keeper(Child& child) {
  child.channel.reset();
  if (child.keeper_ended) return;
  int ready = 1;
  if (child.keeper_pidfd) {
    pollfd p{child.keeper_pidfd.get(), POLLIN, 0};
    const int limit_ms = static_cast<int>(std::chrono::milliseconds(keeper_finish_limit).count());
    while ((ready = ::poll(&p, 1, limit_ms)) < 0 && errno == EINTR) {
      // nop
    }
  }
  if (ready == 0) {
    ::kill(child.keeper_pid, SIGKILL);  // unreaped: the pid is still the keeper's
    if (child.pid > 0) leftovers::kill_group_if_ours(child.pid, child.start, child.mark);
  }
  while (::waitpid(child.keeper_pid, nullptr, 0) < 0 && errno == EINTR) {
    // nop
  }
  child.keeper_ended = true;
}

}  // namespace

std::string ProcessExit::describe() const {
  std::string text;
  if (signal != 0) {
    text = "killed by " + signal_name(signal);
  } else if (exit_code >= 0) {
    text = "exited with " + std::to_string(exit_code);
  } else {
    text = "ended with an unknown status (its keeper process was killed)";
  }
  if (lease_expired) text += " (the lease ran out)";
  if (cancelled) text += " (cancelled)";
  return text;
}

struct ProcessSupervisor::Impl {
  SupervisorOptions options;
  std::vector<std::string> base_env;  // the environment at start()
  int max_fd = 1024;
  std::unique_ptr<Lease> lease;
  char* title = nullptr;  // this process's command line, for the keepers to overwrite
  size_t title_size = 0;
  std::optional<leftovers::Records> records;
  size_t leftovers_killed = 0;
  Fd epoll;
  Fd wake;  // eventfd
  std::thread thread;
  std::atomic<size_t> running{0};
  /// How often the lease was moved earlier. Every keeper is told (a keeper reads the lease only
  /// when it wakes); one forked while the count moved is told when it is taken in.
  std::atomic<uint64_t> lease_moves{0};

  std::mutex mutex;
  // Guarded by mutex: requests for the supervisor thread.
  Id next_id = 1;
  std::vector<std::unique_ptr<Child>> incoming;
  std::vector<std::pair<Id, Duration>> terminations;
  bool stopping = false;

  // Supervisor thread only.
  std::unordered_map<Id, std::unique_ptr<Child>> children;
  std::vector<char> buffer = std::vector<char>(read_chunk);
  uint64_t lease_moves_told = 0;

  static constexpr uint64_t wake_tag = 0;
  enum Source : uint64_t { PIPE = 0, CHANNEL = 1, KEEPER = 2 };
  static uint64_t tag(Id id, Source source) { return (id << 2) | source; }

  void notify() {
    uint64_t one = 1;
    // EAGAIN only when the counter is saturated, which still wakes the loop.
    [[maybe_unused]] ssize_t n = ::write(wake.get(), &one, sizeof one);
  }

  void unwatch(const Fd& fd) {
    if (fd) ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, fd.get(), nullptr);
  }

  // ---- supervisor thread ---------------------------------------------------------------

  void loop() {
    std::vector<epoll_event> events(64);
    std::vector<std::unique_ptr<Child>> finished;
    for (;;) {
      int n =
          ::epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), timeout_ms());
      if (n < 0) {
        if (errno == EINTR) continue;
        die("epoll_wait", errno);
      }
      // Consume the wakeup before taking the requests: a request queued after this read
      // signals the eventfd again, so none is left waiting.
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == wake_tag) {
          uint64_t count;
          [[maybe_unused]] ssize_t r = ::read(wake.get(), &count, sizeof count);
        }
      }
      if (take_requests()) {
        shutdown();
        return;
      }
      for (int i = 0; i < n; ++i) {
        uint64_t t = events[i].data.u64;
        if (t == wake_tag) continue;
        auto it = children.find(t >> 2);
        if (it == children.end()) continue;  // finished earlier in this batch
        Child& child = *it->second;
        switch (static_cast<Source>(t & 3)) {
          case PIPE:
            copy_output(child);
            break;
          case CHANNEL:
            on_channel(child);
            break;
          case KEEPER:
            on_keeper_exit(child);
            break;
        }
      }
      on_deadlines();
      for (auto it = children.begin(); it != children.end();) {
        Child& child = *it->second;
        if (child.exited && !child.pipe && !child.finish_sent && !child.keeper_ended) {
          // Done with its output: the keeper kills the rest of the group and reaps the leader.
          child.finish_sent = tell(child.channel, keeper::Kind::FINISH);
        }
        if (child.exited && !child.pipe && child.keeper_ended) {
          finished.push_back(std::move(it->second));
          it = children.erase(it);
        } else {
          ++it;
        }
      }
      for (auto& child : finished) report(*child);
      finished.clear();
    }
  }

  /// Milliseconds to the next deadline, rounded up; -1 when there is none.
  int timeout_ms() const {
    std::optional<Clock::time_point> next;
    for (const auto& [id, child] : children) {
      for (const auto& at : {child->kill_at, child->drain_until}) {
        if (at && (!next || *at < *next)) next = at;
      }
    }
    if (!next) return -1;
    auto left = *next - Clock::now();
    if (left <= Clock::duration::zero()) return 0;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return static_cast<int>(std::min<decltype(ms)>(ms, 24 * 3600 * 1000));
  }

  /// Moves new children in and applies terminations; true when the supervisor is stopping.
  bool take_requests() {
    std::vector<std::unique_ptr<Child>> new_children;
    std::vector<std::pair<Id, Duration>> new_terminations;
    bool stop;
    {
      std::lock_guard lock(mutex);
      new_children.swap(incoming);
      new_terminations.swap(terminations);
      stop = stopping;
    }
    const uint64_t moves = lease_moves.load();
    for (auto& child : new_children) {
      if (child->lease_moves_seen != moves) tell(child->channel, keeper::Kind::LEASE_CHANGED);
      Id id = child->id;
      children.emplace(id, std::move(child));
    }
    if (stop) return true;
    if (moves != lease_moves_told) {
      for (auto& [id, child] : children) tell(child->channel, keeper::Kind::LEASE_CHANGED);
      lease_moves_told = moves;
    }
    for (const auto& [id, grace] : new_terminations) {
      auto it = children.find(id);
      if (it != children.end()) apply_terminate(*it->second, grace);
    }
    return false;
  }

  void apply_terminate(Child& child, Duration grace) {
    if (child.exited) return;  // ending anyway; the group is killed before the report
    child.cancelled = true;
    if (child.kill_sent) return;
    auto now = Clock::now();
    if (grace <= Duration::zero()) {
      child.signal_group(SIGKILL);
      child.kill_sent = true;
      child.kill_at.reset();
      return;
    }
    if (!child.term_sent) {
      child.signal_group(SIGTERM);
      child.signal_group(SIGCONT);
      child.term_sent = true;
    }
    auto at = after(now, grace);
    if (!child.kill_at || at < *child.kill_at) child.kill_at = at;
  }

  /// Copies what the pipe holds to the log, in at most reads_per_wakeup reads (so a writer
  /// cannot hold the thread). Closes the pipe at end-of-file and returns false then.
  bool copy_output(Child& child) {
    for (int i = 0; i < reads_per_wakeup; ++i) {
      ssize_t n = ::read(child.pipe.get(), buffer.data(), buffer.size());
      if (n > 0) {
        child.append_log(buffer.data(), static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return true;
      // End of file (or an error, which no further read would fix).
      unwatch(child.pipe);
      child.pipe.reset();
      return false;
    }
    return true;
  }

  /// What the keeper says: the task's exit, the lease's end. End-of-file: the keeper is exiting.
  void on_channel(Child& child) {
    while (child.channel) {
      keeper::Message message{};
      const ssize_t n = ::recv(child.channel.get(), &message, sizeof message, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n != static_cast<ssize_t>(sizeof message)) {
        unwatch(child.channel);
        child.channel.reset();
        return;
      }
      if (message.kind == keeper::Kind::EXITED) {
        on_task_exit(child, message.a, message.b);
      } else if (message.kind == keeper::Kind::LEASE_EXPIRED && !child.exited) {
        child.lease_expired = true;  // after its own exit, it only cut the drain window short
      }
    }
  }

  /// `code` and `status` as in siginfo_t's si_code and si_status.
  void on_task_exit(Child& child, int code, int status) {
    if (child.exited) return;
    if (code == CLD_EXITED) {
      child.exit_code = status;
    } else {
      child.signal = status;  // CLD_KILLED, CLD_DUMPED
    }
    child.exited = true;
    child.kill_at.reset();
    if (child.pipe) child.drain_until = after(Clock::now(), options.drain_window);
  }

  void on_keeper_exit(Child& child) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(child.keeper_pid), &info, WEXITED | WNOHANG) != 0) {
      if (errno == EINTR) return;  // still readable: we come back
      info.si_code = 0;            // ECHILD: reaped elsewhere, how it ended is unknown
    } else if (info.si_pid == 0) {
      return;  // not exited yet
    }
    child.keeper_ended = true;
    unwatch(child.keeper_pidfd);
    child.keeper_pidfd.reset();
    on_channel(child);  // what it said before it ended
    if (child.channel) {
      unwatch(child.channel);
      child.channel.reset();
    }
    if (child.finish_sent && info.si_code == CLD_EXITED && info.si_status == 0) return;
    // It ended without finishing (killed, or reaped by someone else): the task's leader died with
    // it (PR_SET_PDEATHSIG), the rest of the group may still run.
    leftovers::kill_group_if_ours(child.pid, child.start, child.mark);
    if (!child.exited) {
      child.exited = true;  // with an unknown status
      child.kill_at.reset();
      if (child.pipe) child.drain_until = after(Clock::now(), options.drain_window);
    }
  }

  void on_deadlines() {
    auto now = Clock::now();
    for (auto& [id, child] : children) {
      if (child->kill_at && *child->kill_at <= now) {
        child->kill_at.reset();
        if (!child->exited && !child->kill_sent) {
          child->signal_group(SIGKILL);
          child->kill_sent = true;
        }
      }
      if (child->drain_until && *child->drain_until <= now) {
        child->drain_until.reset();
        if (child->pipe) abandon_pipe(*child);
      }
    }
  }

  /// The drain window passed and the pipe is still open: kill what is left of the group,
  /// copy what is already in the pipe, say so in the log and stop reading.
  void abandon_pipe(Child& child) {
    if (!copy_output(child)) return;  // reached end-of-file after all
    child.signal_group(SIGKILL);
    if (copy_output(child)) {
      unwatch(child.pipe);
      child.pipe.reset();
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options.drain_window);
    child.append_notice("[troupe: stopped reading output " + std::to_string(ms.count()) +
                        "ms after the process exited: another process still held it open]");
  }

  /// Ends a child whose exit was told, whose pipe is closed and whose keeper has killed the
  /// rest of its group, reaped it and exited: closes the log and calls on_exit.
  void report(Child& child) {
    if (child.dropped > 0) {
      child.append_notice("[troupe: output truncated, " + std::to_string(child.dropped) +
                          " bytes dropped]");
    }
    if (int err = child.log.close(); err != 0 && child.log_error.empty()) {
      child.log_error = "closing '" + child.log_path + "' failed: " + errno_text(err);
    }
    if (!child.record_path.empty()) ::unlink(child.record_path.c_str());
    ProcessExit exit;
    exit.pid = child.pid;
    exit.exit_code = child.exit_code;
    exit.signal = child.signal;
    exit.cancelled = child.cancelled;
    exit.lease_expired = child.lease_expired;
    exit.log_bytes = child.written;
    exit.dropped_bytes = child.dropped;
    exit.log_truncated = child.dropped > 0;
    exit.log_error = std::move(child.log_error);
    running.fetch_sub(1);
    auto on_exit = std::move(child.on_exit);
    on_exit(std::move(exit));
  }

  /// The destructor's work: every keeper kills its group and reaps its leader; report nothing.
  void shutdown() {
    // Closing the sockets first lets every keeper work at once.
    for (auto& [id, child] : children) {
      unwatch(child->channel);
      child->channel.reset();
    }
    for (auto& [id, child] : children) {
      end_keeper(*child);
      if (!child->record_path.empty()) ::unlink(child->record_path.c_str());
    }
    children.clear();
    running.store(0);
  }

  // ---- any thread ------------------------------------------------------------------------

  Result<Id> spawn(ProcessSpec spec, std::function<void(ProcessExit)> on_exit);
  /// The spec checked, and the environment the process gets.
  Result<std::vector<std::string>> environment_of(const ProcessSpec& spec) const;
  /// Creates (or truncates) the log file, with its parent directories.
  static Result<Fd> open_log(const std::string& program, const std::string& path);
  /// Forks the keeper, which starts the task; returns once the task has exec'd.
  Result<std::unique_ptr<Child>> start_keeper(const std::string& program, ProcessSpec& spec,
                                              std::vector<std::string>& env, std::unique_ptr<Child> child);
  /// After the exec: records the child and registers it with epoll and the supervisor thread.
  Result<Id> adopt(const std::string& program, std::unique_ptr<Child> child);
};

Result<std::vector<std::string>> ProcessSupervisor::Impl::environment_of(const ProcessSpec& spec) const {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return fail(Errc::INVALID_ARGUMENT, "cannot start a process: argv is empty");
  }
  const std::string& program = spec.argv[0];
  for (const auto& arg : spec.argv) {
    if (arg.find('\0') != std::string::npos) {
      return fail(Errc::INVALID_ARGUMENT,
                  "cannot run '" + program + "': an argument contains a NUL byte");
    }
  }
  if (spec.log_path.empty()) {
    return fail(Errc::INVALID_ARGUMENT, "cannot run '" + program + "': no log_path given");
  }
  // The environment: the base with `spec.env` replacing same-named entries, in order.
  std::vector<std::string> env;
  env.reserve(base_env.size() + spec.env.size() + 1);
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (const auto& entry : spec.env) {
    auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || entry.find('\0') != std::string::npos) {
      return fail(Errc::INVALID_ARGUMENT, "cannot run '" + program + "': environment entry '" +
                                              entry + "' is not NAME=value");
    }
  }
  for (const auto& entry : base_env) {
    auto name = name_of(entry);
    bool overridden = std::any_of(spec.env.begin(), spec.env.end(),
                                  [&](const std::string& e) { return name_of(e) == name; });
    if (!overridden && name != leftovers::mark_name) env.push_back(entry);
  }
  for (size_t i = 0; i < spec.env.size(); ++i) {
    auto name = name_of(spec.env[i]);
    bool later = std::any_of(spec.env.begin() + static_cast<ptrdiff_t>(i) + 1, spec.env.end(),
                             [&](const std::string& e) { return name_of(e) == name; });
    if (!later && name != leftovers::mark_name) env.push_back(spec.env[i]);  // the last of duplicates wins
  }
  return env;
}

Result<Fd> ProcessSupervisor::Impl::open_log(const std::string& program, const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) {
    return fail(errno_code(ec.value(), Errc::UNAVAILABLE),
                "cannot run '" + program + "': cannot create the log directory '" + parent.string() +
                    "': " + ec.message());
  }
  Fd log(::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644));
  if (!log) {
    int err = errno;
    return fail(errno_code(err, Errc::UNAVAILABLE),
                "cannot run '" + program + "': cannot open the log file '" + path + "': " + errno_text(err));
  }
  return log;
}

Result<std::unique_ptr<Child>> ProcessSupervisor::Impl::start_keeper(const std::string& program,
                                                                     ProcessSpec& spec,
                                                                     std::vector<std::string>& env,
                                                                     std::unique_ptr<Child> child) {
  auto system_error = [&](const char* what) {
    int err = errno;
    return fail(errno_code(err, Errc::INTERNAL),
                "cannot run '" + program + "': " + what + " failed: " + errno_text(err));
  };
  // ---- pipes and the keeper's socket
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return system_error("creating a pipe");
  Fd out_read(fds[0]), out_write(fds[1]);
  if (::pipe2(fds, O_CLOEXEC) != 0) return system_error("creating a pipe");
  Fd status_read(fds[0]), status_write(fds[1]);
  if (::fcntl(out_read.get(), F_SETFL, O_NONBLOCK) != 0) return system_error("fcntl");
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) return system_error("socketpair");
  Fd channel(fds[0]), keeper_end(fds[1]);

  // ---- fork the keeper
  std::vector<char*> argv;
  for (auto& arg : spec.argv) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  keeper::KeeperPlan plan{
      keeper::TaskPlan{argv.data(), envp.data(), spec.cwd.empty() ? nullptr : spec.cwd.c_str(),
                       out_write.get(), status_write.get(), max_fd},
      keeper_end.get(), lease->deadline_ns(), title, title_size};
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid == 0) keeper::run(plan);
  int fork_err = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    return fail(errno_code(fork_err, Errc::INTERNAL),
                "cannot run '" + program + "': fork failed: " + errno_text(fork_err));
  }
  out_write.reset();
  status_write.reset();
  keeper_end.reset();
  child->keeper_pid = pid;
  child->channel = std::move(channel);
  child->keeper_pidfd.reset(open_pidfd(pid));  // always close-on-exec
  if (!child->keeper_pidfd) {
    int err = errno;
    end_keeper(*child);
    return fail(errno_code(err, Errc::UNAVAILABLE),
                "cannot run '" + program + "': pidfd_open failed: " + errno_text(err));
  }

  // ---- the keeper says it started the task (or why it could not)
  keeper::Message started{};
  ssize_t n;
  while ((n = ::recv(child->channel.get(), &started, sizeof started, 0)) < 0 && errno == EINTR) {
    // nop
  }
  if (n != static_cast<ssize_t>(sizeof started) || started.kind != keeper::Kind::STARTED) {
    const int err = n == static_cast<ssize_t>(sizeof started) ? started.a : 0;
    end_keeper(*child);
    if (err == 0) return fail(Errc::INTERNAL, "cannot run '" + program + "': its keeper process ended first");
    return fail(errno_code(err, Errc::INTERNAL),
                "cannot run '" + program + "': its keeper process could not start it: " + errno_text(err));
  }
  child->pid = started.a;

  // ---- wait for the exec: end-of-file on the status pipe, or the child's errno
  keeper::ChildFailure failure{};
  size_t got = 0;
  while (got < sizeof failure) {
    n = ::read(status_read.get(), reinterpret_cast<char*>(&failure) + got, sizeof failure - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > 0) {
    end_keeper(*child);
    if (got < sizeof failure) {
      return fail(Errc::INTERNAL, "cannot run '" + program + "': the child failed before exec");
    }
    const std::string reason = errno_text(failure.err);
    switch (failure.stage) {
      case keeper::STAGE_CHDIR:
        return fail(errno_code(failure.err, failure.err == ENOENT ? Errc::NOT_FOUND : Errc::INVALID_ARGUMENT),
                    "cannot run '" + program + "': cannot change to directory '" + spec.cwd + "': " + reason);
      case keeper::STAGE_EXEC:
        return fail(errno_code(failure.err, failure.err == ENOENT ? Errc::NOT_FOUND : Errc::INVALID_ARGUMENT),
                    "cannot run '" + program + "': " + reason);
      default:
        return fail(errno_code(failure.err, Errc::INTERNAL),
                    "cannot run '" + program + "': setting up the child process failed: " + reason);
    }
  }
  child->pipe = std::move(out_read);
  return child;
}

Result<ProcessSupervisor::Id> ProcessSupervisor::Impl::spawn(ProcessSpec spec,
                                                             std::function<void(ProcessExit)> on_exit) {
  auto env = environment_of(spec);
  if (!env) return env.error();
  const std::string& program = spec.argv[0];
  if (!on_exit) {
    return fail(Errc::INVALID_ARGUMENT, "cannot run '" + program + "': no on_exit callback given");
  }
  auto child = std::make_unique<Child>();
  child->lease_moves_seen = lease_moves.load();
  child->mark = leftovers::new_mark();
  env->push_back(child->mark);
  child->log_path = spec.log_path;
  child->cap = spec.log_cap_bytes;
  child->on_exit = std::move(on_exit);
  auto log = open_log(program, spec.log_path);
  if (!log) return log.error();
  child->log = std::move(*log);
  auto started = start_keeper(program, spec, *env, std::move(child));
  if (!started) return started.error();
  return adopt(program, std::move(*started));
}

Result<ProcessSupervisor::Id> ProcessSupervisor::Impl::adopt(const std::string& program,
                                                             std::unique_ptr<Child> child) {
  // The task stays unreaped until its keeper is told to finish, so /proc still shows it.
  if (auto stat = leftovers::read_stat(child->pid)) child->start = stat->start;
  if (records) {
    const auto keeper = leftovers::read_stat(child->keeper_pid);
    auto path = records->write(leftovers::ProcessId{child->keeper_pid, keeper ? keeper->start : 0},
                               leftovers::ProcessId{child->pid, child->start}, child->mark);
    if (!path) {
      end_keeper(*child);
      return fail(path.error().code, "cannot run '" + program + "': " + path.error().message);
    }
    child->record_path = std::move(*path);
  }
  std::lock_guard lock(mutex);
  Id id = next_id++;
  child->id = id;
  auto watch = [&](const Fd& fd, Source source) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = tag(id, source);
    return ::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd.get(), &event) == 0;
  };
  if (!watch(child->pipe, PIPE) || !watch(child->channel, CHANNEL) || !watch(child->keeper_pidfd, KEEPER)) {
    int err = errno;
    unwatch(child->pipe);
    unwatch(child->channel);
    unwatch(child->keeper_pidfd);
    end_keeper(*child);
    if (!child->record_path.empty()) ::unlink(child->record_path.c_str());
    return fail(errno_code(err, Errc::INTERNAL), "cannot watch the process: epoll_ctl failed: " + errno_text(err));
  }
  // The supervisor thread takes `incoming` after epoll_wait returns, so any event for this
  // child that it sees finds the child in its table.
  incoming.push_back(std::move(child));
  running.fetch_add(1);
  notify();
  return id;
}

Result<std::unique_ptr<ProcessSupervisor>> ProcessSupervisor::start(SupervisorOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    impl->base_env.emplace_back(*entry);
  }
  if (rlimit limit{}; ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    impl->max_fd = static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1 << 20));
  }
  {
    Fd probe(open_pidfd(::getpid()));
    if (!probe) {
      int err = errno;
      return fail(err == ENOSYS ? Errc::UNAVAILABLE : errno_code(err, Errc::INTERNAL),
                  "cannot start the process supervisor: pidfd_open failed (Linux 5.3 or later "
                  "is required): " +
                      errno_text(err));
    }
  }
  if (auto self = leftovers::read_stat(::getpid()); self && self->arg_end > self->arg_start) {
    impl->title = reinterpret_cast<char*>(self->arg_start);
    impl->title_size = static_cast<size_t>(self->arg_end - self->arg_start);
  }
  // Before any keeper is forked: they all share this page.
  auto lease = Lease::create();
  if (!lease) return fail(lease.error().code, "cannot start the process supervisor: " + lease.error().message);
  impl->lease = std::move(*lease);
  if (!options.record_dir.empty()) {
    auto records = leftovers::Records::open(options.record_dir);
    if (!records) return fail(records.error().code, "cannot start the process supervisor: " + records.error().message);
    impl->records = std::move(*records);
    impl->leftovers_killed = impl->records->kill_leftovers();
  }
  impl->epoll.reset(::epoll_create1(EPOLL_CLOEXEC));
  impl->wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl->epoll || !impl->wake) {
    int err = errno;
    return fail(errno_code(err, Errc::INTERNAL),
                "cannot start the process supervisor: " + errno_text(err));
  }
  epoll_event wake_event{};
  wake_event.events = EPOLLIN;
  wake_event.data.u64 = Impl::wake_tag;
  if (::epoll_ctl(impl->epoll.get(), EPOLL_CTL_ADD, impl->wake.get(), &wake_event) != 0) {
    int err = errno;
    return fail(errno_code(err, Errc::INTERNAL),
                "cannot start the process supervisor: epoll_ctl failed: " + errno_text(err));
  }
  try {
    impl->thread = std::thread([raw = impl.get()] { raw->loop(); });
  } catch (const std::system_error& e) {
    return fail(Errc::OVERLOADED,
                std::string("cannot start the process supervisor thread: ") + e.what());
  }
  return std::unique_ptr<ProcessSupervisor>(new ProcessSupervisor(std::move(impl)));
}

ProcessSupervisor::ProcessSupervisor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ProcessSupervisor::~ProcessSupervisor() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->notify();
  impl_->thread.join();
}

Result<ProcessSupervisor::Id> ProcessSupervisor::spawn(ProcessSpec spec,
                                                       std::function<void(ProcessExit)> on_exit) {
  return impl_->spawn(std::move(spec), std::move(on_exit));
}

void ProcessSupervisor::terminate(Id id, Duration grace) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->terminations.emplace_back(id, grace);
  }
  impl_->notify();
}

size_t ProcessSupervisor::running() const { return impl_->running.load(); }

void ProcessSupervisor::extend_lease(std::chrono::steady_clock::time_point deadline) {
  if (impl_->lease->set(deadline)) {
    impl_->lease_moves.fetch_add(1);
    impl_->notify();
  }
}

size_t ProcessSupervisor::leftovers_killed() const { return impl_->leftovers_killed; }

}  // namespace troupe::runtime
