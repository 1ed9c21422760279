// Runs `dot` with pipes: the graph is written to its stdin while its stdout and stderr are read,
// so neither side blocks on a full pipe whatever the sizes.
#include "tools/troupe/graphviz.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace troupe::cli {
namespace {

/// A pipe whose ends close when it goes.
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      read = fds[0];
      write = fds[1];
    }
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  bool ok() const { return read >= 0; }
  void close_read() {
    if (read >= 0) ::close(read);
    read = -1;
  }
  void close_write() {
    if (write >= 0) ::close(write);
    write = -1;
  }
};

const char* const missing_dot =
    "--format svg needs Graphviz's dot, which is not on PATH: install Graphviz (Debian: apt-get install graphviz), "
    "or print the graph with --format dot and render it elsewhere";

}  // namespace

Result<std::string> render_with_dot(const std::string& dot_text, const std::string& format) {
  Pipe in, out, err;
  if (!in.ok() || !out.ok() || !err.ok()) {
    return fail(Errc::UNAVAILABLE, std::string("cannot make a pipe for dot: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.write, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write, STDERR_FILENO);
  const std::string type = "-T" + format;
  char* argv[] = {const_cast<char*>("dot"), const_cast<char*>(type.c_str()), nullptr};
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, "dot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == ENOENT) return fail(Errc::NOT_FOUND, missing_dot);
  if (spawned != 0) return fail(Errc::UNAVAILABLE, std::string("cannot run dot: ") + std::strerror(spawned));
  in.close_read();
  out.close_write();
  err.close_write();
  // A dot that exits early must not kill this process with SIGPIPE: its write fails instead.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  ::fcntl(in.write, F_SETFL, O_NONBLOCK);
  std::string rendered, said;
  size_t written = 0;
  if (dot_text.empty()) in.close_write();
  while (out.read >= 0 || err.read >= 0) {
    pollfd fds[3];
    nfds_t n = 0;
    if (in.write >= 0) fds[n++] = {in.write, POLLOUT, 0};
    if (out.read >= 0) fds[n++] = {out.read, POLLIN, 0};
    if (err.read >= 0) fds[n++] = {err.read, POLLIN, 0};
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in.write) {
        const ssize_t w = ::write(in.write, dot_text.data() + written, dot_text.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) written = dot_text.size();  // dot stopped reading
        if (written == dot_text.size()) in.close_write();
        continue;
      }
      char buffer[65536];
      const ssize_t r = ::read(fds[i].fd, buffer, sizeof buffer);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        if (fds[i].fd == out.read) {
          out.close_read();
        } else {
          err.close_read();
        }
        continue;
      }
      (fds[i].fd == out.read ? rendered : said).append(buffer, static_cast<size_t>(r));
    }
  }
  in.close_write();
  ::sigaction(SIGPIPE, &previous, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    return fail(Errc::INVALID_ARGUMENT, "dot -" + type.substr(1) + " failed" + (said.empty() ? "" : ": " + said));
  }
  return rendered;
}

}  // namespace troupe::cli
