// What scheduler-side actors are given at spawn: the actors they talk to and the sources of
// time. Built by the runtime (or a test fixture) and passed down; no globals.
#pragma once

#include <cstdint>
#include <vector>
#include <functional>
#include <memory>
#include <string>

#include "actors/ports.hpp"
#include "actors/session/session_host.hpp"
#include "actors/system/history_writer.hpp"
#include "actors/worker/fence.hpp"
#include "schema/definition_cache.hpp"
#include "schema/duration.hpp"
#include "schema/limits.hpp"

namespace troupe {
class NodeLog;
}  // namespace troupe

namespace troupe::actors {

class ActorRoster;
struct SchedulerMeters;

struct Wiring {
  HistoryWriter writer;
  executor_actor executor;
  /// Where session actors find workers for their sessions (the dispatcher); none where
  /// executors are in process: a session then never finds a worker.
  session_host sessions;
  /// Wall-clock time for event timestamps, microseconds since the Unix epoch. Tests derive it
  /// from the deterministic actor clock.
  std::function<int64_t()> now_us;
  /// Parsed definitions shared by workflows of the same definition (nullptr: parse each).
  std::shared_ptr<DefinitionCache> definitions;
  /// How long a killed invocation may take to confirm before KILLED is assumed; also the grace
  /// its executor gives it between asking it to stop (SIGTERM) and killing it (SIGKILL).
  Duration kill_grace = std::chrono::seconds(10);
  /// After a restart, how long the scheduler waits for workers to come back (the dispatcher's
  /// recovery window): the longest a revived invocation's startToClose deadline is held for its
  /// worker to say whether the attempt ended in time.
  Duration recovery_window = std::chrono::seconds(30);
  /// Live workflows the directory keeps before it asks idle ones to passivate (0: no limit).
  /// Like Temporal's workflow cache, it bounds the scheduler's memory by what is busy rather
  /// than by what is open.
  size_t workflow_cache = 10000;
  /// What the scheduler takes from users: the directory holds a submitted definition to it, and a
  /// task the result its worker reports (a larger one fails the attempt, ResultTooLarge).
  InputLimits limits;
  /// The scheduler incarnation's fence: a dispatch records the fence its runTask carries.
  /// nullptr where executors are in process (no fencing needed): fence 0.0.
  std::shared_ptr<FenceCounter> fences;
  /// Where workflows and tasks count what they do for the node's metrics (actors/meters.hpp);
  /// nullptr: nowhere.
  std::shared_ptr<SchedulerMeters> meters;
  /// Called with a task's canonical state when its actor ends, or when its workflow records an
  /// operator's change of it after it ended (tests compare it with replay).
  std::function<void(const std::string& workflow_id, const std::string& canonical)> on_task_end;
  /// Called with a session's canonical state when it reaches CLOSED or FAILED.
  std::function<void(const std::string& workflow_id, const std::string& canonical)> on_session_end;
  /// Called with a workflow's canonical state when its actor ends.
  std::function<void(const std::string& workflow_id, const std::string& canonical)> on_workflow_end;
  /// Where workflow, task, session and directory actors take a seat while they live, for the
  /// admin shell (nullptr: nowhere).
  std::shared_ptr<ActorRoster> roster;
  /// The node's log: workflows started and closed, failovers (nullptr: nowhere).
  std::shared_ptr<NodeLog> log;
};

/// Persist, then act: effects of an event wait until its batch is durable, and run in the
/// order the events were made even if confirmations arrive out of order.
///
/// A vector rather than a deque: an idle actor's empty pipeline then costs no allocation, and
/// an actor rarely has more than a few batches in flight.
class EffectPipeline {
 public:
  /// Registers effects that wait for batch `ticket` (see open()).
  uint64_t open(std::function<void()> effects) {
    queue_.push_back(Entry{next_ticket_, std::move(effects), false});
    return next_ticket_++;
  }
  /// Batch `ticket` is durable: run every effect that no longer waits for an earlier batch.
  void done(uint64_t ticket) {
    for (auto& entry : queue_) {
      if (entry.ticket == ticket) entry.durable = true;
    }
    // Effects may open new entries; take each ready one out before running it.
    while (!queue_.empty() && queue_.front().durable) {
      auto effects = std::move(queue_.front().effects);
      queue_.erase(queue_.begin());
      if (effects) effects();
    }
    if (queue_.empty()) queue_.shrink_to_fit();
  }
  /// Runs `then` once every effect registered so far has run (now, if none waits).
  void after_pending(std::function<void()> then) {
    if (queue_.empty()) {
      then();
    } else {
      queue_.push_back(Entry{next_ticket_++, std::move(then), true});
    }
  }
  /// Effects not yet run.
  size_t waiting() const { return queue_.size(); }

 private:
  struct Entry {
    uint64_t ticket;
    std::function<void()> effects;
    bool durable;
  };
  std::vector<Entry> queue_;
  uint64_t next_ticket_ = 0;
};

}  // namespace troupe::actors
