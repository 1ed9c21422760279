// The sessions a worker node holds, as plain code: for each, its SessionRunner, the invocations
// waiting for their turn, its envEnter and envExit invocations, and who waits for their
// outcomes. The worker agent tells it what the scheduler asked and how invocations ended, and
// carries out what it answers: start an invocation on the executor, end a task that never ran,
// answer an openSession or closeSession, write a line to the session's log.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/agent/session_runner.hpp"
#include "actors/caf_types.hpp"

namespace troupe::actors {

struct SessionOpening {
  std::string id;  ///< WORKFLOW/SESSION
  std::string workflow_id;
  std::string name;
  std::string directory;              ///< the session's own directory on this worker
  std::optional<Invocation> env_enter;
  std::optional<Invocation> env_exit;
};

/// An openSession or closeSession that can be answered now.
struct SessionAnswer {
  std::string session;
  bool opening = true;                ///< openSession's answer, else closeSession's
  uint64_t call = 0;                  ///< the call's number (HostedSessions::next_call)
  std::optional<TaskReport> outcome;  ///< the action's outcome; empty: there was none to run
};

/// What the agent does after a call, in this order.
struct SessionEffects {
  std::vector<Invocation> start;        ///< to run on the executor now
  std::vector<std::string> never_ran;   ///< task invocations that end cancelled without running
  std::vector<SessionAnswer> answers;
  std::vector<std::pair<std::string /* session */, std::string /* line */>> log;
};

class HostedSessions {
 public:
  /// Numbers an openSession or closeSession call, so that its answer finds it.
  uint64_t next_call() { return ++calls_; }

  /// Opens the session (the caller made its directory). A session open already answers `call`
  /// as it answered the first opening, once envEnter has ended. A session closed here before is
  /// opened anew (a re-established or recreated session enters again); one closing now is
  /// opened anew once it closed (the scheduler closed it, then placed it here again).
  SessionEffects open(SessionOpening opening, uint64_t call);
  /// Closes the session: `call` is answered once envExit (if it runs) has ended. A session this
  /// worker does not hold is answered at once, with nothing run.
  SessionEffects close(const std::string& session, uint64_t call);

  /// Whether `session` is open here and takes tasks (a task of a session that is not, or no
  /// more, is refused: it never starts).
  bool takes_tasks(const std::string& session) const;
  /// A task of an open session: it runs after what runs or is queued. Its session_dir is set.
  /// After a task of the session that did not succeed, a new task (its retry, or another the
  /// scheduler granted a slot) is the scheduler's word that the session goes on: the queue moves
  /// again. The scheduler sends none once the failure was final; it closes the session.
  SessionEffects add_task(Invocation invocation);
  /// Whether the invocation is one of the sessions' (an env action, or a task running or queued).
  bool owns(const std::string& invocation_id) const { return owner_.count(invocation_id) > 0; }
  /// Whether it is an env action (whose reports are not the scheduler's task reports).
  bool is_env_action(const std::string& invocation_id) const;
  /// A queued task's cancellation: it ends at once without running. Nothing for one that runs
  /// (its executor stops it) or that is not queued.
  SessionEffects cancel_queued(const std::string& invocation_id);
  /// The invocation ended with `outcome` (SUCCEEDED, FAILED, CANCELLED, INTERRUPTED, HANDED_OFF).
  SessionEffects ended(const std::string& invocation_id, const TaskReport& outcome);

  /// The directory of a session held here; empty if none.
  std::string directory(const std::string& session) const;
  /// The ids of the sessions open here (not closed), sorted.
  std::vector<std::string> open_ids() const;
  /// How many sessions are open here (not closed): open_ids().size(), without the copies.
  size_t open_count() const;
  /// The env actions running, to interrupt when the worker shuts down.
  std::vector<std::string> running_env_actions() const;
  /// The tasks waiting for their turn in some session, sorted.
  std::vector<std::string> queued_tasks() const;

 private:
  struct Hosted {
    SessionOpening opening;
    SessionRunner runner{false, false};
    std::map<std::string, Invocation> queued;  ///< tasks waiting for their turn, by invocation id
    std::vector<uint64_t> open_calls;          ///< openSession calls waiting for envEnter
    std::vector<uint64_t> close_calls;         ///< closeSession calls waiting for envExit
    std::optional<TaskReport> enter_outcome;   ///< envEnter's, once it ended (succeeded without one)
    bool entered_answered = false;
    std::optional<TaskReport> exit_outcome;
    bool closed = false;
  };

  /// Carries out a runner's step for session `key`.
  void apply(Hosted& hosted, const SessionStep& step, SessionEffects& effects);
  static std::string describe(const TaskReport& outcome);
  /// Drops a closed session and its env actions' ids.
  void forget(const std::string& session);
  /// Opens the sessions whose openings waited for their earlier instance to close, if it has.
  void open_deferred(SessionEffects& effects);

  std::map<std::string, Hosted> sessions_;
  std::map<std::string, std::string> owner_;  ///< invocation id -> session, for actions and tasks
  /// Sessions closed here, oldest first: a late closeSession finds their answer; the oldest are
  /// forgotten beyond a bound.
  std::deque<std::string> closed_order_;
  /// Openings of sessions that were closing here, in the order they came: opened once closed.
  std::vector<std::pair<SessionOpening, uint64_t>> deferred_opens_;
  uint64_t calls_ = 0;
};

/// A TaskReport's kind as a session action's outcome.
SessionActionOutcome session_outcome_of(const TaskReport& report);

}  // namespace troupe::actors
