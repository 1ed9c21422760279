// Faults of the scheduler alone, against real troupe-node processes while clients submit and
// control the whole mix of workflows: kill -9 again and again, SIGTERM with workers connected,
// an outage of 20 s, and a full disk. A scheduler failure alone must never lose an
// acknowledged workflow, fail one, or consume an attempt of a task.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "schema/node_log.hpp"
#include "test/chaos/scenario.hpp"

using namespace troupe::chaos;
using namespace std::chrono_literals;

namespace {

ScenarioOptions scheduler_scenario(const std::string& name, const std::string& prefix) {
  ScenarioOptions o;
  o.name = name;
  o.prefix = prefix;
  o.mix = full_mix();
  o.clients = 2;
  o.in_flight = 6;
  o.scheduler_only = true;
  return o;
}

/// Waits until every worker said it registered after the current scheduler started.
bool workers_registered(Scenario& s, int64_t since_us, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (const auto& w : s.cluster().workers()) {
      all = all && s.cluster()
                       .find_line(w.name, since_us, {" " + w.name + ": registered with the scheduler"})
                       .has_value();
    }
    if (all) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

/// Kills the scheduler with `sig` while the service manager is held off; its exit status
/// (nullopt if it did not exit within `timeout`). The caller restarts it and releases it.
std::optional<int> stop_scheduler(Scenario& s, int sig, std::chrono::milliseconds timeout,
                                  int64_t* at_us) {
  s.cluster().hold("scheduler");
  const auto [at, pid] = s.cluster().signal("scheduler", sig);
  *at_us = at;
  return s.cluster().wait_exit("scheduler", timeout);
}

}  // namespace

TEST_SUITE("chaos.scheduler_kills") {
  TEST_CASE(
      "the scheduler is killed with -9 again and again while clients submit and control "
      "workflows") {
    // TROUPE_CHAOS_KILLS=300 is the soak; CI runs 30.
    const int kills = chaos_kills(30);
    Scenario s(scheduler_scenario("scheduler_kills", "sk"));
    s.start();
    for (int k = 1; k <= kills; ++k) {
      // Each kill comes 0.05-5 s after the previous (re)start.
      Scenario::pause_for(s.draw(50ms, 5000ms));
      int64_t at = 0;
      const auto status = stop_scheduler(s, SIGKILL, 10s, &at);
      if (!status) {
        s.problem("scenario", "kill " + std::to_string(k) +
                                  ": the scheduler did not die of SIGKILL within 10 s");
      } else if (!WIFSIGNALED(*status) || WTERMSIG(*status) != SIGKILL) {
        s.problem("scenario", "kill " + std::to_string(k) + ": the scheduler had already " +
                                  describe_status(*status) + " on its own; its last lines:\n" +
                                  s.cluster().tail("scheduler", 15));
      }
      s.cluster().restart("scheduler");
      s.cluster().release("scheduler");
      s.count("kills");
    }
    s.finish_and_check();
  }
}

TEST_SUITE("chaos.scheduler_sigterm") {
  TEST_CASE(
      "SIGTERM to a scheduler with workers connected: it exits 0 within 2 s, and a restart carries "
      "on") {
    Scenario s(scheduler_scenario("scheduler_sigterm", "st"));
    s.start();
    std::vector<int64_t> exits;
    for (int k = 1; k <= 3; ++k) {
      Scenario::pause_for(s.draw(3000ms, 8000ms));
      const int64_t since = s.cluster().scheduler_starts().back().started_us;
      if (!workers_registered(s, since, 20s)) {
        s.problem("scenario", "SIGTERM " + std::to_string(k) +
                                  ": the workers did not all register within 20 s");
      }
      int64_t at = 0;
      auto status = stop_scheduler(s, SIGTERM, s.timings().sigterm_exit_limit, &at);
      const std::string which = "SIGTERM " + std::to_string(k);
      if (!status) {
        s.problem("scenario", which + ": the scheduler did not exit within " +
                                  std::to_string(s.timings().sigterm_exit_limit.count()) +
                                  " ms; its last lines:\n" + s.cluster().tail("scheduler", 15));
        status = s.cluster().wait_exit("scheduler", 10s);
        if (!status) {
          s.cluster().signal("scheduler", SIGKILL);
          status = s.cluster().wait_exit("scheduler", 10s);
        }
      } else {
        exits.push_back(troupe::chaos::now_us() - at);
        if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
          s.problem("scenario", which + ": the scheduler " + describe_status(*status) +
                                    " instead of exiting 0; its last lines:\n" +
                                    s.cluster().tail("scheduler", 15));
        }
      }
      // A clean stop says nothing about a failure on its way out: no ERROR line, and nothing
      // outside the log (a crash, an assertion). What the log says of workflows that failed
      // meanwhile (INFO, WARN) is their news, not the stop's.
      std::this_thread::sleep_for(100ms);  // the last lines in the pipe
      for (const auto& line : s.cluster().lines_since("scheduler", at)) {
        if (auto logged = troupe::parse_log_line(line)) {
          if (logged->level == "ERROR") s.problem("scenario", which + ": the stopping scheduler logged: " + line);
          continue;
        }
        std::string lower = line;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        for (const char* word :
             {"fail", "error", "exception", "assert", "abort", "terminate", "bug"}) {
          if (lower.find(word) != std::string::npos) {
            s.problem("scenario", which + ": the stopping scheduler printed: " + line);
            break;
          }
        }
      }
      s.count("sigterms");
      Scenario::pause_for(s.draw(100ms, 1000ms));
      s.cluster().restart("scheduler");
      s.cluster().release("scheduler");
    }
    if (!exits.empty()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(percentile(exits, 100)) / 1e6);
      s.figure("sigterm_exit_max", buf);
    }
    s.finish_and_check();
  }
}

