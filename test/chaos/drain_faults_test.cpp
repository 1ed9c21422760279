// Operators' drains against real troupe-node processes while clients submit and control
// workflows: a worker running long tasks is drained, eventually (with a deadline) or
// immediately, and half the time the scheduler is killed with -9 right after the drain was
// acknowledged (a crash mid-drain); once the worker is DRAINED it stays so for a while and is
// undrained. A drain is no fault of the tasks: no workflow may fail for it, an interrupted task
// runs again under the same attempt, and a scheduler failure consumes no attempt either. A
// session on a drained worker moves to another.
//
// Checked besides the scenario's checks: every acknowledged drain reaches DRAINED, the scheduler
// restart included (it is durable before it is acknowledged), and from DRAINED until the undrain
// no task runs on the drained worker, not even for a moment (the ledger).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/client/gateway_client.hpp"
#include "test/chaos/scenario.hpp"

using namespace troupe;
using namespace troupe::chaos;
using namespace std::chrono_literals;

namespace {

/// An operator at the CLI: each call is made again, on a new connection, while the scheduler
/// cannot answer (it may be restarting), for up to `limit`.
class Operator {
 public:
  explicit Operator(uint16_t port) : port_(port) {}

  Result<client::WorkerSummary> drain(const std::string& name, const client::DrainRequest& request) {
    return call([&](client::GatewayClient& c) { return c.drain_worker(name, request); });
  }
  Result<client::WorkerSummary> undrain(const std::string& name) {
    return call([&](client::GatewayClient& c) { return c.undrain_worker(name); });
  }
  Result<client::WorkerSummary> worker(const std::string& name) {
    return call([&](client::GatewayClient& c) -> Result<client::WorkerSummary> {
      auto found = c.workers(name);
      if (!found) return found.error();
      if (found->size() != 1) return fail(Errc::INTERNAL, "workers(" + name + ") answered " + std::to_string(found->size()));
      return found->front();
    });
  }

 private:
  template <class Call>
  auto call(Call&& f, std::chrono::milliseconds limit = 30s) -> decltype(f(std::declval<client::GatewayClient&>())) {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    Error last{Errc::UNAVAILABLE, "never connected"};
    while (std::chrono::steady_clock::now() < give_up) {
      if (!client_) {
        client::ConnectOptions options;
        options.timeout = 2s;
        auto connected = client::GatewayClient::connect("127.0.0.1", port_, options);
        if (!connected) {
          last = connected.error();
          std::this_thread::sleep_for(100ms);
          continue;
        }
        client_ = std::move(*connected);
      }
      auto answer = f(*client_);
      if (answer || (answer.error().code != Errc::UNAVAILABLE && answer.error().code != Errc::DISCONNECTED)) {
        return answer;
      }
      last = answer.error();
      client_.reset();
      std::this_thread::sleep_for(100ms);
    }
    return last;
  }

  uint16_t port_;
  std::unique_ptr<client::GatewayClient> client_;
};

/// A worker held DRAINED from `from_us` (first seen so) until `to_us` (just before the undrain).
struct DrainedSpell {
  std::string worker;
  int64_t from_us = 0;
  int64_t to_us = 0;
};

/// Polls until `name` is DRAINED; when it was first seen so (0: not within `limit`).
int64_t wait_drained(Operator& op, const std::string& name, std::chrono::milliseconds limit, std::string* last) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < give_up) {
    auto shown = op.worker(name);
    const int64_t at = now_us();
    if (shown) {
      *last = shown->status + " (standing " + shown->standing + ", " + std::to_string(shown->running.size()) +
              " running)";
      if (shown->status == "DRAINED") return at;
    } else {
      *last = shown.error().message;
    }
    std::this_thread::sleep_for(100ms);
  }
  return 0;
}

}  // namespace

TEST_SUITE("chaos.worker_drains") {
  TEST_CASE("workers drained eventually and immediately during long tasks, the scheduler killed mid-drain") {
    ScenarioOptions o;
    o.name = "worker_drains";
    o.prefix = "wd";
    // Sessions included: a drained worker's sessions move to another worker (envExit there
    // first), and their tasks run one at a time all the same.
    o.mix = worker_fault_mix();
    o.clients = 2;
    o.in_flight = 5;
    o.scheduler_only = true;  // a drain, like a scheduler failure, consumes no attempt
    Scenario s(o);
    s.start();
    Operator op(s.cluster().port());
    std::vector<std::string> names;
    for (const auto& w : s.cluster().workers()) names.push_back(w.name);
    std::vector<DrainedSpell> spells;
    for (int k = 1; k <= 8; ++k) {
      Scenario::pause_for(s.draw(1000ms, 3000ms));
      const std::string victim = s.pick(names);
      if (!s.wait_for_live_run(victim, 30s, 1000ms)) {
        s.problem("scenario", "drain " + std::to_string(k) + ": " + victim + " ran no long task within 30 s");
        continue;
      }
      client::DrainRequest request;
      request.immediate = s.draw(0ms, 999ms) < 500ms;
      if (!request.immediate) request.deadline = s.draw(2000ms, 4000ms);
      const bool crash = s.draw(0ms, 999ms) < 500ms;
      const std::string what = std::string(request.immediate ? "immediate" : "eventual") + " drain " +
                               std::to_string(k) + " of " + victim + (crash ? " (scheduler killed after it)" : "");
      auto drained = op.drain(victim, request);
      if (!drained) {
        s.problem("scenario", what + ": refused: " + drained.error().message);
        continue;
      }
      s.count(request.immediate ? "immediate_drains" : "eventual_drains");
      if (crash) {
        Scenario::pause_for(s.draw(0ms, 300ms));
        s.cluster().hold("scheduler");
        s.cluster().signal("scheduler", SIGKILL);
        if (!s.cluster().wait_exit("scheduler", 10s)) s.problem("scenario", what + ": the scheduler did not die");
        s.cluster().restart("scheduler");
        s.cluster().release("scheduler");
        s.count("scheduler_kills_mid_drain");
      }
      // An eventual drain's deadline, then the interrupted tasks' kill grace, then a restart.
      std::string last;
      const int64_t from = wait_drained(op, victim, 30s, &last);
      if (from == 0) {
        s.problem("drains", what + ": not DRAINED within 30 s; last seen " + last);
        if (auto undrained = op.undrain(victim); !undrained) {
          s.problem("drains", what + ": undrain refused: " + undrained.error().message);
        }
        continue;
      }
      Scenario::pause_for(s.draw(1000ms, 3000ms));
      const int64_t to = now_us();
      if (auto undrained = op.undrain(victim); !undrained) {
        s.problem("drains", what + ": undrain refused: " + undrained.error().message);
      } else if (undrained->status == "DRAINED" || undrained->status == "DRAINING") {
        s.problem("drains", what + ": still " + undrained->status + " after undrain");
      }
      spells.push_back({victim, from, to});
    }
    // Nothing runs on a drained worker: its runs ended before it said DRAINED, and it took none.
    for (const auto& run : s.runs()) {
      for (const auto& spell : spells) {
        if (run.worker == spell.worker && run.last_us > spell.from_us && run.start_us < spell.to_us) {
          s.problem("drains", "ran on " + spell.worker + " while it was DRAINED (" + std::to_string(spell.from_us) +
                                  ".." + std::to_string(spell.to_us) + "): " + run.describe());
        }
      }
    }
    s.figure("drained_spells", std::to_string(spells.size()));
    s.finish_and_check();
  }
}
