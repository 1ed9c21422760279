// The process supervisor: fork/exec with a close-on-exec status pipe, and one epoll thread
// over every child's pidfd and output pipe plus an eventfd for requests from other threads.
#include "runtime/process/process_supervisor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
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

void kill_group(int pgid, int sig) {
  // ESRCH (nobody left in the group) is the normal end; nothing else can fail for our own child.
  ::kill(-pgid, sig);
}

/// What the child writes to the status pipe when it cannot exec.
struct ChildFailure {
  int32_t stage;
  int32_t err;
};
enum Stage : int32_t { STAGE_SETUP = 1, STAGE_CHDIR, STAGE_EXEC };

/// Everything the child needs, prepared before fork: after fork only async-signal-safe calls.
struct ChildPlan {
  char** argv;
  char** envp;
  const char* cwd;  // nullptr: inherit
  int out_fd;       // write end of the output pipe
  int status_fd;    // write end of the status pipe (close-on-exec)
  int max_fd;       // for closing descriptors where close_range is missing
};

[[noreturn]] void child_fail(int status_fd, Stage stage, int err) {
  ChildFailure failure{stage, err};
  [[maybe_unused]] ssize_t n = ::write(status_fd, &failure, sizeof failure);
  ::_exit(127);
}

void close_from(unsigned first, unsigned last, int max_fd) {
  if (first > last) return;
  if (::close_range(first, last, 0) == 0) return;
  unsigned end = std::min<unsigned>(last, static_cast<unsigned>(max_fd));
  for (unsigned fd = first; fd <= end; ++fd) ::close(static_cast<int>(fd));
}

/// Runs in the forked child; never returns.
[[noreturn]] void run_child(const ChildPlan& plan) {
  // Signals: default dispositions (ignored ones would survive exec), then an empty mask (the
  // parent blocked everything around fork so no inherited handler runs here).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // EINVAL for some: fine
  int status_fd = plan.status_fd;
  if (::setpgid(0, 0) != 0) child_fail(status_fd, STAGE_SETUP, errno);
  // Move our descriptors above 2 first, so the dup2s below cannot overwrite them.
  if (status_fd < 3) {
    status_fd = ::fcntl(status_fd, F_DUPFD_CLOEXEC, 3);
    if (status_fd < 0) child_fail(plan.status_fd, STAGE_SETUP, errno);
  }
  int out_fd = ::fcntl(plan.out_fd, F_DUPFD_CLOEXEC, 3);
  if (out_fd < 0) child_fail(status_fd, STAGE_SETUP, errno);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0) child_fail(status_fd, STAGE_SETUP, errno);
  if (null_fd != 0 && ::dup2(null_fd, 0) < 0) child_fail(status_fd, STAGE_SETUP, errno);
  if (::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0) child_fail(status_fd, STAGE_SETUP, errno);
  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) child_fail(status_fd, STAGE_CHDIR, errno);
  // Close everything but 0-2 and the status pipe (close-on-exec, so exec closes it).
  close_from(3, static_cast<unsigned>(status_fd) - 1, plan.max_fd);
  close_from(static_cast<unsigned>(status_fd) + 1, ~0U, plan.max_fd);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // execvp searches the PATH of `environ`; this is our own copy of the address space.
  environ = plan.envp;
  ::execvp(plan.argv[0], plan.argv);
  child_fail(status_fd, STAGE_EXEC, errno);
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

/// A running child. Owned by the spawning thread until handed to the supervisor thread.
struct Child {
  ProcessSupervisor::Id id = 0;
  int pid = 0;
  Fd pidfd;
  Fd pipe;  // read end of the output pipe; empty once at end-of-file or abandoned
  Fd log;
  std::string log_path;
  uint64_t cap = 0;
  std::function<void(ProcessExit)> on_exit;

  uint64_t written = 0;
  uint64_t dropped = 0;
  char last_byte = '\n';
  std::string log_error;

