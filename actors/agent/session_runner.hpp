// The order of one session's actions on its worker, as plain code: envEnter first, then the
// session's tasks one at a time in the order the scheduler sends them (their DAG order), then
// envExit when the scheduler closes the session, when envEnter failed, or when the worker shuts
// down. Deadline Cloud's outcome rules:
//  - a FAILED, CANCELED or INTERRUPTED envEnter stops the session's tasks: those queued, and
//    any sent later, end NEVER_ATTEMPTED (never started, no start or end time);
//  - a NEVER_ATTEMPTED is never reported before the final status of the action that caused it;
//  - envExit runs for every session that was opened (its envEnter attempted, whatever its
//    outcome, or none to run), after the action running when the session closes; a failed
//    envExit affects only itself.
// A task that does not succeed holds the session: no queued task starts until the scheduler,
// which alone knows whether that was its last attempt, says proceed() (a retry comes as another
// task) or close() (it failed for good: the queued tasks end NEVER_ATTEMPTED).
// The runner decides; its owner starts what it says and reports what it lists, in order.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::actors {

enum class SessionActionKind : uint8_t { ENV_ENTER, TASK, ENV_EXIT };

enum class SessionActionOutcome : uint8_t { SUCCEEDED, FAILED, CANCELED, INTERRUPTED, NEVER_ATTEMPTED };

struct SessionActionRef {
  SessionActionKind kind = SessionActionKind::TASK;
  std::string id;  ///< a task's invocation id; empty for envEnter and envExit
  friend bool operator==(const SessionActionRef&, const SessionActionRef&) = default;
};

/// What the owner does after a call: report these outcomes in this order, then start `start`.
struct SessionStep {
  std::vector<std::pair<SessionActionRef, SessionActionOutcome>> report;
  std::optional<SessionActionRef> start;
  bool closed = false;  ///< the session is over on this worker: nothing runs or will
};

class SessionRunner {
 public:
  SessionRunner(bool has_env_enter, bool has_env_exit)
      : has_env_enter_(has_env_enter), has_env_exit_(has_env_exit) {}

  /// The session opens here: envEnter starts, or, without one, the session is entered at once.
  SessionStep open();
  /// A task of the session (its invocation id) is to run: now, after what runs or is queued,
  /// or NEVER_ATTEMPTED if the session stopped taking tasks.
  SessionStep add_task(std::string invocation_id);
  /// The action running ended with `outcome` (not NEVER_ATTEMPTED). An id that is not the
  /// running action's changes nothing.
  SessionStep ended(const SessionActionRef& action, SessionActionOutcome outcome);
  /// A queued task is taken back (cancelled before it ran): true if it was queued. It ends
  /// NEVER_ATTEMPTED, which the caller reports.
  bool withdraw(const std::string& invocation_id);
  /// After a task that did not succeed: it will be retried, so the queued tasks may run.
  SessionStep proceed();
  /// The scheduler closes the session (its tasks are over, it was cancelled or timed out), or
  /// the worker shuts down: queued tasks end NEVER_ATTEMPTED once the running action has ended,
  /// then envExit runs if the session was opened, then the session is closed.
  SessionStep close();

  /// The action running now, if any.
  const std::optional<SessionActionRef>& running() const { return running_; }
  /// envEnter succeeded (or there is none) and the session still takes tasks.
  bool takes_tasks() const { return entered_ && !stopped_; }
  bool closed() const { return closed_; }
  /// It was told to close (or envEnter failed) and is not closed yet.
  bool closing() const { return closing_ && !closed_; }

 private:
  /// What to do now that nothing runs: the next queued task, envExit, or closing.
  void next(SessionStep& step);
  /// Every queued task ends NEVER_ATTEMPTED, in the order they came.
  void never_attempt_queued(SessionStep& step);

  bool has_env_enter_;
  bool has_env_exit_;
  bool opened_ = false;
  bool entered_ = false;   ///< envEnter succeeded, or there is none
  bool stopped_ = false;   ///< takes no more tasks: envEnter did not succeed, or it is closing
  bool held_ = false;      ///< a task did not succeed: nothing starts until proceed() or close()
  bool closing_ = false;
  bool exit_started_ = false;
  bool closed_ = false;
  std::optional<SessionActionRef> running_;
  std::deque<std::string> queued_;
};

}  // namespace troupe::actors
