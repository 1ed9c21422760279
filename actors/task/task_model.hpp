// A task instance's state, changed only by applying its history events. The task actor
// applies each event as it persists it; replay applies the stored ones; both reach the same
// state, which canonical() prints for comparison.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "actors/history_events.hpp"
#include "actors/loss.hpp"
#include "actors/task/task_machine.hpp"
#include "actors/task/task_options.hpp"
#include "actors/worker/fence.hpp"
#include "schema/duration.hpp"

namespace troupe::actors {

struct TaskModel {
  std::string name;
  TaskState state = TaskState::SUBMITTED;
  uint32_t attempt = 0;          ///< the current attempt, from 1 once started
  /// Attempts made before the retry policy's current round: an operator's retry starts a new
  /// round (the policy counts attempt - attempt_base) while attempt numbers go on.
  uint32_t attempt_base = 0;
  bool scheduled = false;        ///< an instance exists (taskScheduled); updates may come first
  std::string invocation_id;     ///< the invocation on an executor, if any
  std::string executor;          ///< where it was sent
  std::string input_json;
  std::string progress;          ///< last heartbeat progress, handed to the next attempt
  std::string result;            ///< on success
  std::string failure_reason;    ///< the last failure, retried or not
  std::string failure_details;
  bool kill_requested = false;
  bool kill_immediate = false;  ///< a kill without grace was asked for (sticky)
  /// Killed because its session will run nothing more of it (sticky), and why, for people.
  bool kill_never_attempted = false;
  std::string kill_reason;
  /// The last attempt known to have reached its executor (it started there, or ended there in a
  /// way that may have run it); 0: none did.
  uint32_t ran_attempt = 0;
  /// asyncCompletion: the invocation handed off; completeTask/failTask with its token ends it.
  bool awaiting_completion = false;
  bool pause_requested = false;  ///< asked to pause while on an executor
  int64_t delay_until_us = 0;    ///< end of the retry backoff
  // Time since the task was first started, pauses excluded: banked plus the current segment.
  int64_t banked_us = 0;
  int64_t segment_start_us = -1;  ///< -1 while not started or paused
  int64_t dispatched_us = 0;      ///< when the current invocation was dispatched
  int64_t heartbeat_us = 0;       ///< when the current invocation last started or heartbeat
  uint32_t dispatches = 0;        ///< invocations sent, every attempt and every rerun counted
  Fence dispatch_fence;           ///< the fence the current invocation's runTask carries
  /// The invocation an attempt that ended on its executor left behind (it timed out, failed or
  /// was cancelled there), and where: the next attempt is dispatched only once it is over.
  std::string previous_invocation;
  std::string previous_executor;
  /// The worker the last attempt failed on: it failed or timed out there, or was lost with it
  /// while it may have run. The next attempt goes to another worker when one can take it. Empty
  /// when the attempt failed on no worker (it never got one), and kept when an invocation never
  /// started or its worker interrupted it to shut down (the attempt goes on: no worker failed).
  std::string failed_on;
  Loss failover = Loss::MAY_HAVE_STARTED;  ///< what the last failover knew of its invocation
  /// Invocations of the current attempt that never started, in a row: each is dispatched
  /// again after a backoff that grows with this count.
  uint32_t never_started = 0;
  int64_t started_us = 0;         ///< when it was first dispatched (sent to an executor); 0: never
  int64_t ended_us = 0;           ///< when it reached a terminal state; 0: not yet
  /// Options an operator changed (updateTask), in force for the task's attempts; null: none.
  SharedOverrides options;
  /// Changes made while an attempt was on an executor: in force once it leaves the executor.
  SharedOverrides pending_options;
  uint64_t applied = 0;           ///< events applied

  /// Applies one of this task's events. NOT_ALLOWED_IN_STATE if the table refuses it (a
  /// history that cannot have been written by troupe), INVALID_ARGUMENT for a body that is no
  /// task event.
  Result<void> apply(const EventView& event);

  /// Time since first start, pauses excluded.
  Duration elapsed(int64_t now_us) const;

  /// The last failure for people: "SpawnFailed: cannot run 'x': No such file or directory"
  /// (reason, then details when there are any).
  std::string failure_message() const;
  /// Deadline's NEVER_ATTEMPTED: killed by its session, its current attempt never having run.
  bool never_attempted() const {
    return state == TaskState::KILLED && kill_never_attempted && ran_attempt < std::max<uint32_t>(attempt, 1);
  }
  /// The attempt a start (or a dispatch that is the start) begins: the first of the round.
  uint32_t starting_attempt() const { return attempt == attempt_base ? attempt_base + 1 : attempt; }

  /// `spec` with the options an operator gave in force (`with_pending`: and those waiting for
  /// the attempt on an executor to end, as the next attempt will have them).
  TaskSpec effective(const TaskSpec& spec, bool with_pending) const;

  /// Every field, in a fixed order: equal strings mean equal models.
  std::string canonical() const;

  /// The machine event a task body stands for in `state`; nullopt for bodies that are not
  /// task events.
  static std::optional<TaskEvent> event_of(schema::EventBody::Which body, TaskState state);
};

/// Writes the overrides an update resolved to as a taskOptionsUpdated body.
void write_options(schema::TaskOptionsUpdated::Builder out, const TaskOverrides& overrides);
/// Reads a taskOptionsUpdated body back.
TaskOverrides read_options(schema::TaskOptionsUpdated::Reader in);

}  // namespace troupe::actors
