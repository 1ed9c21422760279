// Node processes, the service manager, and the prober that times a restarted scheduler.
#include "test/chaos/nodes.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "runtime/client/gateway_client.hpp"
#include "test/support/cluster.hpp"

namespace troupe::chaos {
namespace fs = std::filesystem;

namespace {

bool can_bind(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

uint16_t stable_port() {
  int low = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0, last = 0;
  if (range >> first >> last && first > 2048) low = first;
  std::random_device device;
  std::uniform_int_distribution<int> pick(1024, low - 1);
  for (int i = 0; i < 200; ++i) {
    const auto port = static_cast<uint16_t>(pick(device));
    if (can_bind(port)) return port;
  }
  return test::free_port();  // every try was taken: an ephemeral one is better than none
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "wait status " + std::to_string(status);
}

NodeProcess::NodeProcess(const std::vector<std::string>& argv, const std::string& log_path) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  started_us_ = now_us();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(out[1]);
  if (devnull >= 0) ::close(devnull);
  reader_ = std::thread([this, fd = out[0], log_path] { read_loop(fd, log_path); });
}

NodeProcess::~NodeProcess() {
  if (!poll_exit()) {
    ::kill(pid_, SIGCONT);  // a stopped process dies of SIGKILL too, but say it plainly
    ::kill(pid_, SIGKILL);
    wait_exit(std::chrono::seconds(30));
  }
  stop_reading_ = true;
  if (reader_.joinable()) reader_.join();
}

void NodeProcess::read_loop(int fd, std::string log_path) {
  std::ofstream log(log_path, std::ios::app);
  log << now_us() << " ===== pid " << pid_ << " started\n";
  std::string buffer;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (stop_reading_) break;
      continue;
    }
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const int64_t at = now_us();
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t newline; (newline = buffer.find('\n')) != std::string::npos;) {
      std::string line = buffer.substr(0, newline);
      buffer.erase(0, newline + 1);
      log << at << " " << line << "\n";
      std::lock_guard lock(mutex_);
      lines_.emplace_back(at, std::move(line));
    }
    log.flush();
  }
  if (!buffer.empty()) {
    log << now_us() << " " << buffer << "\n";
    std::lock_guard lock(mutex_);
    lines_.emplace_back(now_us(), buffer);
  }
  ::close(fd);
}

void NodeProcess::signal(int sig) const {
  std::lock_guard lock(mutex_);
  if (!status_) ::kill(pid_, sig);
}

bool NodeProcess::poll_exit() {
  std::lock_guard lock(mutex_);
  if (status_) return true;
  int status = 0;
  const pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got == pid_) {
    status_ = status;
    exited_us_ = now_us();
    return true;
  }
  return false;
}

bool NodeProcess::wait_exit(milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!poll_exit()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::optional<int> NodeProcess::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

int64_t NodeProcess::exited_us() const {
  std::lock_guard lock(mutex_);
  return exited_us_;
}

std::optional<int64_t> NodeProcess::find_line(int64_t since_us,
                                              const std::vector<std::string>& parts) const {
  std::lock_guard lock(mutex_);
  for (const auto& [at, line] : lines_) {
    if (at < since_us) continue;
    bool all = true;
    for (const auto& part : parts) all = all && line.find(part) != std::string::npos;
    if (all) return at;
  }
  return std::nullopt;
}

std::string NodeProcess::tail(size_t n) const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  for (size_t i = lines_.size() > n ? lines_.size() - n : 0; i < lines_.size(); ++i) {
    out << "    " << lines_[i].first << " " << lines_[i].second << "\n";
  }
  return out.str();
}

std::vector<std::string> NodeProcess::lines_since(int64_t since_us) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [at, line] : lines_) {
    if (at >= since_us) out.push_back(line);
  }
  return out;
}

std::vector<std::pair<int64_t, std::string>> NodeProcess::lines_between(int64_t from_us,
                                                                        int64_t to_us) const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<int64_t, std::string>> out;
  for (const auto& entry : lines_) {
    if (entry.first >= from_us && entry.first <= to_us) out.push_back(entry);
  }
  return out;
}

ChaosCluster::ChaosCluster(const std::string& dir, const Timings& t,
                           std::vector<WorkerSpec> workers, const std::string& data_dir)
    : dir_(dir),
      timings_(t),
      workers_(std::move(workers)),
      port_(stable_port()),
      config_(dir + "/cluster.toml") {
  fs::create_directories(dir_ + "/nodes");
  std::ostringstream out;
  const std::string quoted_address = "\"" + address() + "\"";
  out << "[cluster]\nname = \"chaos\"\nplaintext = true\n"
      << "heartbeat_interval = \"" << t.heartbeat_interval << "\"\n"
      << "unhealthy_after = \"" << t.unhealthy_after << "\"\n"
      << "must_die_after = \"" << t.must_die_after << "\"\n"
      << "kill_grace = \"" << t.kill_grace << "\"\n"
      << (t.worker_lease.empty() ? "" : "worker_lease = \"" + t.worker_lease + "\"\n")
      << (t.recovery_window.empty() ? "" : "recovery_window = \"" + t.recovery_window + "\"\n")
      << t.extra_cluster_keys << (t.extra_cluster_keys.empty() ? "" : "\n") << "\n"
      << "[[node]]\nname = \"scheduler\"\nroles = [\"scheduler\"]\nlisten = " << quoted_address
      << "\ndata_dir = \"" << data_dir << "\"\n\n";
  for (const auto& w : workers_) {
    out << "[[node]]\nname = \"" << w.name
        << "\"\nroles = [\"worker\"]\nscheduler = " << quoted_address
        << "\ntask_lists = { default = " << w.slots << " }\nmax_concurrent_sessions = 2\nlog_dir = \"logs/"
        << w.name << "\"\n\n";
  }
  std::ofstream(config_) << out.str();
}

