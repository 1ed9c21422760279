// The vocabulary actors exchange: atoms (at most 10 characters in CAF 0.17), message structs
// with inspect() so CAF can carry and print them, and the one translation point between
// troupe::Error and caf::error. Include from actor code only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/meta/type_name.hpp>

#include "actors/loss.hpp"
#include "actors/task/task_options.hpp"
#include "actors/worker/fence.hpp"
#include "schema/result.hpp"
#include "storage/history_store.hpp"

namespace troupe::storage {
// inspect() for the store's value types, found by argument-dependent lookup.

/// Inspects an enum field as its byte and writes it back when the inspection is over (CAF
/// 0.17 inspectors return void or an error, so the write-back cannot follow a return value).
template <class Enum>
struct EnumByte {
  Enum& field;
  uint8_t byte = static_cast<uint8_t>(field);
  ~EnumByte() { field = static_cast<Enum>(byte); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NewEvent& x) {
  EnumByte<ActorKind> kind{x.actor_kind};
  return f(caf::meta::type_name("NewEvent"), x.timestamp_us, kind.byte, x.actor_id, x.attempt,
           x.body);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkflowRecord& x) {
  EnumByte<WorkflowStatus> status{x.status};
  return f(caf::meta::type_name("WorkflowRecord"), status.byte, x.definition_name,
           x.definition_digest, x.created_us, x.closed_us);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, AppendReceipt& x) {
  return f(caf::meta::type_name("AppendReceipt"), x.first_sequence, x.count);
}

}  // namespace troupe::storage

namespace troupe::actors {

// --- atoms --------------------------------------------------------------------------------
using persisted_atom = caf::atom_constant<caf::atom("persisted")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using pause_atom = caf::atom_constant<caf::atom("pause")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using kill_atom = caf::atom_constant<caf::atom("kill")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using report_atom = caf::atom_constant<caf::atom("report")>;
using enqueue_atom = caf::atom_constant<caf::atom("enqueue")>;
using withdraw_atom = caf::atom_constant<caf::atom("withdraw")>;
using grant_atom = caf::atom_constant<caf::atom("grant")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;
using wake_atom = caf::atom_constant<caf::atom("wake")>;
using finished_atom = caf::atom_constant<caf::atom("finished")>;
using describe_atom = caf::atom_constant<caf::atom("describe")>;
using result_atom = caf::atom_constant<caf::atom("result")>;
using revive_atom = caf::atom_constant<caf::atom("revive")>;
using submit_atom = caf::atom_constant<caf::atom("submit")>;
using lookup_atom = caf::atom_constant<caf::atom("lookup")>;
using recover_atom = caf::atom_constant<caf::atom("recover")>;
using update_atom = caf::atom_constant<caf::atom("update")>;
using join_atom = caf::atom_constant<caf::atom("join")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
using associate_atom = caf::atom_constant<caf::atom("associate")>;
using notify_atom = caf::atom_constant<caf::atom("notify")>;
using sent_atom = caf::atom_constant<caf::atom("sent")>;
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;
using claim_atom = caf::atom_constant<caf::atom("claim")>;
using recovered_atom = caf::atom_constant<caf::atom("recovered")>;
using control_atom = caf::atom_constant<caf::atom("control")>;
using complete_atom = caf::atom_constant<caf::atom("complete")>;
using rerun_atom = caf::atom_constant<caf::atom("rerun")>;
using passivate_atom = caf::atom_constant<caf::atom("passivate")>;
using park_atom = caf::atom_constant<caf::atom("park")>;
using thaw_atom = caf::atom_constant<caf::atom("thaw")>;
using awaken_atom = caf::atom_constant<caf::atom("awaken")>;
using closed_atom = caf::atom_constant<caf::atom("closed")>;
using acknowledge_atom = caf::atom_constant<caf::atom("ack")>;
using settled_atom = caf::atom_constant<caf::atom("settled")>;
using skip_atom = caf::atom_constant<caf::atom("skip")>;
using options_atom = caf::atom_constant<caf::atom("options")>;
using operate_atom = caf::atom_constant<caf::atom("operate")>;
using view_atom = caf::atom_constant<caf::atom("view")>;
using open_atom = caf::atom_constant<caf::atom("open")>;
using close_atom = caf::atom_constant<caf::atom("close")>;
using place_atom = caf::atom_constant<caf::atom("place")>;
using pin_atom = caf::atom_constant<caf::atom("pin")>;
using free_atom = caf::atom_constant<caf::atom("free")>;
using lost_atom = caf::atom_constant<caf::atom("lost")>;
using accept_atom = caf::atom_constant<caf::atom("accept")>;
using session_atom = caf::atom_constant<caf::atom("session")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using probe_atom = caf::atom_constant<caf::atom("probe")>;

// --- errors -------------------------------------------------------------------------------

/// CAF's error category for troupe's Errc codes.
inline constexpr caf::atom_value troupe_error_category = caf::atom("troupe");

/// Error -> caf::error, keeping code and message.
caf::error to_caf(const Error& error);
/// caf::error -> Error: troupe's own errors keep their code and message; CAF's become
/// INTERNAL (or TIMED_OUT for a request timeout) with CAF's description.
Error from_caf(const caf::error& error);

// --- messages -----------------------------------------------------------------------------

/// A batch of events for one workflow, with its index record when it changes.
struct EventBatch {
  std::vector<storage::NewEvent> events;
  bool has_record = false;
  storage::WorkflowRecord record;
};

/// One execution of one attempt of a task, as sent to an executor.
struct Invocation {
  std::string invocation_id;  ///< unique; reports name it
  std::string workflow_id;
  std::string task_name;
  std::string task_list;
  std::string executor;                ///< the executor (worker shard) that granted the slot
  uint32_t attempt = 0;
  std::string handler;                 ///< a registered handler's name, or empty for shell
  std::vector<std::string> command;    ///< argv of a shell task
  std::vector<std::string> env;        ///< NAME=value pairs of a shell task
  std::string cwd;
  std::string input_json;              ///< TROUPE_INPUT: the task's own input, else the workflow's
  std::string progress;                ///< the last heartbeat's progress, from earlier attempts
  int64_t heartbeat_timeout_us = 0;    ///< the task's heartbeat timeout; 0: none
  bool async_completion = false;       ///< a successful end hands the task off (HANDED_OFF)
  std::string task_token;              ///< set by the scheduler's link to the worker, not by the task
  Fence fence;                         ///< recorded with taskDispatched; runTask carries it
  /// TROUPE_WORKFLOW_INPUT: the workflow's input; empty when it is input_json (a task without an
  /// input of its own), so that it is carried once.
  std::string workflow_input_json;
  /// The session it runs in (WORKFLOW/SESSION); empty: none. On the worker, the session's
  /// directory too (TROUPE_SESSION_DIR, and the default working directory of its shell tasks).
  std::string session_id;
  std::string session_dir;
};

/// Sets what `invocation` runs from a definition's body (a task's, or a session action's): the
/// handler's name, or the shell command with its env (NAME=value) and cwd.
void set_body(Invocation& invocation, const TaskBody& body);

/// What an executor says about an invocation.
struct TaskReport {
  enum Kind : uint8_t {
    STARTED,
    HEARTBEAT,
    SUCCEEDED,
    FAILED,
    CANCELLED,
    LOST,  ///< the executor running it was lost (a worker declared MUST_DIE)
    HANDED_OFF,  ///< asyncCompletion: the invocation is done; its token will end the task
    INTERRUPTED,  ///< its worker stopped it to shut down: not the task's failure
  };
  std::string invocation_id;
  uint8_t kind = STARTED;
  std::string payload;   ///< the result (SUCCEEDED) or the progress (HEARTBEAT)
  std::string reason;    ///< FAILED: a short reason, e.g. "ExitCode:3"
  std::string details;
  bool non_retryable = false;
  Loss loss = Loss::MAY_HAVE_STARTED;  ///< LOST: what is known of it
  /// An outcome's end on the scheduler's wall clock (µs since the epoch), no earlier than the
  /// true end; 0: unknown, take the time it arrives.
  int64_t ended_at_us = 0;
};

/// A session to open on its worker (worker.capnp SessionOpening).
struct SessionOpen {
  std::string id;  ///< WORKFLOW/SESSION
  std::string workflow_id;
  std::string name;
  /// Run before its first task and when it closes; empty invocation ids: none.
  Invocation env_enter;
  Invocation env_exit;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SessionOpen& x) {
  return f(caf::meta::type_name("SessionOpen"), x.id, x.workflow_id, x.name, x.env_enter, x.env_exit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, EventBatch& x) {
  return f(caf::meta::type_name("EventBatch"), x.events, x.has_record, x.record);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Invocation& x) {
  return f(caf::meta::type_name("Invocation"), x.invocation_id, x.workflow_id, x.task_name,
           x.task_list, x.executor, x.attempt, x.handler, x.command, x.env, x.cwd, x.input_json, x.progress,
           x.heartbeat_timeout_us, x.async_completion, x.task_token, x.fence.epoch, x.fence.sequence,
           x.workflow_input_json, x.session_id, x.session_dir);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskOptionsPatch& x) {
  return f(caf::meta::type_name("TaskOptionsPatch"), x.task_list, x.set_priority, x.priority, x.schedule_to_start,
           x.start_to_close, x.schedule_to_close, x.heartbeat, x.retry_json, x.remove_retry);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskReport& x) {
  storage::EnumByte<Loss> loss{x.loss};
  return f(caf::meta::type_name("TaskReport"), x.invocation_id, x.kind, x.payload, x.reason,
           x.details, x.non_retryable, loss.byte, x.ended_at_us);
}

}  // namespace troupe::actors

