// Keepers against real processes: a task's whole process group dies with the process that owns
// its supervisor (SIGKILL), dies when the lease runs out even while that process is stopped, and
// a later instance kills what a dead one left behind, but nothing that is not provably a task's.
// The owner is a helper process ($TROUPE_SUPERVISOR_CHILD) where the test must kill or stop it.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/process/process_supervisor.hpp"
#include "test/support/child_process.hpp"
#include "test/support/processes.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::runtime;
using namespace std::chrono_literals;
using troupe::test::ChildProcess;
using troupe::test::TempDir;
using troupe::test::why;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto deadline = 20s;  // for what has no bound of its own: the box is small and shared
// A leader and a background child. The trailing command keeps the shell from exec'ing the last
// sleep, so there are three processes whatever the shell: sh and its two sleeps.
const std::string task_script = "sleep 100 & sleep 100; exit";
constexpr size_t task_processes = 3;

std::string helper_binary() {
  const char* path = std::getenv("TROUPE_SUPERVISOR_CHILD");
  REQUIRE_MESSAGE((path != nullptr && *path != '\0'), "TROUPE_SUPERVISOR_CHILD must name the helper binary");
  return path;
}

std::string read_file(const std::string& path) { return troupe::test::read_proc_file(path); }

/// "TROUPE_TEST_MARK=<unique>": what the test's processes carry in their environment.
std::string new_mark(const char* what) {
  static std::atomic<int> counter{0};
  return "TROUPE_TEST_MARK=" + std::string(what) + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++) + "-" + std::to_string(Clock::now().time_since_epoch().count());
}

std::vector<troupe::test::ProcessInfo> marked(const std::string& entry) {
  return troupe::test::processes_with_env(entry);
}

/// Polls (what it waits for has no event to wait on) every 2 ms until `pred` holds or `limit`
/// passes.
template <class Pred>
bool eventually(Pred pred, Clock::duration limit = deadline) {
  const auto until = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

using Cleanup = troupe::test::KillProcessesWithEnv;

/// The helper, started and past its start().
std::unique_ptr<ChildProcess> start_owner(const std::string& record_dir, const std::string& log_dir,
                                          const std::string& lease_ms, const std::string& mark) {
  const std::string value = mark.substr(mark.find('=') + 1);
  auto owner = std::make_unique<ChildProcess>(
      std::vector<std::string>{helper_binary(), record_dir, log_dir, lease_ms, value, task_script});
  auto ready = owner->read_line(deadline);
  REQUIRE(ready);
  REQUIRE(ready->rfind("ready ", 0) == 0);
  auto spawned = owner->read_line(deadline);
  REQUIRE(spawned);
  REQUIRE(*spawned == "spawned");
  return owner;
}

std::string command_of(int pid) { return read_file("/proc/" + std::to_string(pid) + "/comm"); }

/// Collects reports of in-process supervisors.
class Reports {
 public:
  std::function<void(ProcessExit)> on_exit() {
    return [this](ProcessExit exit) {
      std::lock_guard lock(mutex_);
      exits_.push_back(std::move(exit));
      changed_.notify_all();
    };
  }
  std::optional<ProcessExit> wait(Clock::duration timeout = deadline) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return !exits_.empty(); })) return {};
    return exits_.front();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<ProcessExit> exits_;
};

ProcessSpec marked_task(const std::string& mark, const std::string& log_path) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", task_script};
  spec.env = {mark};
  spec.log_path = log_path;
  return spec;
}

size_t task_records(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) n += entry.path().extension() == ".task";
  return n;
}

uint64_t start_time_of(int pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string field;
  for (int i = 3; i <= 21; ++i) fields >> field;  // state .. itrealvalue
  uint64_t start = 0;
  fields >> start;
  return start;
}

}  // namespace

