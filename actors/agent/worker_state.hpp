// The worker side of the Bistro protocol as plain state and decisions: what the agent believes
// of its health and lease, the fences it has seen, and every invocation it was given until the
// scheduler acknowledges its outcome. No RPC, no actors and no clock: the owner (the node's
// agent over Cap'n Proto, or a simulation) passes the time in and carries out what it decides.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/worker/fence.hpp"
#include "actors/worker/health_machine.hpp"
#include "schema/result.hpp"

namespace troupe::actors {

struct TaskReport;

/// What the scheduler said when it accepted a registration.
struct Registration {
  HealthTimeouts timeouts;  ///< a zero lease means the scheduler named none: must_die_after
  Fence fence;              ///< the registration's place in the scheduler's fence order
};

/// How runTask's answer of an invocation that just ended goes out.
enum class EndAnswer : uint8_t {
  /// The answer carries the outcome; the worker keeps it until the scheduler acknowledges it.
  WITH_OUTCOME,
  /// The answer (if still awaited) says only that it ended; then the outcome is delivered on its
  /// own: through the invocation's reporter, else through the session (see WorkerState).
  THEN_DELIVER,
};

/// One worker process's protocol state. Delivery of an outcome: through the invocation's
/// reporter (complete), and once that fails, through the session (updateStatus) every heartbeat
/// interval until the scheduler answers; UNAVAILABLE means it is recovering and asks again.
/// Single-threaded: the owner calls it from one thread (the agent's RPC thread).
class WorkerState {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  /// `created` counts as the last acknowledged heartbeat until the first registration.
  WorkerState(std::string shard_id, std::string instance_id, TimePoint created);

  const std::string& shard_id() const { return shard_id_; }
  const std::string& instance_id() const { return instance_id_; }
  const HealthTimeouts& timeouts() const { return timeouts_; }

  // --- the connection --------------------------------------------------------------------
  /// Whether it may (re)connect: not once it decided to die.
  bool may_connect() const { return !dying_; }
  /// A connection is up and a registration is about to go out on it. Until the scheduler asks
  /// getRunningTasks on it, the worker takes no task.
  void connecting();
  /// The fences it presents at registration (worker.capnp WorkerInfo.registrations).
  const std::vector<Fence>& registrations() const { return registrations_; }
  /// The scheduler accepted the registration sent at `sent`. Returns the invocations whose
  /// outcomes are still to be delivered (their reporters died with an earlier connection).
  std::vector<std::string> registered(const Registration& registration, TimePoint sent);
  /// The connection is gone (it failed, was refused, or closed).
  void disconnected() { connected_ = false; }

  /// The time by which its invocations must be dead: the send time of the last registration or
  /// heartbeat the scheduler acknowledged, plus the lease.
  TimePoint lease_ends() const { return last_acked_send_ + timeouts_.lease; }

  // --- heartbeats ------------------------------------------------------------------------
  /// Checked at each heartbeat tick: why it must die because its lease ran out, if it did.
  std::optional<std::string> lease_lost(TimePoint now) const;
  /// The scheduler answered a heartbeat sent at `sent` with a health other than MUST_DIE.
  void heartbeat_acknowledged(TimePoint sent);
  /// Whether it believes itself HEALTHY: associated on a live connection, and a heartbeat was
  /// acknowledged recently enough (health_after from its last acknowledged send).
  bool healthy(TimePoint now) const;

  // --- WorkerControl ---------------------------------------------------------------------
  /// getRunningTasks: every invocation it runs or has ended and keeps until acknowledged (those
  /// that ended are ended_ids()). The question associates it: from then on it takes tasks.
  std::vector<std::string> running_ids();
  /// runTask: takes invocation `id` carrying `fence`, or refuses it (NOT_ALLOWED_IN_STATE when
  /// not HEALTHY or older than the last notify, ALREADY_EXISTS when given before).
  /// `outcome_in_answer`: the scheduler takes an outcome known before the answer in it.
  Result<void> accept(const std::string& id, Fence fence, bool outcome_in_answer, TimePoint now);
  /// notifyIfTasksNotRunning: those of `ids` it does not hold. From now on it refuses runTasks
  /// older than `fence`.
  std::vector<std::string> not_running(const std::vector<std::string>& ids, Fence fence);
  /// Whether it holds invocation `id` (running, or ended and not yet acknowledged).
  bool holds(const std::string& id) const { return runs_.count(id) > 0; }
  /// acknowledge: the outcomes runTask's answers carried are durable. Returns the ids it forgot.
  std::vector<std::string> acknowledge(const std::vector<std::string>& ids);
  /// It must die (requestSuicide, MUST_DIE, its lease ran out): the invocations to cancel, or
  /// nothing if it decided so before.
  std::optional<std::vector<std::string>> die();
  bool dying() const { return dying_; }