TEST_SUITE("chaos.scheduler_outage") {
  TEST_CASE("a scheduler down for 20 s: workers keep their tasks running and hand them back") {
    auto options = scheduler_scenario("scheduler_outage", "so");
    options.mix = {{KindId::LONG, 4},        {KindId::HEARTBEAT, 2}, {KindId::CHAIN, 1},
                   {KindId::FANOUT, 1},      {KindId::ASYNC, 1},     {KindId::RETRY_OK, 1},
                   {KindId::PAUSE_RESUME, 1}, {KindId::SESSION, 2}};
    options.workers_must_survive = true;
    Scenario s(options);
    s.start();
    Scenario::pause_for(s.draw(4000ms, 8000ms));
    for (const auto& w : s.cluster().workers()) {
      if (!s.wait_for_live_run(w.name, 30s, 1s))
        s.problem("scenario", w.name + " ran no task before the outage");
    }
    std::map<std::string, pid_t> worker_pids;
    for (const auto& w : s.cluster().workers()) worker_pids[w.name] = s.cluster().pid(w.name);
    const auto live = s.live_runs();
    int64_t down = 0;
    if (!stop_scheduler(s, SIGKILL, 10s, &down))
      s.problem("scenario", "the scheduler did not die of SIGKILL");
    Scenario::pause_for(s.timings().scheduler_outage);
    const int64_t up = troupe::chaos::now_us();
    s.cluster().restart("scheduler");
    s.cluster().release("scheduler");
    // Every run live when the scheduler went down must have gone on through the outage: still
    // writing after the restart, or ended of its own accord during it.
    Scenario::pause_for(3000ms);
    int kept = 0;
    const auto now = s.runs();
    for (const auto& before : live) {
      const Run* after = nullptr;
      for (const auto& run : now) {
        if (run.pid == before.pid && run.workflow == before.workflow &&
            run.invocation == before.invocation)
          after = &run;
      }
      const bool went_on =
          after && (after->last_us >= up || (after->ended && after->last_us >= down));
      kept += went_on;
      if (!went_on) {
        s.problem(
            "scenario",
            "a run live when the scheduler went down did not go on through the outage (down at " +
                std::to_string(down) + ", up at " + std::to_string(up) +
                "): " + (after ? after->describe() : before.describe()) +
                "\n    its last ledger line: " + (after ? after->last_line : before.last_line));
      }
    }
    for (const auto& [name, pid] : worker_pids) {
      if (s.cluster().pid(name) != pid)
        s.problem("scenario",
                  name + " (pid " + std::to_string(pid) + ") did not outlive the outage");
    }
    s.figure("runs_through_outage", std::to_string(kept) + "/" + std::to_string(live.size()));
    s.expect_taken_back(live);
    s.finish_and_check();
  }
}

