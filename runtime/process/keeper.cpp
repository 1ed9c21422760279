// The keeper process and the task's process it starts (vfork, then setup and exec). Only
// async-signal-safe calls from here on: both run in a fork of a multithreaded process.
#include "runtime/process/keeper.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace troupe::runtime::keeper {
namespace {

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

/// Closes every descriptor but the three given (0-2 included: the keeper prints nothing, and
/// holding the node's stdout would keep a reader of it waiting after the node is gone).
void close_all_except(int a, int b, int c, int max_fd) {
  int keep[3] = {a, b, c};
  std::sort(keep, keep + 3);
  unsigned next = 0;
  for (int fd : keep) {
    const auto u = static_cast<unsigned>(fd);
    if (u > next) close_from(next, u - 1, max_fd);
    next = std::max(next, u + 1);
  }
  close_from(next, ~0U, max_fd);
}

/// Runs in the task's process; never returns.
[[noreturn]] void run_child(const TaskPlan& plan) {
  // Signals: default dispositions (ignored ones would survive exec), then an empty mask (the
  // supervisor blocked everything around fork so no inherited handler runs here).
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
  // execvp searches the PATH of `environ`. Under vfork this writes the keeper's copy, which
  // the keeper never reads.
  environ = plan.envp;
  ::execvp(plan.argv[0], plan.argv);
  child_fail(status_fd, STAGE_EXEC, errno);
}

/// vfork rather than fork: no copy of the (large) address space is made, and the keeper resumes
/// only once the task has exec'd or failed to, by when the task leads its own process group, so
/// no signal the keeper sends the group can miss it.
pid_t start_task(const TaskPlan& plan, pid_t keeper) {
  const pid_t pid = ::vfork();
  if (pid == 0) {
    // The task dies with its keeper, however the keeper ends; the check covers a keeper that
    // died before the prctl.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(plan.status_fd, STAGE_SETUP, errno);
    if (::getppid() != keeper) child_fail(plan.status_fd, STAGE_SETUP, ESRCH);
    run_child(plan);
  }
  return pid;
}

/// Never blocks: a frozen supervisor must not stop the keeper from enforcing the lease. The
/// socket holds far more than the few packets a keeper sends.
void tell(int channel, Kind kind, int32_t a = 0, int32_t b = 0) {
  Message message{kind, a, b};
  while (::send(channel, &message, sizeof message, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR) {
    // nop
  }
}

/// SIGKILLs the task's group while the task is still unreaped (so its id cannot have been
/// reused), then reaps it and exits.
[[noreturn]] void finish(pid_t task, int code) {
  ::kill(-task, SIGKILL);
  while (::waitpid(task, nullptr, 0) < 0 && errno == EINTR) {
    // nop
  }
  ::_exit(code);
}

/// "troupe-keeper" for `ps -e` (the thread's name) and `ps aux` (the command line): the
/// keeper's copy of the node's command line is its own to overwrite (setproctitle's way).
void rename(const KeeperPlan& plan) {
  static constexpr char name[] = "troupe-keeper";
  ::prctl(PR_SET_NAME, name);
  if (plan.title == nullptr || plan.title_size == 0) return;
  std::memset(plan.title, 0, plan.title_size);
  std::memcpy(plan.title, name, std::min(sizeof name, plan.title_size) - 1);
}

int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

void run(const KeeperPlan& plan) {
  // Its own process group, so that what is sent to the node's group (a terminal's ^C or ^Z,
  // kill -STOP -PGID) does not reach it. Every signal stays blocked, as the supervisor blocked
  // them around the fork: only SIGKILL and SIGSTOP can end or stop a keeper.
  ::setpgid(0, 0);
  rename(plan);
  const int channel = plan.channel_fd;
  close_all_except(channel, plan.task.out_fd, plan.task.status_fd, plan.task.max_fd);
  const pid_t task = start_task(plan.task, ::getpid());
  const int fork_err = errno;
  // The task holds its own copies: the supervisor sees end-of-file once the task's group is done
  // with the output and once the task has exec'd.
  ::close(plan.task.out_fd);
  ::close(plan.task.status_fd);
  if (task < 0) {
    tell(channel, Kind::START_FAILED, fork_err);
    ::_exit(0);
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, task, 0U));
  if (pidfd < 0) {
    tell(channel, Kind::START_FAILED, errno);
    finish(task, 0);
  }
  tell(channel, Kind::STARTED, task);

  bool exited = false;
  bool lease_expired = false;
  for (;;) {
    timespec timeout{};
    timespec* wait = nullptr;  // no lease: no timeout
    if (!lease_expired) {
      const int64_t deadline = plan.lease_ns->load(std::memory_order_acquire);
      if (deadline != INT64_MAX) {
        const int64_t now = monotonic_ns();
        const int64_t left = deadline > now ? deadline - now : 0;
        if (left == 0) {
          ::kill(-task, SIGKILL);
          lease_expired = true;
          tell(channel, Kind::LEASE_EXPIRED);
          continue;
        }
        // Waking at the deadline it read, the keeper reads it again: a lease extended meanwhile
        // costs one wakeup per lease, never one per extension.
        timeout.tv_sec = left / 1'000'000'000;
        timeout.tv_nsec = left % 1'000'000'000;
        wait = &timeout;
      }
    }
    pollfd fds[2] = {{channel, POLLIN, 0}, {exited ? -1 : pidfd, POLLIN, 0}};
    if (::ppoll(fds, 2, wait, nullptr) < 0) {
      if (errno == EINTR) continue;
      finish(task, 1);  // it cannot watch any more: end the task rather than lose it
    }
    if (!exited && (fds[1].revents & POLLIN)) {
      siginfo_t info{};
      // WNOWAIT: the task stays a zombie, so its group id stays ours until finish().
      if (::waitid(P_PID, static_cast<id_t>(task), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
        exited = true;
        tell(channel, Kind::EXITED, info.si_code, info.si_status);
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      Message message{};
      const ssize_t n = ::recv(channel, &message, sizeof message, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      // End of file: the supervisor's process has ended (or closed the socket to stop us).
      if (n != static_cast<ssize_t>(sizeof message)) finish(task, 0);
      if (message.kind == Kind::SIGNAL) {
        ::kill(-task, message.a);
      } else if (message.kind == Kind::FINISH) {
        finish(task, 0);
      }  // LEASE_CHANGED: the loop reads the lease again
    }
  }
}

}  // namespace troupe::runtime::keeper