  // --- shutting down (a signal) ----------------------------------------------------------
  /// From now on it refuses runTask: it is shutting down. False if it already was.
  bool begin_stopping();
  bool stopping() const { return stopping_; }
  /// The invocations it holds that have not ended, sorted.
  std::vector<std::string> unended_ids() const;
  /// It stops invocation `id` to shut down (or a drain asked, `why`): unless it still succeeds
  /// (or hands off), it ends INTERRUPTED, which is not the task's failure.
  void interrupt(const std::string& id, std::string why = {});
  /// Whether it holds nothing: every outcome was delivered.
  bool idle() const { return runs_.empty(); }

  // --- what the executor reports ---------------------------------------------------------
  /// Invocation `id` ended at `now` with `outcome`. `answer_awaited`: its runTask is still
  /// waiting for an answer.
  EndAnswer ended(const std::string& id, std::shared_ptr<const TaskReport> outcome, bool answer_awaited,
                  TimePoint now);
  /// How it ended, while it is held and has ended; nullptr otherwise.
  std::shared_ptr<const TaskReport> outcome(const std::string& id) const;
  /// How long before `now` it ended, while it is held and has ended; zero otherwise. Sent with
  /// the outcome (Outcome.endedAgoUs): a restarted scheduler tells by it an outcome that beat
  /// its task's deadline from one that overran it, on no clock but its own.
  Duration ended_ago(const std::string& id, TimePoint now) const;
  /// Invocation ids that ended and wait for an acknowledgement.
  std::vector<std::string> ended_ids() const;
  /// Its reporter failed (it went with its connection): heartbeats go through the session.
  /// False if the invocation is not held any more.
  bool lose_reporter(const std::string& id);
  /// Whether heartbeats of `id` go through the session rather than its reporter.
  bool reporter_lost(const std::string& id) const;
  /// The scheduler has the outcome (complete or updateStatus answered): forget it.
  void delivered(const std::string& id) { runs_.erase(id); }
  /// updateStatus of `id` was answered with an error. UNAVAILABLE (the scheduler is recovering
  /// and has not taken the invocation back yet): true, ask again later. Any other: the outcome
  /// is forgotten, false.
  bool retry_refused(const std::string& id, bool unavailable);

 private:
  struct Run {
    bool ended = false;
    TimePoint ended_at{};
    std::shared_ptr<const TaskReport> outcome;
    bool reporter_lost = false;      ///< heartbeats go through the session
    bool outcome_in_answer = false;  ///< the scheduler takes an outcome known by then in the answer
    std::string interrupted_because;  ///< stopped to shut down or drain (see interrupt); empty: not
  };

  /// Keeps the fence of this instance's first registration with each scheduler incarnation
  /// (the latest few), presented at every registration from now on.
  void remember_registration(Fence fence);

  std::string shard_id_;
  std::string instance_id_;
  HealthTimeouts timeouts_;
  TimePoint last_acked_send_;
  bool connected_ = false;
  bool associated_ = false;
  bool ever_registered_ = false;
  bool dying_ = false;
  bool stopping_ = false;
  Fence fence_;  ///< of the last notifyIfTasksNotRunning: older runTasks are refused
  std::vector<Fence> registrations_;
  /// By invocation id. Hashed: it is looked up several times per task on the worker's hot
  /// path; what lists it sorts the ids, so answers are reproducible.
  std::unordered_map<std::string, Run> runs_;
};

}  // namespace troupe::actors
