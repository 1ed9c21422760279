// The process supervisor against real processes (sh, sleep, head): exits, signals, output
// capping, cancellation of process groups, spawn errors, concurrency and descriptor hygiene.
#include "runtime/process/process_supervisor.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::runtime;
using namespace std::chrono_literals;
using troupe::test::TempDir;
using troupe::test::why;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto deadline = 20s;  // generous: the box is small and shared, sanitizers are slow

/// Collects on_exit reports by a key the test chooses (a report may arrive before spawn
/// returns its id), and lets the test thread wait for them.
class Reports {
 public:
  std::function<void(ProcessExit)> on_exit(int key) {
    return [this, key](ProcessExit exit) {
      std::lock_guard lock(mutex_);
      exits_[key].push_back(std::move(exit));
      ++total_;
      changed_.notify_all();
    };
  }

  /// The first report for `key`, or nullopt when none came within `timeout`.
  std::optional<ProcessExit> wait(int key, Clock::duration timeout = deadline) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return exits_.count(key) > 0; })) return {};
    return exits_[key].front();
  }

  /// True when `n` reports in all arrived within `timeout`.
  bool wait_total(size_t n, Clock::duration timeout = deadline) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return total_ >= n; });
  }

  size_t count(int key) {
    std::lock_guard lock(mutex_);
    return exits_.count(key) ? exits_[key].size() : 0;
  }

  size_t total() {
    std::lock_guard lock(mutex_);
    return total_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, std::vector<ProcessExit>> exits_;
  size_t total_ = 0;
};

std::unique_ptr<ProcessSupervisor> start_supervisor(SupervisorOptions options = {}) {
  auto supervisor = ProcessSupervisor::start(options);
  REQUIRE_MESSAGE(supervisor, why(supervisor));
  return std::move(supervisor).value();
}

ProcessSpec shell(const std::string& script, const std::string& log_path) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", script};
  spec.log_path = log_path;
  return spec;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

/// The first `n` lines of the file as numbers, once the file has them. The output of a
/// running process appears in the file with no event to wait on, so this polls, with a deadline.
std::vector<int> wait_for_numbers(const std::string& path, size_t n) {
  auto until = Clock::now() + deadline;
  for (;;) {
    std::istringstream in(read_file(path));
    std::vector<int> numbers;
    std::string line;
    while (numbers.size() < n && std::getline(in, line) && !in.eof()) {
      numbers.push_back(std::stoi(line));
    }
    if (numbers.size() == n) return numbers;
    REQUIRE_MESSAGE(Clock::now() < until, "no " << n << " lines in " << path);
    std::this_thread::sleep_for(5ms);
  }
}

/// Polls a condition (one with no event to wait on) until it holds or the deadline passes.
template <class Pred>
bool eventually(Pred pred) {
  auto until = Clock::now() + deadline;
  while (!pred()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

/// A pidfd on `pid` (any process, not only our children), or -1 if it is gone already.
int open_pidfd(int pid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0U));  // glibc 2.36: no extern "C"
  if (fd < 0) REQUIRE(errno == ESRCH);
  return fd;
}

/// True when the process behind `pidfd` (-1: gone already) has ended within the deadline.
bool ends(int pidfd) {
  if (pidfd < 0) return true;
  pollfd p{pidfd, POLLIN, 0};
  int ready = poll(&p, 1, static_cast<int>(std::chrono::milliseconds(deadline).count()));
  close(pidfd);
  return ready == 1;
}

size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

std::string truncation_marker(uint64_t dropped) {
  return "[troupe: output truncated, " + std::to_string(dropped) + " bytes dropped]\n";
}

}  // namespace

