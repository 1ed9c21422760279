// The chaos workload: kinds of workflows (chains, fan-outs, retries, the four timeouts,
// heartbeats, async completion, and ones the client pauses and resumes, stops or reruns), each
// with how it must end; client threads that submit and control them through the C++ client,
// riding out a scheduler that dies under them (a lost answer is asked again); and a watchdog
// that turns a client call left unanswered into a reported hang.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test/chaos/timings.hpp"

namespace troupe::chaos {

enum class KindId {
  CHAIN,
  FANOUT,
  RETRY_OK,
  RETRY_FAIL,
  START_TO_CLOSE_RETRIED,
  HEARTBEAT_TIMEOUT_RETRIED,
  SCHEDULE_TO_CLOSE,
  SCHEDULE_TO_START,
  HEARTBEAT,
  ASYNC,
  PAUSE_RESUME,
  STOP,
  RERUN,
  LONG,
  SESSION,
};

/// What the client does to a workflow of a kind besides starting it.
enum class Control { NONE, PAUSE_RESUME, STOP, RERUN, COMPLETE };

/// A kind of workflow: how it must end, and which re-runs it makes by design.
struct Kind {
  KindId id;
  std::string name;             ///< also the definition's name and part of the workflow ids
  std::string expected_state;   ///< SUCCESS, FAILED or STOPPED
  std::string expected_reason;  ///< FAILED: the workflow's reason contains it
  /// Re-run reasons by design, with the last attempt that may end with it (0: any attempt).
  std::map<std::string, uint32_t> designed_reruns;
  Control control = Control::NONE;
  std::vector<std::string> shell_tasks;  ///< tasks that append to the ledger
};

const Kind& kind(KindId id);

/// The definition JSON of a workflow of `kind` for `ledger` and `token_dir`, its task lengths
/// drawn from `rng`.
std::string definition(KindId kind, const std::string& ledger, const std::string& token_dir,
                       std::mt19937_64& rng);

/// One workflow the workload submits, its plan, and what the client saw.
struct Order {
  std::string id;
  KindId kind;
  std::string definition;
  int client = 0;
  milliseconds first_delay{0};   ///< pause or stop this long after the start is answered
  milliseconds second_delay{0};  ///< resume this long after the pause is answered
  int64_t created_us = 0;

  // What happened, as the client saw it.
  int start_calls = 0;
  bool acknowledged = false;
  int64_t acknowledged_us = 0;
  bool ended = false;         ///< its (last) result was answered
  std::string state, detail;  ///< the answered result
  int64_t ended_us = 0;
  bool first_control_done = false, second_control_done = false, rerun_done = false;
  std::string first_end;  ///< RERUN: the state of the run before the rerun
  int completed_tokens = 0;
  /// Completions whose answer was lost with the connection: the scheduler may have taken them
  /// (durable, then stopped before it answered), and a retry then finds the workflow finished.
  int unanswered_completions = 0;
  std::vector<std::string> log;  ///< "TIME_US what" for each client call and its answer

  // Driver bookkeeping.
  int64_t next_action_us = 0;
  bool result_pending = false;
  int64_t result_retry_us = 0;
  std::map<std::string, bool> tokens;             ///< token file -> handled
  std::map<std::string, int64_t> token_retry_us;  ///< token file -> when to present it again
  /// NOT_FOUND ("no longer current") answers per token file while no later attempt had one.
  std::map<std::string, int> token_not_found;
  std::set<std::string> accepted_tokens;
};

/// A watchdog over blocking client calls: a call that outlives `limit` is reported as a hang,
/// and `on_hang` runs (it kills the scheduler, so the call fails and the run goes on).
class Watchdog {
 public:
  Watchdog(milliseconds limit, std::function<void(const std::string&)> on_hang);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  class Guard {
   public:
    Guard(Watchdog& dog, uint64_t id) : dog_(dog), id_(id) {}
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard();

   private:
    Watchdog& dog_;
    uint64_t id_;
  };
  /// Watches the call described by `what` until the guard goes.
  [[nodiscard]] std::unique_ptr<Guard> watch(const std::string& what);
  std::vector<std::string> hangs() const;

 private:
  void loop();
  milliseconds limit_;
  std::function<void(const std::string&)> on_hang_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  struct Watched {
    std::chrono::steady_clock::time_point deadline;
    std::string what;
    bool fired = false;
  };
  std::map<uint64_t, Watched> watched_;
  uint64_t next_ = 1;
  std::vector<std::string> hangs_;
  bool stopping_ = false;
  std::thread thread_;
};

/// The mix: kinds with weights.
using Mix = std::vector<std::pair<KindId, int>>;

/// Every kind, long tasks a little more often.
Mix full_mix();
/// Mostly long tasks, for faults that must find a task running on the worker they hit; no
/// kind whose designed end a lost worker could change (a timeout racing a failover).
Mix worker_fault_mix();

/// The client threads and every order they made.
class Workload {
 public:
  struct Options {
    std::string prefix;  ///< workflow ids start with it
    Mix mix;
    int clients = 2;
    int in_flight = 6;  ///< per client
    uint16_t port = 0;
    std::string ledger, token_dir;
    uint64_t seed = 0;
  };
  Workload(Options options, Watchdog& watchdog);
  ~Workload();
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  void start();
  /// No new workflows from now on; what was created is still started (a lost answer is
  /// asked again), controlled and awaited until every order ended or `deadline` passed.
  void stop_submitting(std::chrono::steady_clock::time_point deadline);
  /// Waits for the client threads to finish (they do by the deadline).
  void join();

  /// Every order; call after join().
  const std::vector<std::unique_ptr<Order>>& orders() const { return orders_; }
  /// Orders acknowledged so far (the clients are running).
  int acknowledged() const { return acknowledged_.load(); }

 private:
  void drive(int client);
  Order* next_order(int client, std::mt19937_64& rng, int& count);

  Options options_;
  Watchdog& watchdog_;
  std::mutex mutex_;  ///< guards orders_ (each order is touched by its own client only)
  std::vector<std::unique_ptr<Order>> orders_;
  std::atomic<bool> submitting_{true};
  std::atomic<int64_t> deadline_ns_{0};
  std::atomic<int> acknowledged_{0};
  std::vector<std::thread> threads_;
};

}  // namespace troupe::chaos