TEST_SUITE("runtime.process_keeper") {
  TEST_CASE("a task's whole process group is gone within a second of its owner being SIGKILLed") {
    TempDir dir;
    const std::string mark = new_mark("owner-killed");
    Cleanup cleanup{mark};
    auto owner = start_owner("-", dir.path(), "-", mark);
    REQUIRE(eventually([&] { return marked(mark).size() == task_processes; }));
    owner->kill(SIGKILL);
    const auto killed = Clock::now();
    CHECK(eventually([&] { return marked(mark).empty(); }, 1s));
    MESSAGE("gone " << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed).count()
                    << " ms after the SIGKILL");
    owner->wait();
  }

  TEST_CASE("when the lease runs out the group is killed, even while its owner is stopped") {
    TempDir dir;
    const std::string mark = new_mark("owner-stopped");
    Cleanup cleanup{mark};
    // The owner sets the lease to end 1.5 s later, then spawns; so it ends after the first
    // bound and before the second.
    const auto earliest_end = Clock::now() + 1500ms;
    auto owner = start_owner("-", dir.path(), "1500", mark);
    const auto lease_end = Clock::now() + 1500ms;
    REQUIRE(eventually([&] { return marked(mark).size() == task_processes; }));
    owner->kill(SIGSTOP);
    // The lease holds: asserted only when the whole look at the processes came before its
    // earliest end (on a loaded box, starting the owner may take most of the lease).
    const size_t while_held = marked(mark).size();
    if (Clock::now() < earliest_end) CHECK(while_held == task_processes);
    CHECK(eventually([&] { return marked(mark).empty(); }, lease_end + 1s - Clock::now()));
    // Thawed, the owner reports why.
    owner->kill(SIGCONT);
    auto report = owner->read_line(deadline);
    REQUIRE(report);
    CHECK(report->find("killed by SIGKILL (the lease ran out)") != std::string::npos);
    owner->close_stdin();
    owner->wait();
  }

  TEST_CASE("extending the lease keeps a group running; it dies once the extensions stop") {
    TempDir dir;
    const std::string mark = new_mark("extended");
    Cleanup cleanup{mark};
    Reports reports;
    auto supervisor = ProcessSupervisor::start();
    REQUIRE_MESSAGE(supervisor, why(supervisor));
    constexpr auto lease = 1s;
    // Long enough for the group to come up on a loaded box; the renewals below shorten it.
    (*supervisor)->extend_lease(Clock::now() + deadline);
    REQUIRE((*supervisor)->spawn(marked_task(mark, dir / "log"), reports.on_exit()));
    REQUIRE(eventually([&] { return marked(mark).size() == task_processes; }));
    // Renewed like a heartbeat, for three leases' time.
    const auto until = Clock::now() + 3 * lease;
    auto last = Clock::now();
    while (Clock::now() < until) {
      last = Clock::now();
      (*supervisor)->extend_lease(last + lease);
      std::this_thread::sleep_for(50ms);
    }
    CHECK(marked(mark).size() == task_processes);
    CHECK((*supervisor)->running() == 1);
    // No more renewals.
    CHECK(eventually([&] { return marked(mark).empty(); }, last + lease + 1s - Clock::now()));
    auto exit = reports.wait();
    REQUIRE(exit);
    CHECK(exit->signal == SIGKILL);
    CHECK(exit->lease_expired);
    CHECK_FALSE(exit->cancelled);
    CHECK(exit->describe() == "killed by SIGKILL (the lease ran out)");
  }

  TEST_CASE("a lease moved earlier takes effect at once") {
    TempDir dir;
    const std::string mark = new_mark("shortened");
    Cleanup cleanup{mark};
    Reports reports;
    auto supervisor = ProcessSupervisor::start();
    REQUIRE_MESSAGE(supervisor, why(supervisor));
    (*supervisor)->extend_lease(Clock::now() + 1h);  // the keeper sleeps towards this
    REQUIRE((*supervisor)->spawn(marked_task(mark, dir / "log"), reports.on_exit()));
    REQUIRE(eventually([&] { return marked(mark).size() == task_processes; }));
    const auto shortened = Clock::now() + 200ms;
    (*supervisor)->extend_lease(shortened);
    CHECK(eventually([&] { return marked(mark).empty(); }, shortened + 1s - Clock::now()));
    auto exit = reports.wait();
    REQUIRE(exit);
    CHECK(exit->lease_expired);
  }

  TEST_CASE("a process spawned after the lease ran out is killed at once") {
    TempDir dir;
    const std::string mark = new_mark("expired");
    Cleanup cleanup{mark};
    Reports reports;
    auto supervisor = ProcessSupervisor::start();
    REQUIRE_MESSAGE(supervisor, why(supervisor));
    (*supervisor)->extend_lease(Clock::now() - 1s);
    REQUIRE((*supervisor)->spawn(marked_task(mark, dir / "log"), reports.on_exit()));
    auto exit = reports.wait();
    REQUIRE(exit);
    CHECK(exit->lease_expired);
    CHECK(eventually([&] { return marked(mark).empty(); }, 1s));
  }

  TEST_CASE("a keeper killed on its own takes its whole group along, and the exit is reported") {
    TempDir dir;
    const std::string mark = new_mark("keeper-killed");
    Cleanup cleanup{mark};
    Reports reports;
    auto supervisor = ProcessSupervisor::start();
    REQUIRE_MESSAGE(supervisor, why(supervisor));
    REQUIRE((*supervisor)->spawn(marked_task(mark, dir / "log"), reports.on_exit()));
    REQUIRE(eventually([&] { return marked(mark).size() == task_processes; }));
    int keeper = 0;
    for (const auto& p : marked(mark)) {
      if (command_of(p.ppid) == "troupe-keeper\n") keeper = p.ppid;
    }
    REQUIRE(keeper > 0);
    ::kill(keeper, SIGKILL);  // our child, unreaped until the supervisor sees it end
    CHECK(eventually([&] { return marked(mark).empty(); }, 1s));
    auto exit = reports.wait();
    REQUIRE(exit);
    CHECK(exit->exit_code == -1);
    CHECK(exit->signal == 0);
    CHECK(exit->describe() == "ended with an unknown status (its keeper process was killed)");
    CHECK((*supervisor)->running() == 0);
  }

  TEST_CASE("a later instance kills what a dead one left when its keeper could not act") {
    TempDir dir;
    const std::string records = dir / "records";
    const std::string mark = new_mark("leftover");
    Cleanup cleanup{mark};
    auto owner = start_owner(records, dir.path(), "-", mark);
    REQUIRE(eventually([&] { return marked(mark).size() == task_processes; }));
    CHECK(task_records(records) == 1);
    // The keeper (the parent of the group's leader) and its owner die together, so that neither
    // can act: the owner is frozen while its keeper is killed, then killed itself. (A keeper
    // that is only frozen is woken when its owner dies: its process group is orphaned then, and
    // the kernel sends such a group SIGCONT.)
    int keeper = 0;
    for (const auto& p : marked(mark)) {
      if (command_of(p.ppid) == "troupe-keeper\n") keeper = p.ppid;
    }
    REQUIRE(keeper > 0);
    owner->kill(SIGSTOP);
    ::kill(keeper, SIGKILL);  // the leader dies with it (parent-death signal); its sleeps stay
    owner->kill(SIGKILL);
    owner->wait();
    REQUIRE(eventually([&] { return marked(mark).size() == task_processes - 1; }));

    auto restarted = ProcessSupervisor::start(SupervisorOptions{.record_dir = records});
    REQUIRE_MESSAGE(restarted, why(restarted));
    CHECK((*restarted)->leftovers_killed() == task_processes - 1);
    CHECK(eventually([&] { return marked(mark).empty(); }, 1s));
    CHECK(task_records(records) == 0);
  }

  TEST_CASE("what is not provably a dead instance's task is left alone") {
    TempDir dir;
    const std::string records = dir / "records";

    SUBCASE("the records of a live instance") {
      const std::string mark = new_mark("live");
      Cleanup cleanup{mark};
      Reports reports;
      auto first = ProcessSupervisor::start(SupervisorOptions{.record_dir = records});
      REQUIRE_MESSAGE(first, why(first));
      REQUIRE((*first)->spawn(marked_task(mark, dir / "log"), reports.on_exit()));
      REQUIRE(eventually([&] { return marked(mark).size() == task_processes; }));
      auto second = ProcessSupervisor::start(SupervisorOptions{.record_dir = records});
      REQUIRE_MESSAGE(second, why(second));
      CHECK((*second)->leftovers_killed() == 0);
      CHECK(marked(mark).size() == task_processes);
      CHECK(task_records(records) == 1);
    }
    SUBCASE("a process that reused a recorded pid") {
      // A process leading its own group, as a task would, but started at another time than the
      // record says and without the record's mark.
      const std::string mark = new_mark("stranger");
      Cleanup cleanup{mark};
      const std::string value = mark.substr(mark.find('=') + 1);
      ChildProcess stranger({"/usr/bin/env", "TROUPE_TEST_MARK=" + value, "setsid", "sleep", "100"});
      REQUIRE(eventually([&] {
        auto found = marked(mark);
        return found.size() == 1 && command_of(found[0].pid) == "sleep\n";
      }));
      const int pid = stranger.pid();
      const uint64_t start = start_time_of(pid);
      std::filesystem::create_directories(records);
      std::string boot = read_file("/proc/sys/kernel/random/boot_id");
      boot.erase(boot.find_last_not_of("\n ") + 1);
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      std::ofstream(records + "/1.1." + std::to_string(pid) + ".task")
          << "troupe-task-record 1\nboot " << boot << "\nhost " << host << "\nagent " << ::getpid() << " "
          << start_time_of(::getpid()) + 1 << "\nkeeper " << pid << " " << start + 1 << "\ntask " << pid << " "
          << start + 1 << "\nmark TROUPE_PROCESS_MARK=00000000000000000000000000000000\n";
      auto restarted = ProcessSupervisor::start(SupervisorOptions{.record_dir = records});
      REQUIRE_MESSAGE(restarted, why(restarted));
      CHECK((*restarted)->leftovers_killed() == 0);
      CHECK(marked(mark).size() == 1);
      CHECK(task_records(records) == 0);  // the record of a dead instance is done with
    }
  }
}