TEST_SUITE("runtime.process_supervisor") {
  TEST_CASE("exit statuses and killing signals are reported") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();

    SUBCASE("exit 0") {
      auto id = supervisor->spawn(shell("exit 0", dir / "log"), reports.on_exit(1));
      REQUIRE_MESSAGE(id, why(id));
      auto exit = reports.wait(1);
      REQUIRE(exit);
      CHECK(exit->success());
      CHECK(exit->exit_code == 0);
      CHECK(exit->signal == 0);
      CHECK_FALSE(exit->cancelled);
      CHECK(exit->pid > 0);
      CHECK(exit->describe() == "exited with 0");
    }
    SUBCASE("exit 3") {
      REQUIRE(supervisor->spawn(shell("exit 3", dir / "log"), reports.on_exit(1)));
      auto exit = reports.wait(1);
      REQUIRE(exit);
      CHECK_FALSE(exit->success());
      CHECK(exit->exit_code == 3);
      CHECK(exit->describe() == "exited with 3");
    }
    SUBCASE("killed by a signal") {
      REQUIRE(supervisor->spawn(shell("kill -9 $$", dir / "log"), reports.on_exit(1)));
      auto exit = reports.wait(1);
      REQUIRE(exit);
      CHECK(exit->exit_code == -1);
      CHECK(exit->signal == SIGKILL);
      CHECK_FALSE(exit->cancelled);
      CHECK(exit->describe() == "killed by SIGKILL");
    }
    // The leader is reaped before it is reported.
    CHECK(supervisor->running() == 0);
  }

  TEST_CASE("env entries are added or override, cwd applies and argv[0] is found in PATH") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    std::filesystem::create_directories(dir / "work");
    ProcessSpec spec =
        shell("printf '%s|%s|%s\\n' \"$TROUPE_TEST_ADDED\" \"$HOME\" \"$(pwd -P)\"", dir / "log");
    spec.env = {"TROUPE_TEST_ADDED=first", "HOME=/overridden", "TROUPE_TEST_ADDED=added"};
    spec.cwd = dir / "work";
    REQUIRE(supervisor->spawn(spec, reports.on_exit(1)));
    auto exit = reports.wait(1);
    REQUIRE(exit);
    CHECK(exit->success());
    CHECK(read_file(dir / "log") ==
          "added|/overridden|" + std::filesystem::canonical(dir / "work").string() + "\n");
  }

  TEST_CASE("stdout and stderr land in one log whose parent directories are created") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    const std::string log = dir / "logs/wf-1/task-2.log";
    REQUIRE(
        supervisor->spawn(shell("echo out1; echo err1 >&2; echo out2", log), reports.on_exit(1)));
    auto exit = reports.wait(1);
    REQUIRE(exit);
    CHECK(exit->success());
    CHECK(read_file(log) == "out1\nerr1\nout2\n");
    CHECK(exit->log_bytes == 15);
    CHECK_FALSE(exit->log_truncated);
    CHECK(std::filesystem::status(log).permissions() ==
          (std::filesystem::perms(0644) & ~std::filesystem::perms(umask(umask(0)))));
  }

  TEST_CASE("output beyond the cap is drained and dropped, and a final line says how much") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();

    SUBCASE("1 MiB through a 1 KiB cap: the writer is never blocked") {
      ProcessSpec spec = shell("yes | head -c 1048576", dir / "log");
      spec.log_cap_bytes = 1024;
      REQUIRE(supervisor->spawn(spec, reports.on_exit(1)));
      auto exit = reports.wait(1);
      REQUIRE(exit);
      CHECK(exit->success());
      CHECK(exit->log_bytes == 1024);
      CHECK(exit->dropped_bytes == 1048576 - 1024);
      CHECK(exit->log_truncated);
      std::string expected;
      for (int i = 0; i < 512; ++i) expected += "y\n";
      CHECK(read_file(dir / "log") == expected + truncation_marker(1048576 - 1024));
    }
    SUBCASE("the marker starts its own line") {
      ProcessSpec spec = shell("printf abcdef", dir / "log");
      spec.log_cap_bytes = 2;
      REQUIRE(supervisor->spawn(spec, reports.on_exit(1)));
      auto exit = reports.wait(1);
      REQUIRE(exit);
      CHECK(read_file(dir / "log") == "ab\n" + truncation_marker(4));
    }
    SUBCASE("output within the cap has no marker") {
      ProcessSpec spec = shell("printf abcdef", dir / "log");
      spec.log_cap_bytes = 6;
      REQUIRE(supervisor->spawn(spec, reports.on_exit(1)));
      auto exit = reports.wait(1);
      REQUIRE(exit);
      CHECK_FALSE(exit->log_truncated);
      CHECK(read_file(dir / "log") == "abcdef");
    }
  }

  TEST_CASE("a log that cannot be written is reported, and the process still runs to its end") {
    if (!std::filesystem::exists("/dev/full")) return;  // writes to it fail with ENOSPC
    Reports reports;
    auto supervisor = start_supervisor();
    REQUIRE(supervisor->spawn(shell("echo hello; exit 4", "/dev/full"), reports.on_exit(1)));
    auto exit = reports.wait(1);
    REQUIRE(exit);
    CHECK(exit->exit_code == 4);
    CHECK(exit->log_bytes == 0);
    CHECK(exit->log_error == "write to '/dev/full' failed: No space left on device");
  }

  TEST_CASE("terminate stops a process with SIGTERM and marks it cancelled") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    ProcessSpec spec;
    spec.argv = {"sleep", "60"};
    spec.log_path = dir / "log";
    auto id = supervisor->spawn(spec, reports.on_exit(1));
    REQUIRE_MESSAGE(id, why(id));
    CHECK(supervisor->running() == 1);
    auto asked = Clock::now();
    supervisor->terminate(*id, 30s);
    supervisor->terminate(*id, 30s);  // idempotent
    auto exit = reports.wait(1);
    REQUIRE(exit);
    CHECK(Clock::now() - asked < 30s);  // SIGTERM did it, not the SIGKILL after the grace
    CHECK(exit->signal == SIGTERM);
    CHECK(exit->cancelled);
    CHECK(exit->describe() == "killed by SIGTERM (cancelled)");
    CHECK(supervisor->running() == 0);
    supervisor->terminate(*id, 0s);     // ended: ignored
    supervisor->terminate(999999, 0s);  // unknown: ignored
    CHECK(reports.count(1) == 1);
  }

  TEST_CASE("a process that ignores SIGTERM is killed with SIGKILL after the grace") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    auto id = supervisor->spawn(shell("trap '' TERM; echo $$; sleep 60", dir / "log"),
                                reports.on_exit(1));
    REQUIRE_MESSAGE(id, why(id));
    wait_for_numbers(dir / "log", 1);  // the trap is set
    auto asked = Clock::now();
    supervisor->terminate(*id, 300ms);
    auto exit = reports.wait(1);
    REQUIRE(exit);
    CHECK(Clock::now() - asked >= 300ms);
    CHECK(exit->signal == SIGKILL);
    CHECK(exit->cancelled);
  }

  TEST_CASE("a later terminate brings the SIGKILL forward") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    auto id = supervisor->spawn(shell("trap '' TERM; echo $$; sleep 60", dir / "log"),
                                reports.on_exit(1));
    REQUIRE_MESSAGE(id, why(id));
    wait_for_numbers(dir / "log", 1);
    supervisor->terminate(*id, 1h);
    supervisor->terminate(*id, 0s);
    auto exit = reports.wait(1);
    REQUIRE(exit);
    CHECK(exit->signal == SIGKILL);
    CHECK(exit->cancelled);
  }

  TEST_CASE("terminate kills the whole process group, grandchildren included") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    auto id = supervisor->spawn(shell("sleep 60 & echo $!; wait", dir / "log"), reports.on_exit(1));
    REQUIRE_MESSAGE(id, why(id));
    int grandchild = open_pidfd(wait_for_numbers(dir / "log", 1)[0]);
    REQUIRE(grandchild >= 0);
    supervisor->terminate(*id, 30s);
    auto exit = reports.wait(1);
    REQUIRE(exit);
    CHECK(exit->signal == SIGTERM);
    CHECK(exit->cancelled);
    CHECK(ends(grandchild));
  }

  TEST_CASE("a grandchild holding the output open delays the report only by the drain window") {
    TempDir dir;
    Reports reports;
    SupervisorOptions options;
    options.drain_window = 500ms;
    auto supervisor = start_supervisor(options);
    auto started = Clock::now();
    REQUIRE(
        supervisor->spawn(shell("sleep 60 & echo $!; exit 0", dir / "log"), reports.on_exit(1)));
    int grandchild = open_pidfd(wait_for_numbers(dir / "log", 1)[0]);
    auto exit = reports.wait(1);
    REQUIRE(exit);
    CHECK(Clock::now() - started < 30s);
    CHECK(exit->success());
    CHECK_FALSE(exit->cancelled);
    CHECK(ends(grandchild));  // the rest of the group is killed before the report
    const std::string log = read_file(dir / "log");
    CHECK(log.find("[troupe: stopped reading output 500ms after the process exited") !=
          std::string::npos);
  }

  TEST_CASE("a program that cannot be started is a spawn error that names it") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    ProcessSpec spec;
    spec.log_path = dir / "log";

    SUBCASE("no such program") {
      spec.argv = {"troupe-no-such-program", "x"};
      auto id = supervisor->spawn(spec, reports.on_exit(1));
      REQUIRE_FALSE(id);
      CHECK(id.error().code == Errc::NOT_FOUND);
      CHECK(id.error().message == "cannot run 'troupe-no-such-program': No such file or directory");
    }
    SUBCASE("not executable") {
      std::ofstream(dir / "script") << "echo hi\n";
      spec.argv = {dir / "script"};
      auto id = supervisor->spawn(spec, reports.on_exit(1));
      REQUIRE_FALSE(id);
      CHECK(id.error().code == Errc::INVALID_ARGUMENT);
      CHECK(id.error().message == "cannot run '" + dir / "script" + "': Permission denied");
    }
    SUBCASE("no such working directory") {
      spec.argv = {"true"};
      spec.cwd = dir / "missing";
      auto id = supervisor->spawn(spec, reports.on_exit(1));
      REQUIRE_FALSE(id);
      CHECK(id.error().code == Errc::NOT_FOUND);
      CHECK(id.error().message == "cannot run 'true': cannot change to directory '" +
                                      dir / "missing" + "': No such file or directory");
    }
    SUBCASE("empty argv") {
      auto id = supervisor->spawn(spec, reports.on_exit(1));
      REQUIRE_FALSE(id);
      CHECK(id.error().code == Errc::INVALID_ARGUMENT);
    }
    SUBCASE("an environment entry without '='") {
      spec.argv = {"true"};
      spec.env = {"JUST_A_NAME"};
      auto id = supervisor->spawn(spec, reports.on_exit(1));
      REQUIRE_FALSE(id);
      CHECK(id.error().code == Errc::INVALID_ARGUMENT);
      CHECK(id.error().message ==
            "cannot run 'true': environment entry 'JUST_A_NAME' is not NAME=value");
    }
    SUBCASE("a log file that cannot be created") {
      std::ofstream(dir / "file") << "x";
      spec.argv = {"true"};
      spec.log_path = dir / "file/log";
      auto id = supervisor->spawn(spec, reports.on_exit(1));
      REQUIRE_FALSE(id);
      CHECK(id.error().code == Errc::UNAVAILABLE);
      CHECK(id.error().message == "cannot run 'true': cannot create the log directory '" +
                                      dir / "file" + "': Not a directory");
    }
    CHECK(supervisor->running() == 0);
    supervisor.reset();
    CHECK(reports.total() == 0);
  }

  TEST_CASE("fifty concurrent processes from several threads are each reported exactly once") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    constexpr int threads = 5, per_thread = 10;
    std::vector<std::thread> spawners;
    std::mutex errors_mutex;
    std::vector<std::string> errors;
    for (int t = 0; t < threads; ++t) {
      spawners.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          int key = t * per_thread + i;
          auto id = supervisor->spawn(
              shell("echo " + std::to_string(key) + "; exit " + std::to_string(key % 7),
                    dir / ("log-" + std::to_string(key))),
              reports.on_exit(key));
          if (!id) {
            std::lock_guard lock(errors_mutex);
            errors.push_back(id.error().to_string());
          }
        }
      });
    }
    for (auto& spawner : spawners) spawner.join();
    REQUIRE(errors.empty());
    REQUIRE(reports.wait_total(threads * per_thread, 60s));
    CHECK(supervisor->running() == 0);
    supervisor.reset();  // no report may come after the destructor either
    for (int key = 0; key < threads * per_thread; ++key) {
      CAPTURE(key);
      CHECK(reports.count(key) == 1);
      auto exit = reports.wait(key, 0s);
      REQUIRE(exit);
      CHECK(exit->exit_code == key % 7);
      CHECK(read_file(dir / ("log-" + std::to_string(key))) == std::to_string(key) + "\n");
    }
    CHECK(reports.total() == threads * per_thread);
  }

  TEST_CASE("on_exit may spawn the next process") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    std::function<void(ProcessExit)> chain = [&](ProcessExit) {
      auto next = supervisor->spawn(shell("exit 5", dir / "log2"), reports.on_exit(2));
      if (!next) reports.on_exit(3)(ProcessExit{});
    };
    REQUIRE(supervisor->spawn(shell("exit 0", dir / "log1"), chain));
    auto exit = reports.wait(2);
    REQUIRE(exit);
    CHECK(exit->exit_code == 5);
    CHECK(reports.count(3) == 0);
  }

  TEST_CASE("requests racing the supervisor thread are not lost") {
    // Each round queues requests while the thread may be between waking and taking them; a
    // lost wakeup shows as a destructor that never returns (the suite's timeout).
    for (int round = 0; round < 300; ++round) {
      auto supervisor = start_supervisor();
      for (ProcessSupervisor::Id id = 1; id <= 50; ++id) supervisor->terminate(id, 0s);
    }
  }

  TEST_CASE("the destructor kills and reaps what is still running, without reporting") {
    TempDir dir;
    Reports reports;
    auto supervisor = start_supervisor();
    REQUIRE(supervisor->spawn(shell("sleep 60 & echo $!; echo $$; wait", dir / "log"),
                              reports.on_exit(1)));
    auto pids = wait_for_numbers(dir / "log", 2);
    int grandchild = open_pidfd(pids[0]);
    int leader = pids[1];
    CHECK(supervisor->running() == 1);
    supervisor.reset();
    // The leader was our child and has been reaped; the grandchild was killed with the group.
    const int reaped = waitpid(leader, nullptr, WNOHANG);
    const int err = errno;
    CHECK(reaped == -1);
    CHECK(err == ECHILD);
    CHECK(ends(grandchild));
    CHECK(reports.total() == 0);
  }

  TEST_CASE("children inherit only stdin, stdout and stderr, and nothing leaks") {
    TempDir dir;
    const size_t before_start = open_fds();
    // A descriptor without close-on-exec, as a careless library might leave.
    int stray = open("/dev/null", O_RDONLY);
    REQUIRE(stray >= 0);
    {
      Reports reports;
      auto supervisor = start_supervisor();
      const size_t before_batch = open_fds();

      auto id = supervisor->spawn(shell("echo $$; exec sleep 60", dir / "inherit.log"),
                                  reports.on_exit(0));
      REQUIRE_MESSAGE(id, why(id));
      const int pid = wait_for_numbers(dir / "inherit.log", 1)[0];
      const std::string proc = "/proc/" + std::to_string(pid);
      // sh has exec'd sleep, and sleep's dynamic loader has closed what it opened: from then
      // on a descriptor the child inherited would stay in the list.
      std::vector<std::string> fds;
      auto only_standard_fds = [&] {
        fds.clear();
        for (const auto& entry : std::filesystem::directory_iterator(proc + "/fd")) {
          fds.push_back(entry.path().filename());
        }
        std::sort(fds.begin(), fds.end());
        return read_file(proc + "/comm") == "sleep\n" &&
               fds == std::vector<std::string>{"0", "1", "2"};
      };
      CHECK_MESSAGE(eventually(only_standard_fds), "open in the child: " << fds.size());
      CHECK(std::filesystem::read_symlink(proc + "/fd/0") == "/dev/null");
      supervisor->terminate(*id, 0s);
      REQUIRE(reports.wait(0));

      // A batch of every kind of ending.
      for (int key = 1; key <= 20; ++key) {
        ProcessSpec spec = shell(key % 2 ? "yes | head -c 100000" : "exit 1",
                                 dir / ("log-" + std::to_string(key)));
        spec.log_cap_bytes = 1000;
        REQUIRE(supervisor->spawn(spec, reports.on_exit(key)));
      }
      ProcessSpec missing;
      missing.argv = {"troupe-no-such-program"};
      missing.log_path = dir / "missing.log";
      CHECK_FALSE(supervisor->spawn(missing, reports.on_exit(100)));
      REQUIRE(reports.wait_total(21));
      CHECK(open_fds() == before_batch);
    }
    close(stray);
    CHECK(open_fds() == before_start);
  }
}
