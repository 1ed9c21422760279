// troupe up / troupe down: pid files, the run directory's lock, starting detached nodes and
// awaiting them, stopping them by pid.
#include "tools/troupe/local_cluster.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "schema/node_log.hpp"
#include "tools/troupe/node_process.hpp"

namespace troupe::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// How often a starting node is looked at: its process, its port, its log.
constexpr auto poll_interval = 20ms;
/// How long a node may take to go away after SIGKILL before it is reported as stuck.
constexpr auto kill_timeout = 5s;
/// Lines of a failed node's log shown under the table.
constexpr int tail_lines = 20;

std::string roles_of(const runtime::NodeConfig& node) {
  if (node.scheduler && node.worker) return "scheduler,worker";
  return node.scheduler ? "scheduler" : "worker";
}

/// The table row of `node` before anything is done to it.
NodeReport blank_report(const runtime::NodeConfig& node, const RunDirectory& run) {
  NodeReport report;
  report.node = node.name;
  report.roles = roles_of(node);
  report.address = node.scheduler ? node.listen.to_string() : "-> " + node.scheduler_address.to_string();
  report.log = run.log_file(node.name);
  return report;
}

// --- the run directory's lock ---

/// An exclusive flock on RUN_DIR/lock, so two `up`/`down` of one cluster do not race on its
/// pid files. Released when the object goes away (or the process exits).
class RunLock {
 public:
  static Result<RunLock> acquire(const RunDirectory& run) {
    const std::string path = run.path + "/lock";
    // O_CLOEXEC: the nodes this process starts must not inherit (and so hold) the lock.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fail(Errc::UNAVAILABLE, "cannot open '" + path + "': " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(fd);
      if (error == EWOULDBLOCK) {
        return fail(Errc::UNAVAILABLE, "another troupe up or down is working on this cluster (it holds '" + path +
                                           "'); wait for it to finish");
      }
      return fail(Errc::UNAVAILABLE, "cannot lock '" + path + "': " + std::strerror(error));
    }
    return RunLock(fd);
  }
  RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RunLock& operator=(RunLock&&) = delete;
  ~RunLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// --- pid files ---

enum class PidFileState { NONE, LIVE, STALE };

struct PidFileCheck {
  PidFileState state = PidFileState::NONE;
  /// The pid the file names (-1 for NONE, or a file that holds no number).
  pid_t pid = -1;
};

/// True when `pid` is a running `troupe-node --config CONFIG --node NAME`, as `up` starts
/// them. The full command line is compared, so a pid reused by another program, or by a node
/// of another cluster, is not mistaken for this node.
bool is_node_process(pid_t pid, const std::string& config_path, const std::string& node) {
  if (!process_alive(pid)) return false;
  const auto argv = process_command_line(pid);
  return argv.size() == 5 && fs::path(argv[0]).filename() == "troupe-node" && argv[1] == "--config" &&
         argv[2] == config_path && argv[3] == "--node" && argv[4] == node;
}

PidFileCheck check_pid_file(const RunDirectory& run, const std::string& config_path, const std::string& node) {
  std::ifstream in(run.pid_file(node));
  if (!in) return {};
  std::string text;
  std::getline(in, text);
  pid_t pid = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || end != text.data() + text.size() || pid <= 0) return {PidFileState::STALE, -1};
  return {is_node_process(pid, config_path, node) ? PidFileState::LIVE : PidFileState::STALE, pid};
}

/// Writes the pid file whole or not at all (a temporary file renamed over it), so a reader
/// never sees half a number.
Result<void> write_pid_file(const RunDirectory& run, const std::string& node, pid_t pid) {
  const std::string path = run.pid_file(node);
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << pid << "\n";
    out.close();
    if (!out) return fail(Errc::UNAVAILABLE, "cannot write '" + temporary + "'");
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) return fail(Errc::UNAVAILABLE, "cannot write '" + path + "': " + ec.message());
  return ok();
}

void remove_pid_file(const RunDirectory& run, const std::string& node) {
  std::error_code ec;
  fs::remove(run.pid_file(node), ec);
}

// --- observing a starting node ---

/// True when something accepts a TCP connection at `address` now. A wildcard listen address is
/// reached through loopback. The connect is bounded, so a name that resolves to an unreachable
/// host cannot hang the CLI.
bool accepts_connections(const runtime::Address& address) {
  std::string host = address.host;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(address.port).c_str(), &hints, &found) != 0) return false;
  bool accepted = false;
  for (addrinfo* ai = found; ai != nullptr && !accepted; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      accepted = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof error;
      accepted = ::poll(&p, 1, 500) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 &&
                 error == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return accepted;
}