TEST_SUITE("chaos.disk_full") {
  TEST_CASE("the scheduler's disk fills up, then space comes back: nothing acknowledged is lost") {
    auto options = scheduler_scenario("disk_full", "df");
    options.scheduler_may_exit = true;  // a clean exit naming the problem is fine; a crash is not
    options.min_acknowledged = 10;      // a short run: the disk fills after 3-6 s
    Scenario s(options);
    const std::string data = s.dir() + "/data";
    std::filesystem::create_directories(data);
    if (::mount("tmpfs", data.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=32m,mode=0755") != 0) {
      const std::string why = std::strerror(errno);
      MESSAGE("chaos.disk_full skipped: cannot mount a tmpfs for the scheduler's data ("
              << why << "); it needs CAP_SYS_ADMIN");
      std::cout << "chaos.disk_full SKIPPED: cannot mount a tmpfs (" << why << ")" << std::endl;
      return;
    }
    struct Unmount {
      std::string path;
      ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
    } unmount{data};
    // RocksDB reserves room for its log when it opens it, so a scheduler that started on an
    // empty disk could write for minutes into a disk filled behind its back. So it starts with
    // 1.5 MiB left (enough to start, too little for the reservation); after a while of
    // workload the rest is taken, and the disk is kept full: whatever the scheduler frees is
    // taken at once. It gets 30 s to hit the wall on its own, then it is killed and restarted
    // by the service manager on the full disk.
    const std::string filler = data + "/filler";
    const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    std::vector<char> block(1 << 20, 'x');
    int64_t written = 0;
    auto top_up = [&] {
      for (size_t size = block.size(); size >= 512;) {
        const ssize_t n = ::write(fd, block.data(), size);
        if (n > 0) {
          written += n;
        } else {
          size /= 2;
        }
      }
    };
    top_up();
    written = std::max<int64_t>(0, written - (int64_t{3} << 19));
    REQUIRE(::ftruncate(fd, written) == 0);
    REQUIRE(::lseek(fd, 0, SEEK_END) == written);
    s.start();
    Scenario::pause_for(s.draw(3000ms, 6000ms));
    top_up();
    const int starts_before = s.cluster().starts("scheduler");
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    bool stopped_itself = false;
    while (std::chrono::steady_clock::now() < give_up) {
      top_up();
      if (s.cluster().pid("scheduler") == -1 || s.cluster().starts("scheduler") != starts_before) {
        stopped_itself = true;
        break;
      }
      std::this_thread::sleep_for(100ms);
    }
    if (!stopped_itself) {
      int64_t at = 0;
      stop_scheduler(s, SIGKILL, 10s, &at);
      s.cluster().restart("scheduler");  // on the full disk: it must refuse cleanly, or cope
      s.cluster().release("scheduler");
    }
    s.figure("scheduler_stopped_on_full_disk",
             stopped_itself ? "by itself" : "no (killed after 30 s)");
    for (int i = 0; i < 40; ++i) {  // 4 s more of a full disk, restarts and all
      top_up();
      std::this_thread::sleep_for(100ms);
    }
    ::close(fd);
    s.figure("filler_mib", std::to_string(written >> 20));
    std::filesystem::remove(filler);
    s.count("disk_full_episodes");
    s.finish_and_check();
  }
}