ChaosCluster::~ChaosCluster() { stop(); }

void ChaosCluster::start_locked(const std::string& name) {
  const int64_t before = now_us();
  processes_[name].push_back(std::make_unique<NodeProcess>(
      std::vector<std::string>{test::node_binary(), "--config", config_, "--node", name},
      dir_ + "/nodes/" + name + ".log"));
  if (name == "scheduler") scheduler_starts_.push_back(SchedulerStart{before, 0});
  exit_seen_us_.erase(name);
  changed_.notify_all();
}

void ChaosCluster::start() {
  {
    std::lock_guard lock(mutex_);
    start_locked("scheduler");
    for (const auto& w : workers_) start_locked(w.name);
  }
  supervisor_ = std::thread([this] { supervise(); });
  prober_ = std::thread([this] { probe(); });
  const int64_t since = now_us() - 1'000'000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    bool ready = !scheduler_starts().empty() && scheduler_starts().back().served_us != 0;
    for (const auto& w : workers_) {
      ready = ready && find_line(w.name, since, {" " + w.name + ": registered with the scheduler"}).has_value();
    }
    if (ready) return;
    const auto exits = unplanned_exits();
    if (std::chrono::steady_clock::now() > deadline || !exits.empty()) {
      std::string logs;
      for (const auto& exit : exits)
        logs += exit.node + " " + describe_status(exit.status) + ":\n" + exit.tail;
      for (const auto& w : workers_) logs += w.name + ":\n" + tail(w.name, 10);
      logs += "scheduler:\n" + tail("scheduler", 10);
      throw std::runtime_error(std::string("the chaos cluster did not come up") +
                               (exits.empty() ? " within 60 s" : ": a node exited") + ":\n" + logs);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void ChaosCluster::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    changed_.notify_all();
  }
  if (supervisor_.joinable()) supervisor_.join();
  if (prober_.joinable()) prober_.join();
  // Workers first, cleanly (they cancel their tasks), then the scheduler.
  std::vector<NodeProcess*> workers;
  {
    std::lock_guard lock(mutex_);
    for (const auto& w : workers_) {
      auto& list = processes_[w.name];
      if (!list.empty() && !list.back()->poll_exit()) {
        list.back()->signal(SIGCONT);
        list.back()->signal(SIGTERM);
        workers.push_back(list.back().get());
      }
    }
  }
  for (auto* w : workers) {
    if (!w->wait_exit(std::chrono::seconds(5))) w->signal(SIGKILL);
    w->wait_exit(std::chrono::seconds(10));
  }
  std::lock_guard lock(mutex_);
  auto& schedulers = processes_["scheduler"];
  if (!schedulers.empty() && !schedulers.back()->poll_exit()) {
    schedulers.back()->signal(SIGTERM);
    if (!schedulers.back()->wait_exit(std::chrono::seconds(5))) schedulers.back()->signal(SIGKILL);
  }
  // Reap what is left, by pid; the processes' lines stay readable.
  for (auto& [name, list] : processes_) {
    for (auto& p : list) {
      if (!p->poll_exit()) {
        p->signal(SIGKILL);
        p->wait_exit(std::chrono::seconds(30));
      }
    }
  }
}

void ChaosCluster::hold(const std::string& name) {
  std::lock_guard lock(mutex_);
  held_[name] = true;
}

void ChaosCluster::release(const std::string& name) {
  std::lock_guard lock(mutex_);
  held_[name] = false;
  exit_seen_us_.erase(name);
}

std::pair<int64_t, pid_t> ChaosCluster::signal(const std::string& name, int sig) {
  std::lock_guard lock(mutex_);
  auto& list = processes_[name];
  if (list.empty()) return {now_us(), -1};
  const int64_t at = now_us();
  list.back()->signal(sig);
  return {at, list.back()->pid()};
}

std::optional<int> ChaosCluster::wait_exit(const std::string& name, milliseconds timeout) {
  NodeProcess* current = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto& list = processes_[name];
    if (list.empty()) return std::nullopt;
    current = list.back().get();  // incarnations are only added while the test runs, never removed
  }
  if (!current->wait_exit(timeout)) return std::nullopt;
  return current->status();
}