  bool exited = false;            // its exit was observed (it is a zombie until reaped)
  bool reaped_elsewhere = false;  // waitid said ECHILD: someone else reaped it
  int exit_code = -1;
  int signal = 0;
  bool cancelled = false;
  bool term_sent = false;
  bool kill_sent = false;
  std::optional<Clock::time_point> kill_at;      // SIGKILL the group then, unless exited
  std::optional<Clock::time_point> drain_until;  // exited: stop waiting for end-of-file then

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

}  // namespace

std::string ProcessExit::describe() const {
  std::string text;
  if (signal != 0) {
    text = "killed by " + signal_name(signal);
  } else if (exit_code >= 0) {
    text = "exited with " + std::to_string(exit_code);
  } else {
    text = "ended with an unknown status (reaped outside the supervisor)";
  }
  if (cancelled) text += " (cancelled)";
  return text;
}

struct ProcessSupervisor::Impl {
  SupervisorOptions options;
  std::vector<std::string> base_env;  // the environment at start()
  int max_fd = 1024;
  Fd epoll;
  Fd wake;  // eventfd
  std::thread thread;
  std::atomic<size_t> running{0};

  std::mutex mutex;
  // Guarded by mutex: requests for the supervisor thread.
  Id next_id = 1;
  std::vector<std::unique_ptr<Child>> incoming;
  std::vector<std::pair<Id, Duration>> terminations;
  bool stopping = false;

  // Supervisor thread only.
  std::unordered_map<Id, std::unique_ptr<Child>> children;
  std::vector<char> buffer = std::vector<char>(read_chunk);

  static constexpr uint64_t wake_tag = 0;
  static uint64_t pipe_tag(Id id) { return id << 1; }
  static uint64_t pidfd_tag(Id id) { return (id << 1) | 1; }

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
        uint64_t tag = events[i].data.u64;
        if (tag == wake_tag) continue;
        auto it = children.find(tag >> 1);
        if (it == children.end()) continue;  // finished earlier in this batch
        Child& child = *it->second;
        if (tag & 1) {
          on_pidfd(child);
        } else {
          on_pipe(child);
        }
      }
      on_deadlines();
      for (auto it = children.begin(); it != children.end();) {
        Child& child = *it->second;
        if (child.exited && !child.pipe) {
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
    for (auto& child : new_children) {
      Id id = child->id;
      children.emplace(id, std::move(child));
    }
    if (stop) return true;
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
      kill_group(child.pid, SIGKILL);
      child.kill_sent = true;
      child.kill_at.reset();
      return;
    }
    if (!child.term_sent) {
      kill_group(child.pid, SIGTERM);
      kill_group(child.pid, SIGCONT);
      child.term_sent = true;
    }
    auto at = after(now, grace);
    if (!child.kill_at || at < *child.kill_at) child.kill_at = at;
  }

  void on_pipe(Child& child) { copy_output(child); }

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

  void on_pidfd(Child& child) {
    siginfo_t info{};
    // WNOWAIT: the child stays a zombie, so its pid (and group id) cannot be reused while we
    // may still signal the group.
    if (::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) return;     // still readable: we come back
      child.reaped_elsewhere = true;  // ECHILD
    } else if (info.si_pid == 0) {
      return;  // not exited yet
    } else if (info.si_code == CLD_EXITED) {
      child.exit_code = info.si_status;
    } else {
      child.signal = info.si_status;  // CLD_KILLED, CLD_DUMPED
    }
    child.exited = true;
    child.kill_at.reset();
    unwatch(child.pidfd);
    child.pidfd.reset();
    if (child.pipe) child.drain_until = after(Clock::now(), options.drain_window);
  }

  void on_deadlines() {
    auto now = Clock::now();
    for (auto& [id, child] : children) {
      if (child->kill_at && *child->kill_at <= now) {
        child->kill_at.reset();
        if (!child->exited && !child->kill_sent) {
          kill_group(child->pid, SIGKILL);
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
    if (!child.reaped_elsewhere) kill_group(child.pid, SIGKILL);
    if (copy_output(child)) {
      unwatch(child.pipe);
      child.pipe.reset();
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options.drain_window);
    child.append_notice("[troupe: stopped reading output " + std::to_string(ms.count()) +
                        "ms after the process exited: another process still held it open]");
  }

  /// Ends a child whose exit was seen and whose pipe is closed: kills the rest of its group,
  /// closes the log, reaps it and calls on_exit.
  void report(Child& child) {
    if (!child.reaped_elsewhere) kill_group(child.pid, SIGKILL);  // leftovers; leader is a zombie
    if (child.dropped > 0) {
      child.append_notice("[troupe: output truncated, " + std::to_string(child.dropped) +
                          " bytes dropped]");
    }
    if (int err = child.log.close(); err != 0 && child.log_error.empty()) {
      child.log_error = "closing '" + child.log_path + "' failed: " + errno_text(err);
    }
    if (!child.reaped_elsewhere) reap(child.pid);
    ProcessExit exit;
    exit.pid = child.pid;
    exit.exit_code = child.exit_code;
    exit.signal = child.signal;
    exit.cancelled = child.cancelled;
    exit.log_bytes = child.written;
    exit.dropped_bytes = child.dropped;
    exit.log_truncated = child.dropped > 0;
    exit.log_error = std::move(child.log_error);
    running.fetch_sub(1);
    auto on_exit = std::move(child.on_exit);
    on_exit(std::move(exit));
  }

  static void reap(int pid) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      // nop
    }
  }

  /// The destructor's work: SIGKILL every group, reap every leader, report nothing.
  void shutdown() {
    for (auto& [id, child] : children) {
      if (!child->reaped_elsewhere) kill_group(child->pid, SIGKILL);
    }
    for (auto& [id, child] : children) {
      if (!child->reaped_elsewhere) reap(child->pid);
    }
    children.clear();
    running.store(0);
  }

  // ---- any thread ------------------------------------------------------------------------

  Result<Id> spawn(ProcessSpec spec, std::function<void(ProcessExit)> on_exit);
  /// After the exec: registers the child with epoll and hands it to the supervisor thread.
  Result<Id> adopt(std::unique_ptr<Child> child);
};

