// Faults of workers while they run long tasks: kill -9 (the worker is restarted at once, as a
// service manager would) and SIGSTOP for 20 s, ten times each, against real troupe-node
// processes under the default health timeouts (must_die_after 3 s). The scheduler must notice
// each within 3.5 s at p99, and no task may run twice at once however the worker comes back.
#include <doctest/doctest.h>

#include <map>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test/chaos/scenario.hpp"

using namespace troupe::chaos;
using namespace std::chrono_literals;

namespace {

ScenarioOptions worker_scenario(const std::string& name, const std::string& prefix) {
  ScenarioOptions o;
  o.name = name;
  o.prefix = prefix;
  o.mix = worker_fault_mix();
  o.clients = 2;
  o.in_flight = 5;
  o.scheduler_only = false;
  return o;
}

}  // namespace

TEST_SUITE("chaos.worker_kills") {
  TEST_CASE("workers killed with -9 during long tasks, and restarted at once") {
    Scenario s(worker_scenario("worker_kills", "wk"));
    s.start();
    std::vector<std::string> names;
    for (const auto& w : s.cluster().workers()) names.push_back(w.name);
    for (int k = 1; k <= 10; ++k) {
      Scenario::pause_for(s.draw(1000ms, 3000ms));
      const std::string victim = s.pick(names);
      if (!s.wait_for_live_run(victim, 30s, 1000ms)) {
        s.problem("scenario",
                  "kill " + std::to_string(k) + ": " + victim + " ran no long task within 30 s");
        continue;
      }
      s.cluster().hold(victim);
      const auto [at, pid] = s.cluster().signal(victim, SIGKILL);
      if (!s.cluster().wait_exit(victim, 10s))
        s.problem("scenario", victim + " did not die of SIGKILL within 10 s");
      const size_t fault = s.record({victim, "kill", pid, at, 0, 0, ""});
      Scenario::pause_for(s.timings().restart_delay);
      s.cluster().restart(victim);
      s.resumed(victim, troupe::chaos::now_us());
      s.cluster().release(victim);
      s.count("worker_kills");
      // The next fault waits for this one to be noticed, so each is measured on its own.
      s.wait_detected(fault);
    }
    s.finish_and_check();
  }
}

TEST_SUITE("chaos.worker_stops") {
  TEST_CASE("workers frozen with SIGSTOP for 20 s during long tasks, two at most at a time") {
    Scenario s(worker_scenario("worker_stops", "ws"));
    s.start();
    struct Frozen {
      std::string worker;
      std::chrono::steady_clock::time_point until;
    };
    std::vector<Frozen> frozen;
    // The process each worker had when it was last stopped. That instance was declared dead
    // while frozen, and once thawed it only finds out and exits: stopping it again would test
    // nothing (the scheduler has nothing left to notice), so a victim must be a later process.
    std::map<std::string, pid_t> stopped_pid;
    // SIGCONT whatever is due; a schedule, so it sleeps in small steps between.
    auto thaw_due = [&] {
      const auto now = std::chrono::steady_clock::now();
      for (auto it = frozen.begin(); it != frozen.end();) {
        if (it->until <= now) {
          s.cluster().signal(it->worker, SIGCONT);
          s.resumed(it->worker, troupe::chaos::now_us());
          s.cluster().release(
              it->worker);  // it may exit now (it was declared dead); then it is restarted
          it = frozen.erase(it);
        } else {
          ++it;
        }
      }
    };
    auto wait = [&](std::chrono::milliseconds d) {
      const auto until = std::chrono::steady_clock::now() + d;
      while (std::chrono::steady_clock::now() < until) {
        thaw_due();
        std::this_thread::sleep_for(20ms);
      }
      thaw_due();
    };
    for (int k = 1; k <= 10; ++k) {
      wait(s.draw(5000ms, 9000ms));
      while (frozen.size() >= 2) wait(100ms);
      std::vector<std::string> candidates;
      for (const auto& w : s.cluster().workers()) {
        if (std::none_of(frozen.begin(), frozen.end(),
                         [&](const Frozen& f) { return f.worker == w.name; })) {
          candidates.push_back(w.name);
        }
      }
      const std::string victim = s.pick(candidates);
      bool running = false;
      const auto give_up = std::chrono::steady_clock::now() + 30s;
      while (!running && std::chrono::steady_clock::now() < give_up) {
        const pid_t current = s.cluster().pid(victim);
        const auto last = stopped_pid.find(victim);
        const bool stopped_before = current <= 0 || (last != stopped_pid.end() && last->second == current);
        running = !stopped_before && s.wait_for_live_run(victim, 200ms, 1000ms);
        if (stopped_before) wait(200ms);
        thaw_due();
      }
      if (!running) {
        s.problem("scenario",
                  "stop " + std::to_string(k) + ": " + victim + " ran no long task within 30 s");
        continue;
      }
      s.cluster().hold(victim);
      const auto [at, pid] = s.cluster().signal(victim, SIGSTOP);
      stopped_pid[victim] = pid;
      s.record({victim, "stop", pid, at, 0, 0, ""});
      frozen.push_back({victim, std::chrono::steady_clock::now() + s.timings().worker_stop});
      s.count("worker_stops");
    }
    while (!frozen.empty()) wait(100ms);
    s.finish_and_check();
  }
}

TEST_SUITE("chaos.worker_sigterm") {
  TEST_CASE("workers stopped with SIGTERM during long tasks (a deploy), and started again") {
    // Each takes no new task from the signal on, lets its tasks run for the shutdown grace (5 s),
    // interrupts the rest and exits 0: no workflow may fail for it, and an interrupted task runs
    // again elsewhere under the same attempt (the history checks hold it to that).
    Scenario s(worker_scenario("worker_sigterm", "wt"));
    s.start();
    std::vector<std::string> names;
    for (const auto& w : s.cluster().workers()) names.push_back(w.name);
    for (int k = 1; k <= 6; ++k) {
      Scenario::pause_for(s.draw(1000ms, 3000ms));
      const std::string victim = s.pick(names);
      if (!s.wait_for_live_run(victim, 30s, 1000ms)) {
        s.problem("scenario", "sigterm " + std::to_string(k) + ": " + victim + " ran no long task within 30 s");
        continue;
      }
      s.cluster().hold(victim);
      s.cluster().signal(victim, SIGTERM);
      const auto status = s.cluster().wait_exit(victim, 20s);
      if (!status) {
        s.problem("scenario", victim + " did not exit within 20 s of SIGTERM");
      } else if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
        s.problem("scenario", victim + " did not exit 0 after SIGTERM (wait status " + std::to_string(*status) + ")");
      }
      s.cluster().restart(victim);
      s.cluster().release(victim);
      s.count("worker_sigterms");
    }
    s.finish_and_check();
  }
}
