// The worker actor's state and the functions its two files share: worker_actor.cpp (health,
// the invocations the worker was given, the worker protocol) and worker_standing.cpp (the
// shard's standing, drains, quarantine, its record and the operators' view). Included by those
// two files only.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/response_promise.hpp>
#include <caf/typed_response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/system/actor_roster.hpp"
#include "actors/worker/recorded_answers.hpp"
#include "actors/worker/standing_machine.hpp"
#include "actors/worker/worker_actor.hpp"

namespace troupe::actors::worker_detail {

struct Given {
  task_port task;
  std::string task_list;
  bool unsure = false;   ///< runTask's outcome is unknown: it may or may not run
  bool adopted = false;  ///< taken back after a scheduler restart, not sent by this actor
  bool holds_slot = true;  ///< counted in its task list's credit (an adopted one: once claimed)
  bool started = false;  ///< the worker said it runs (or ran) it
  bool ended = false;    ///< the worker said it ended; its outcome has not arrived
  Fence fence{};         ///< the fence its runTask carried (for an adopted one: as recorded)
  std::string task_name{};  ///< WORKFLOW/TASK, for the worker's failure streak and recent list
  uint32_t attempt = 0;
};

/// What runTask's answer said, as the link's callback tells the actor.
enum class Sent : uint8_t {
  STARTED,  ///< the worker runs it
  REFUSED,  ///< the worker refused it: it never started
  UNKNOWN,  ///< the call failed: it may or may not run
  ENDED,    ///< it ended already; its outcome follows as a report of its own
};

struct WorkerActorState {
  static inline const char* name = "worker";
  WorkerSetup setup;
  HealthState health = HealthState::NEW;
  caf::actor_clock::time_point last_heartbeat;
  uint64_t timer_generation = 0;
  uint64_t link_epoch = 0;  ///< answers from an older link are ignored
  bool querying = false;
  std::map<std::string, Given> given;        ///< by invocation id
  std::set<std::string> cancel_requested;
  std::deque<std::string> finished_order;    ///< recently finished, for duplicate updates
  std::set<std::string> finished;
  /// Invocations the worker runs that no task has claimed yet, kept for adoption until the
  /// recovery window closes.
  std::set<std::string> orphans;
  /// Invocations the worker's last getRunningTasks answer said had ended: their outcomes are on
  /// their way, so holding one is no sign that it still runs.
  std::set<std::string> outcomes_on_the_way;
  /// Outcomes from runTask answers that are durable and not yet acknowledged to the worker.
  std::vector<std::string> acks;
  /// Tasks waiting for an invocation (given or orphaned) to be over before their next attempt.
  std::map<std::string, std::vector<caf::response_promise>> settle_waiters;

  // --- standing (the shard's, kept in its record) ---
  Standing standing = Standing::ACTIVE;
  storage::WorkerDrainRecord drain;
  FailureStreak streak;
  int64_t quarantined_until_us = 0;
  uint64_t standing_timer_generation = 0;
  /// The instance ended with its word that it stopped (not by silence or replacement).
  bool said_stopped = false;
  /// The status last written to the record, so that it is written when it changes.
  std::string recorded_status;
  /// The status the node's log last said it has (at start, the one its record gives it).
  std::string logged_status;
  /// A new instance holds the shard now: its actor keeps the record, not this one.
  bool replaced = false;
  std::deque<RecentInvocation> recent;  ///< newest last
  /// Operators' orders, answered once the record they changed is durable.
  RecordedAnswers answers;

  // --- sessions ---
  /// openSession and closeSession calls waiting for the worker's answer, by call number.
  std::map<uint64_t, caf::typed_response_promise<TaskReport>> session_opens;
  std::map<uint64_t, caf::typed_response_promise<bool, TaskReport>> session_closes;
  uint64_t session_calls = 0;
  /// Session slots of the worker that sessions hold, as the dispatcher counts them.
  uint32_t sessions_held = 0;
  /// What sessions_draining was last told.
  SessionDrain session_drain_told = SessionDrain::NONE;
  RosterSeat seat;
};


using Self = worker_actor::stateful_pointer<WorkerActorState>;

// --- worker_actor.cpp ---

/// Offers the worker's slots to its task lists (`accept`), or withdraws them.
void offer_slots(Self self, bool accept);
/// A dead instance's actor lives on only while something may still run there (invocations it
/// was given, or ones it runs that nobody claimed) or an operator's answer waits for a write.
/// Nobody waits for it once it ends.
void quit_if_done(Self self);

// --- worker_standing.cpp ---

/// The wall clock in µs since the epoch (WorkerSetup::now_us).
int64_t now_us(Self self);
/// Deadline's status of the worker: its health and standing joined.
std::string status_of(Self self);
/// Writes the worker's status to its record when it changed.
void record_status(Self self);
/// The node's log (a log that says nothing when the setup has none).
const NodeLog& log_of(const WorkerActorState& st);
/// Says in the node's log that the worker's status changed, when it did since it last said so;
/// `why` is the event that changed it.
void log_status(Self self, std::string_view why);
/// An invocation it ran ended: the recent list takes it.
void remember_recent(Self self, const std::string& id, const Given& given, std::string outcome);
/// An outcome of a given invocation arrived: it counts in the worker's failure streak (a
/// failure) or ends it (a success), and in its recent list.
void count_outcome(Self self, const Given& given, const TaskReport& report);
/// The standing table's answer to `event`, carried out and recorded.
void handle(Self self, StandingEvent event);
/// The shard's standing as its record keeps it, when the actor starts.
void load_standing(Self self);
/// Invocation `id` turned out to run on the worker: a drain that interrupts stops it too.
void found_running(Self self, const std::string& id);
/// Whether the worker has said what it runs and runs nothing: no invocation it was given, none
/// it runs that a revived task may still take back, no session it holds.
bool runs_nothing(Self self);
/// Tells the dispatcher what the worker's standing now does to its sessions, if that changed.
void tell_session_drain(Self self);
/// IDLE for the standing table (a drain is over) if the worker runs nothing.
void check_idle(Self self);
/// An operator's order, answered with the worker after it once that is durable.
caf::result<WorkerView> answer_order(Self self, const WorkerOrder& order);
/// The write an order's answer waits for is over.
void on_recorded(Self self, uint64_t ticket, const caf::error& failed);
/// The worker as operators see it.
WorkerView view_of(Self self);
/// A standing timer (a WorkerTimer) of generation `generation` is due.
void on_standing_timer(Self self, uint8_t timer, uint64_t generation);

// --- worker_sessions.cpp ---

/// Opens a session on the worker; answered with envEnter's outcome.
caf::result<TaskReport> open_session(Self self, SessionOpen session);
/// Closes a session on the worker; answered with whether envExit ran, and its outcome.
caf::result<bool, TaskReport> close_session(Self self, const std::string& session);
/// The worker answered an openSession or closeSession (call); `failed` is none when it did.
void session_answered(Self self, uint64_t call, bool ran, TaskReport outcome, const caf::error& failed);

}  // namespace troupe::actors::worker_detail