uint64_t file_size(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

/// What `log` gained since it was `offset` bytes long: what one start of a node wrote.
std::string log_since(const std::string& log, uint64_t offset) {
  std::ifstream in(log, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// True once the node has logged, since `offset`, the line troupe-node writes when it has
/// started (message "ready", in the text or JSON format its config chose; runtime/node.cpp).
bool logged_ready(const std::string& log, uint64_t offset, const std::string& node) {
  std::istringstream in(log_since(log, offset));
  for (std::string line; std::getline(in, line);) {
    auto said = parse_log_line(line);
    if (said && said->node == node && said->message == "ready") return true;
  }
  return false;
}

/// The last lines the node logged since `offset`, each indented.
std::string log_tail(const std::string& log, uint64_t offset) {
  const std::string text = log_since(log, offset);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string tail;
  for (size_t i = lines.size() > tail_lines ? lines.size() - tail_lines : 0; i < lines.size(); ++i) {
    tail += "    " + lines[i] + "\n";
  }
  return tail.empty() ? "    (nothing logged)\n" : tail;
}

/// A node this `up` started, until it is known to be up or not.
struct Starting {
  const runtime::NodeConfig* node;
  NodeProcess process;
  /// The log's size before the start: what comes after is this start's.
  uint64_t log_offset;
  /// Its row in the reports.
  size_t row;
};

/// Starts nodes and awaits them, filling in their rows.
class Starter {
 public:
  Starter(const RunDirectory& run, const UpOptions& options, std::vector<NodeReport>& reports)
      : run_(run), options_(options), reports_(reports) {}

  /// Starts `node` unless it runs already; returns whether it was started.
  bool start(const runtime::NodeConfig& node) {
    reports_.push_back(blank_report(node, run_));
    NodeReport& report = reports_.back();
    const auto pid_file = check_pid_file(run_, options_.config_path, node.name);
    if (pid_file.state == PidFileState::LIVE) {
      report.pid = pid_file.pid;
      report.status = "already running";
      return false;
    }
    if (pid_file.state == PidFileState::STALE) remove_pid_file(run_, node.name);
    if (node.scheduler && accepts_connections(node.listen)) {
      return failed(report, "not started: another process already accepts connections at " +
                                node.listen.to_string() + "; stop it, or change this node's listen");
    }
    const uint64_t offset = file_size(report.log);
    auto process = NodeProcess::start_detached(
        {options_.node_binary, "--config", options_.config_path, "--node", node.name}, report.log);
    if (!process) return failed(report, "not started: " + process.error().message);
    report.pid = process->pid();
    if (auto written = write_pid_file(run_, node.name, report.pid); !written) {
      // Without its pid file `down` could not find the node: better not to leave it running.
      process->stop(1s);
      return failed(report, "stopped again: " + written.error().message);
    }
    report.status = pid_file.state == PidFileState::STALE
                        ? "started (replaced a stale pid file naming " +
                              (pid_file.pid > 0 ? "pid " + std::to_string(pid_file.pid) : std::string("no pid")) + ")"
                        : "started";
    starting_.push_back({&node, std::move(*process), offset, reports_.size() - 1});
    return true;
  }

  /// Waits until the node started last accepts connections at its listen address; false if it
  /// exited or did not get there in time.
  bool await_listening() {
    Starting& s = starting_.back();
    return await({&s}, [](const Starting& s) { return accepts_connections(s.node->listen); },
                 "accepting connections at " + s.node->listen.to_string());
  }

  /// Waits until every worker-only node started so far has logged that it is ready.
  bool await_workers_ready() {
    std::vector<Starting*> workers;
    for (auto& s : starting_) {
      if (!s.node->scheduler) workers.push_back(&s);
    }
    return await(workers,
                 [this](const Starting& s) { return logged_ready(reports_[s.row].log, s.log_offset, s.node->name); },
                 "reporting ready");
  }

  /// Marks every started node that has exited meanwhile as failed; returns whether all run.
  bool check_still_running() {
    bool all = true;
    for (auto& s : starting_) {
      if (reports_[s.row].ok && !s.process.running()) {
        exited(s);
        all = false;
      }
    }
    return all;
  }

 private:
  /// Polls `nodes` until each is `up` (true), or has exited, or the ready timeout has passed.
  template <class Up>
  bool await(const std::vector<Starting*>& nodes, Up up, const std::string& what) {
    const auto deadline = Clock::now() + options_.ready_timeout;
    std::vector<Starting*> waiting = nodes;
    bool all = true;
    for (;;) {
      std::erase_if(waiting, [&](Starting* s) {
        if (!s->process.running()) {
          exited(*s);
          all = false;
          return true;
        }
        return up(*s);
      });
      if (waiting.empty()) return all;
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(poll_interval);
    }
    for (Starting* s : waiting) {
      NodeReport& report = reports_[s->row];
      failed(report, "still starting: not " + what + " after " + format_duration(options_.ready_timeout) +
                         "; left running (troupe down stops it)");
      report.log_tail = log_tail(report.log, s->log_offset);
    }
    return false;
  }

  void exited(Starting& s) {
    NodeReport& report = reports_[s.row];
    failed(report, s.process.exit_status() + " during startup");
    report.log_tail = log_tail(report.log, s.log_offset);
    remove_pid_file(run_, s.node->name);
  }

  static bool failed(NodeReport& report, std::string status) {
    report.ok = false;
    report.status = std::move(status);
    return false;
  }

  const RunDirectory& run_;
  const UpOptions& options_;
  std::vector<NodeReport>& reports_;
  // Reports are referenced by index: the vector grows while nodes start.
  std::vector<Starting> starting_;
};

/// Sends `signal` to `pid`; a process already gone counts as delivered.
Result<void> send_signal(pid_t pid, int signal) {
  if (::kill(pid, signal) == 0 || errno == ESRCH) return ok();
  return fail(Errc::UNAVAILABLE, "cannot signal pid " + std::to_string(pid) + ": " + std::strerror(errno));
}

/// Stops the running nodes among `nodes` together: SIGTERM to each, SIGKILL to those still
/// running after the grace.
void stop_nodes(const std::vector<const runtime::NodeConfig*>& nodes, const RunDirectory& run,
                const DownOptions& options, std::vector<NodeReport>& reports) {
  struct Stopping {
    size_t row;
    pid_t pid;
  };
  std::vector<Stopping> stopping;
  for (const auto* node : nodes) {
    reports.push_back(blank_report(*node, run));
    NodeReport& report = reports.back();
    const auto pid_file = check_pid_file(run, options.config_path, node->name);
    if (pid_file.state == PidFileState::NONE) {
      report.status = "not running";
    } else if (pid_file.state == PidFileState::STALE) {
      remove_pid_file(run, node->name);
      report.status = "not running (removed a stale pid file" +
                      (pid_file.pid > 0 ? " naming pid " + std::to_string(pid_file.pid) : std::string()) + ")";
    } else if (auto sent = send_signal(pid_file.pid, SIGTERM); !sent) {
      report.pid = pid_file.pid;
      report.ok = false;
      report.status = sent.error().message;
    } else {
      report.pid = pid_file.pid;
      stopping.push_back({reports.size() - 1, pid_file.pid});
    }
  }
  std::vector<pid_t> pids;
  for (const auto& s : stopping) pids.push_back(s.pid);
  const auto outlived_grace = wait_for_exit(pids, options.grace);
  for (pid_t pid : outlived_grace) (void)send_signal(pid, SIGKILL);
  const auto stuck = wait_for_exit(outlived_grace, kill_timeout);
  for (const auto& s : stopping) {
    NodeReport& report = reports[s.row];
    if (std::find(stuck.begin(), stuck.end(), s.pid) != stuck.end()) {
      report.ok = false;
      report.status = "still running " + format_duration(kill_timeout) + " after SIGKILL";
      continue;
    }
    remove_pid_file(run, report.node);
    report.status = std::find(outlived_grace.begin(), outlived_grace.end(), s.pid) != outlived_grace.end()
                        ? "killed (SIGKILL: still running " + format_duration(options.grace) + " after SIGTERM)"
                        : "stopped";
  }
}

/// `path` relative to the working directory when it lies below it, else as it is.
std::string display_path(const std::string& path) {
  std::error_code ec;
  const auto relative = fs::proximate(path, ec);
  if (ec || relative.empty() || *relative.begin() == "..") return path;
  return relative.string();
}

}  // namespace

RunDirectory run_directory(const std::string& config_path, const runtime::ClusterConfig& config) {
  // The loader allows cluster names "." and "..", which would not make a directory of their own.
  const std::string name = config.name.find_first_not_of('.') == std::string::npos ? "cluster" + config.name
                                                                                    : config.name;
  return RunDirectory{(fs::path(config_path).parent_path() / ".troupe-run" / name).string()};
}

Result<std::vector<const runtime::NodeConfig*>> select_nodes(const runtime::ClusterConfig& config,
                                                             const std::vector<std::string>& names) {
  std::vector<const runtime::NodeConfig*> selected;
  std::string unknown;
  for (const auto& node : config.nodes) {
    if (names.empty() || std::find(names.begin(), names.end(), node.name) != names.end()) selected.push_back(&node);
  }
  for (const auto& name : names) {
    if (config.find_node(name) == nullptr) unknown += (unknown.empty() ? "'" : ", '") + name + "'";
  }
  if (!unknown.empty()) {
    std::string known;
    for (const auto& node : config.nodes) known += (known.empty() ? "" : ", ") + node.name;
    return fail(Errc::INVALID_ARGUMENT, "no node named " + unknown + " in " + config.source_path + " (its nodes: " + known + ")");
  }
  return selected;
}

Result<std::vector<NodeReport>> up_local_cluster(const runtime::ClusterConfig& config, const UpOptions& options) {
  auto selected = select_nodes(config, options.nodes);
  if (!selected) return selected.error();
  const RunDirectory run = run_directory(options.config_path, config);
  std::error_code ec;
  fs::create_directories(run.path, ec);
  if (ec) return fail(Errc::UNAVAILABLE, "cannot create the run directory '" + run.path + "': " + ec.message());
  auto lock = RunLock::acquire(run);
  if (!lock) return lock.error();

  std::vector<NodeReport> reports;
  Starter starter(run, options, reports);
  // Schedulers first, each awaited: a worker started before its scheduler listens would only
  // retry its registration, but a scheduler that cannot start is better known before workers
  // are started against it.
  bool schedulers_up = true;
  for (const auto* node : *selected) {
    if (!node->scheduler) continue;
    if (starter.start(*node)) starter.await_listening();
    schedulers_up = schedulers_up && reports.back().ok;
  }
  for (const auto* node : *selected) {
    if (node->scheduler) continue;
    if (!schedulers_up) {
      reports.push_back(blank_report(*node, run));
      reports.back().ok = false;
      reports.back().status = "not started: a scheduler did not come up";
      continue;
    }
    starter.start(*node);
  }
  starter.await_workers_ready();
  // A scheduler that came up may have exited since, e.g. when its port was taken by another
  // process after the check before its start.
  starter.check_still_running();
  return reports;
}

Result<std::vector<NodeReport>> down_local_cluster(const runtime::ClusterConfig& config,
                                                   const DownOptions& options) {
  auto selected = select_nodes(config, options.nodes);
  if (!selected) return selected.error();
  const RunDirectory run = run_directory(options.config_path, config);
  std::optional<RunLock> lock;
  // Without a run directory nothing was started: every node is reported as not running.
  if (fs::is_directory(run.path)) {
    auto acquired = RunLock::acquire(run);
    if (!acquired) return acquired.error();
    lock.emplace(std::move(*acquired));
  }
  // Workers first, so none is left without its scheduler; a node with both roles stops last.
  std::vector<const runtime::NodeConfig*> workers, schedulers;
  for (const auto* node : *selected) (node->scheduler ? schedulers : workers).push_back(node);
  std::vector<NodeReport> reports;
  stop_nodes(workers, run, options, reports);
  stop_nodes(schedulers, run, options, reports);
  return reports;
}

void print_node_table(const std::vector<NodeReport>& reports, std::ostream& out) {
  // The status goes last: it is the one column whose width varies much.
  std::vector<std::vector<std::string>> rows{{"NODE", "ROLES", "PID", "ADDRESS", "LOG", "STATUS"}};
  for (const auto& r : reports) {
    rows.push_back({r.node, r.roles, r.pid > 0 ? std::to_string(r.pid) : "-", r.address, display_path(r.log), r.status});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
  for (const auto& r : reports) {
    if (!r.log_tail.empty()) out << "\n" << r.node << " logged (" << display_path(r.log) << "):\n" << r.log_tail;
  }
}

}  // namespace troupe::cli