void ChaosCluster::restart(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  auto& list = processes_[name];
  if (!list.empty() && !list.back()->poll_exit())
    throw std::logic_error("restart of " + name + " while it runs");
  start_locked(name);
}

pid_t ChaosCluster::pid(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = processes_.find(name);
  if (it == processes_.end() || it->second.empty() || it->second.back()->status()) return -1;
  return it->second.back()->pid();
}

std::optional<int64_t> ChaosCluster::find_line(const std::string& node, int64_t since_us,
                                               const std::vector<std::string>& parts) const {
  std::lock_guard lock(mutex_);
  auto it = processes_.find(node);
  if (it == processes_.end()) return std::nullopt;
  std::optional<int64_t> first;
  for (const auto& p : it->second) {
    auto at = p->find_line(since_us, parts);
    if (at && (!first || *at < *first)) first = at;
  }
  return first;
}

std::string ChaosCluster::tail(const std::string& node, size_t n) const {
  std::lock_guard lock(mutex_);
  auto it = processes_.find(node);
  if (it == processes_.end() || it->second.empty()) return "";
  return it->second.back()->tail(n);
}

std::vector<std::string> ChaosCluster::lines_since(const std::string& node,
                                                   int64_t since_us) const {
  std::lock_guard lock(mutex_);
  auto it = processes_.find(node);
  if (it == processes_.end() || it->second.empty()) return {};
  return it->second.back()->lines_since(since_us);
}

std::string ChaosCluster::lines_between(const std::string& node, int64_t from_us, int64_t to_us,
                                        size_t limit) const {
  std::lock_guard lock(mutex_);
  auto it = processes_.find(node);
  if (it == processes_.end()) return "";
  std::vector<std::pair<int64_t, std::string>> all;
  for (const auto& p : it->second) {
    auto some = p->lines_between(from_us, to_us);
    all.insert(all.end(), some.begin(), some.end());
  }
  std::sort(all.begin(), all.end());
  std::string out;
  for (size_t i = 0; i < all.size() && i < limit; ++i) {
    out += "    " + node + " log: " + std::to_string(all[i].first) + " " + all[i].second + "\n";
  }
  if (all.size() > limit) out += "    " + node + " log: ...\n";
  return out;
}

std::vector<UnplannedExit> ChaosCluster::unplanned_exits() const {
  std::lock_guard lock(mutex_);
  return unplanned_;
}

std::vector<SchedulerStart> ChaosCluster::scheduler_starts() const {
  std::lock_guard lock(mutex_);
  return scheduler_starts_;
}

int ChaosCluster::starts(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = processes_.find(name);
  return it == processes_.end() ? 0 : static_cast<int>(it->second.size());
}

void ChaosCluster::supervise() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const int64_t now = now_us();
    for (auto& [name, list] : processes_) {
      if (list.empty() || held_[name]) continue;
      auto& current = *list.back();
      if (!current.poll_exit()) continue;
      auto seen = exit_seen_us_.find(name);
      if (seen == exit_seen_us_.end()) {
        unplanned_.push_back(UnplannedExit{name, current.pid(), *current.status(),
                                           current.exited_us(), current.tail(15)});
        exit_seen_us_[name] = now;
        // Like a service manager, back off a node that keeps exiting soon after it starts.
        quick_exits_[name] =
            current.exited_us() - current.started_us() < 10'000'000 ? quick_exits_[name] + 1 : 0;
      } else if (now - seen->second >= timings_.restart_delay.count() * 1000 *
                                           (int64_t{1} << std::min(quick_exits_[name], 5))) {
        start_locked(name);
      }
    }
    changed_.wait_for(lock, std::chrono::milliseconds(20));
  }
}

void ChaosCluster::probe() {
  // Times each scheduler start to its first answer: a result() for a workflow that does not
  // exist is answered NOT_FOUND by a scheduler that serves clients. Connections are made with
  // a short timeout and each wait is bounded, so a hung scheduler cannot hang the prober.
  for (;;) {
    size_t index = 0;
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, std::chrono::milliseconds(50));
      if (stopping_) return;
      if (scheduler_starts_.empty() || scheduler_starts_.back().served_us != 0) continue;
      index = scheduler_starts_.size() - 1;
    }
    client::ConnectOptions options;
    options.timeout = std::chrono::milliseconds(500);
    auto connected = client::GatewayClient::connect("127.0.0.1", port_, options);
    if (!connected) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    bool answered = false;
    (*connected)
        ->result_async("chaos-probe-no-such-workflow", [&](Result<client::WorkflowResult> r) {
          answered = r || r.error().code != Errc::UNAVAILABLE;
        });
    auto ran = (*connected)->run(std::chrono::seconds(1));
    const int64_t at = now_us();
    if (ran && answered) {
      std::lock_guard lock(mutex_);
      if (index + 1 == scheduler_starts_.size()) scheduler_starts_[index].served_us = at;
    }
  }
}

}  // namespace troupe::chaos