Result<ProcessSupervisor::Id> ProcessSupervisor::Impl::spawn(
    ProcessSpec spec, std::function<void(ProcessExit)> on_exit) {
  // ---- check the spec
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
  if (!on_exit) {
    return fail(Errc::INVALID_ARGUMENT, "cannot run '" + program + "': no on_exit callback given");
  }
  // The environment: the base with `spec.env` replacing same-named entries, in order.
  std::vector<std::string> env;
  env.reserve(base_env.size() + spec.env.size());
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
    if (!overridden) env.push_back(entry);
  }
  for (size_t i = 0; i < spec.env.size(); ++i) {
    auto name = name_of(spec.env[i]);
    bool later = std::any_of(spec.env.begin() + static_cast<ptrdiff_t>(i) + 1, spec.env.end(),
                             [&](const std::string& e) { return name_of(e) == name; });
    if (!later) env.push_back(spec.env[i]);  // the last of duplicates wins
  }

  // ---- the log file
  auto child = std::make_unique<Child>();
  child->log_path = spec.log_path;
  child->cap = spec.log_cap_bytes;
  child->on_exit = std::move(on_exit);
  {
    std::filesystem::path parent = std::filesystem::path(spec.log_path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      return fail(errno_code(ec.value(), Errc::UNAVAILABLE),
                  "cannot run '" + program + "': cannot create the log directory '" +
                      parent.string() + "': " + ec.message());
    }
    child->log.reset(::open(spec.log_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644));
    if (!child->log) {
      int err = errno;
      return fail(errno_code(err, Errc::UNAVAILABLE), "cannot run '" + program +
                                                          "': cannot open the log file '" +
                                                          spec.log_path + "': " + errno_text(err));
    }
  }

  // ---- pipes
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    int err = errno;
    return fail(errno_code(err, Errc::INTERNAL),
                "cannot run '" + program + "': cannot create a pipe: " + errno_text(err));
  }
  Fd out_read(fds[0]), out_write(fds[1]);
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    int err = errno;
    return fail(errno_code(err, Errc::INTERNAL),
                "cannot run '" + program + "': cannot create a pipe: " + errno_text(err));
  }
  Fd status_read(fds[0]), status_write(fds[1]);
  if (::fcntl(out_read.get(), F_SETFL, O_NONBLOCK) != 0) {
    int err = errno;
    return fail(Errc::INTERNAL, "cannot run '" + program + "': fcntl failed: " + errno_text(err));
  }

  // ---- fork
  std::vector<char*> argv;
  for (auto& arg : spec.argv) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  ChildPlan plan{argv.data(),     envp.data(),        spec.cwd.empty() ? nullptr : spec.cwd.c_str(),
                 out_write.get(), status_write.get(), max_fd};

  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid == 0) run_child(plan);
  int fork_err = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    return fail(errno_code(fork_err, Errc::INTERNAL),
                "cannot run '" + program + "': fork failed: " + errno_text(fork_err));
  }
  out_write.reset();
  status_write.reset();

  // ---- wait for the exec: end-of-file on the status pipe, or the child's errno
  ChildFailure failure{};
  size_t got = 0;
  while (got < sizeof failure) {
    ssize_t n =
        ::read(status_read.get(), reinterpret_cast<char*>(&failure) + got, sizeof failure - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > 0) {
    reap(pid);
    if (got < sizeof failure) {
      return fail(Errc::INTERNAL, "cannot run '" + program + "': the child failed before exec");
    }
    const std::string reason = errno_text(failure.err);
    switch (failure.stage) {
      case STAGE_CHDIR:
        return fail(errno_code(failure.err,
                               failure.err == ENOENT ? Errc::NOT_FOUND : Errc::INVALID_ARGUMENT),
                    "cannot run '" + program + "': cannot change to directory '" + spec.cwd +
                        "': " + reason);
      case STAGE_EXEC:
        return fail(errno_code(failure.err,
                               failure.err == ENOENT ? Errc::NOT_FOUND : Errc::INVALID_ARGUMENT),
                    "cannot run '" + program + "': " + reason);
      default:
        return fail(errno_code(failure.err, Errc::INTERNAL),
                    "cannot run '" + program + "': setting up the child process failed: " + reason);
    }
  }

  child->pid = pid;
  child->pipe = std::move(out_read);
  child->pidfd.reset(open_pidfd(pid));  // always close-on-exec
  if (!child->pidfd) {
    int err = errno;
    kill_group(pid, SIGKILL);
    reap(pid);
    return fail(errno_code(err, Errc::UNAVAILABLE),
                "cannot run '" + program + "': pidfd_open failed: " + errno_text(err));
  }
  return adopt(std::move(child));
}

Result<ProcessSupervisor::Id> ProcessSupervisor::Impl::adopt(std::unique_ptr<Child> child) {
  std::lock_guard lock(mutex);
  Id id = next_id++;
  child->id = id;
  epoll_event pipe_event{};
  pipe_event.events = EPOLLIN;
  pipe_event.data.u64 = pipe_tag(id);
  epoll_event pid_event{};
  pid_event.events = EPOLLIN;
  pid_event.data.u64 = pidfd_tag(id);
  if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, child->pipe.get(), &pipe_event) != 0 ||
      ::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, child->pidfd.get(), &pid_event) != 0) {
    int err = errno;
    unwatch(child->pipe);
    kill_group(child->pid, SIGKILL);
    reap(child->pid);
    return fail(errno_code(err, Errc::INTERNAL),
                "cannot watch the process: epoll_ctl failed: " + errno_text(err));
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

}  // namespace troupe::runtime
