// Decoding watched events into plain values, and the per-history invariants.
#include "test/chaos/history_check.hpp"

#include <capnp/dynamic.h>
#include <capnp/serialize-packed.h>
#include <kj/io.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include "schema/history.capnp.h"

namespace troupe::chaos {
namespace {

std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

const char* timeout_name(schema::TimeoutKind kind) {
  switch (kind) {
    case schema::TimeoutKind::SCHEDULE_TO_START:
      return "Timeout:scheduleToStart";
    case schema::TimeoutKind::START_TO_CLOSE:
      return "Timeout:startToClose";
    case schema::TimeoutKind::SCHEDULE_TO_CLOSE:
      return "Timeout:scheduleToClose";
    case schema::TimeoutKind::HEARTBEAT:
      return "Timeout:heartbeat";
  }
  return "Timeout:?";
}

const char* actor_kind_name(schema::ActorKind kind) {
  auto enumerant = capnp::toDynamic(kind).getEnumerant();
  KJ_IF_MAYBE (e, enumerant) {
    return e->getProto().getName().cStr();
  }
  return "?";
}

bool ends_invocation(const std::string& kind) {
  return kind == "taskSucceeded" || kind == "taskFailed" || kind == "taskKilled" ||
         kind == "taskTimedOut";
}

bool reports_on_invocation(const std::string& kind) {
  return kind == "taskRunning" || kind == "taskHeartbeat" || kind == "taskAwaitingCompletion";
}

}  // namespace

std::string Event::describe() const {
  std::ostringstream out;
  out << "#" << sequence << " " << timestamp_us << " " << actor_kind << " " << actor_id
      << " attempt " << attempt << " " << kind;
  if (!invocation.empty()) out << " invocation=" << invocation;
  if (!worker.empty()) out << " worker=" << worker;
  if (!reason.empty()) out << " reason=" << reason;
  if (next_attempt) out << " nextAttempt=" << next_attempt;
  if (!failover_kind.empty()) out << " kind=" << failover_kind;
  return out.str();
}

Event decode_event(const std::string& packed) {
  kj::ArrayInputStream input(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(packed.data()), packed.size()));
  capnp::PackedMessageReader reader(input);
  auto e = reader.getRoot<schema::HistoryEvent>();
  Event out;
  out.sequence = e.getSequence();
  out.timestamp_us = e.getTimestampUs();
  out.actor_kind = actor_kind_name(e.getActorKind());
  out.actor_id = text(e.getActorId());
  out.attempt = e.getAttempt();
  auto body = e.getBody();
  KJ_IF_MAYBE (field, capnp::toDynamic(body).which()) {
    out.kind = field->getProto().getName().cStr();
  } else {
    throw std::runtime_error("history event #" + std::to_string(out.sequence) +
                             " has a body this test does not know");
  }
  using B = schema::EventBody;
  switch (body.which()) {
    case B::TASK_DISPATCHED:
      out.invocation = text(body.getTaskDispatched().getInvocationId());
      out.worker = text(body.getTaskDispatched().getWorkerShard());
      break;
    case B::TASK_RUNNING:
      out.invocation = text(body.getTaskRunning().getInvocationId());
      break;
    case B::TASK_KILLED:
      out.invocation = text(body.getTaskKilled().getInvocationId());
      break;
    case B::TASK_AWAITING_COMPLETION:
      out.invocation = text(body.getTaskAwaitingCompletion().getInvocationId());
      break;
    case B::TASK_HEARTBEAT:
      out.invocation = text(body.getTaskHeartbeat().getInvocationId());
      break;
    case B::TASK_SUCCEEDED:
      out.invocation = text(body.getTaskSucceeded().getInvocationId());
      break;
    case B::TASK_FAILED:
      out.invocation = text(body.getTaskFailed().getInvocationId());
      out.reason = text(body.getTaskFailed().getFailure().getReason());
      break;
    case B::TASK_TIMED_OUT:
      out.invocation = text(body.getTaskTimedOut().getInvocationId());
      out.reason = timeout_name(body.getTaskTimedOut().getKind());
      break;
    case B::TASK_RETRY_SCHEDULED:
      out.next_attempt = body.getTaskRetryScheduled().getNextAttempt();
      out.reason = text(body.getTaskRetryScheduled().getCause().getReason());
      break;
    case B::TASK_FAILOVER: {
      auto f = body.getTaskFailover();
      out.invocation = text(f.getInvocationId());
      out.worker = text(f.getWorkerShard());
      out.reason = text(f.getReason());
      KJ_IF_MAYBE (e, capnp::toDynamic(f.getKind()).getEnumerant()) {
        out.failover_kind = e->getProto().getName().cStr();
      }
      break;
    }
    case B::WORKFLOW_FAILED:
      out.reason = text(body.getWorkflowFailed().getReason());
      break;
    case B::WORKFLOW_FAILOVER:
      out.reason = text(body.getWorkflowFailover().getReason());
      break;
    case B::WORKFLOW_STOP_REQUESTED:
      out.reason = text(body.getWorkflowStopRequested().getText());
      break;
    case B::TASK_KILL_REQUESTED:
      out.reason = text(body.getTaskKillRequested().getText());
      break;
    case B::WORKFLOW_RERUN:
      out.reason = text(body.getWorkflowRerun().getRunFrom());
      break;
    default:
      break;
  }
  return out;
}

std::string invocation_suffix(const std::string& invocation_id) {
  const auto slash = invocation_id.rfind('/');
  return slash == std::string::npos ? invocation_id : invocation_id.substr(slash + 1);
}

HistoryAnalysis analyse_history(const std::string& workflow_id, const std::vector<Event>& events) {
  HistoryAnalysis a;
  a.workflow_id = workflow_id;
  struct Track {
    std::string last_invocation;
    bool any_invocation = false;
    bool has_pending = false;  ///< a recorded reason waits for the next dispatch
    std::string pending;
    bool since_rerun = false;  ///< a workflowRerun made a fresh instance: its attempts count anew
  };
  std::map<std::string, Track> tasks;
  auto problem = [&](const Event& e, const std::string& what) {
    a.problems.push_back({e.sequence, workflow_id + ": " + what + " [" + e.describe() + "]"});
  };
  uint64_t expected = 1;
  bool finalized = false;
  for (const auto& e : events) {
    if (e.sequence != expected) {
      problem(e, "history sequence jumps from #" + std::to_string(expected - 1) + " to #" +
                     std::to_string(e.sequence) +
                     (e.sequence < expected ? " (a repeat)" : " (a gap)"));
    }
    expected = e.sequence + 1;
    a.last_sequence = e.sequence;
    if (finalized && e.kind != "workflowRerun") problem(e, e.kind + " after workflowFinalized");

    if (e.kind == "workflowRerun") {
      finalized = false;
      a.final_state.clear();
      a.failure_reason.clear();
      a.closed_us = 0;
      ++a.reruns;
      for (auto& [name, track] : tasks) {
        if (track.any_invocation) {
          track.has_pending = true;
          track.pending = "rerun";
        }
        track.since_rerun = true;
      }
    } else if (e.kind == "workflowSucceeded") {
      a.final_state = "SUCCESS";
    } else if (e.kind == "workflowFailed") {
      a.final_state = "FAILED";
      a.failure_reason = e.reason;
    } else if (e.kind == "workflowStopped") {
      a.final_state = "STOPPED";
    } else if (e.kind == "workflowFinalized") {
      finalized = true;
      a.closed_us = e.timestamp_us;
      for (const auto& [id, record] : a.invocations) {
        if (record.ended_by.empty())
          problem(e, "the workflow closed while invocation " + id + " had not ended");
      }
    } else if (e.kind == "taskDispatched") {
      if (e.invocation.empty()) {
        problem(e, "taskDispatched without an invocation id");
        continue;
      }
      if (a.invocations.count(e.invocation)) {
        problem(e, "invocation " + e.invocation + " dispatched a second time (first at #" +
                       std::to_string(a.invocations[e.invocation].dispatched_seq) + ")");
        continue;
      }
      Track& track = tasks[e.actor_id];
      InvocationRecord record;
      record.id = e.invocation;
      record.task = e.actor_id;
      record.attempt = e.attempt;
      record.worker = e.worker;
      record.dispatched_seq = e.sequence;
      record.dispatched_us = e.timestamp_us;
      record.rerun = track.any_invocation;
      if (!track.last_invocation.empty()) {
        const auto& previous = a.invocations[track.last_invocation];
        if (previous.ended_by.empty()) {
          problem(e, "invocation " + e.invocation + " dispatched while " + previous.id +
                         " (dispatched at #" + std::to_string(previous.dispatched_seq) +
                         ") had not ended");
        }
      }
      if (track.has_pending) {
        record.rerun_reason = track.pending;
      } else if (record.rerun) {
        const auto& previous = a.invocations[track.last_invocation];
        problem(e, "invocation " + e.invocation + " re-runs task " + e.actor_id +
                       " with no recorded reason (" + previous.id + " ended by " +
                       (previous.ended_by.empty() ? "nothing" : previous.ended_by) +
                       ", no taskRetryScheduled or workflowRerun since)");
      }
      const std::string suffix = invocation_suffix(e.invocation);
      if (suffix.substr(0, suffix.find('.')) != std::to_string(e.attempt)) {
        problem(e, "invocation " + e.invocation + " is dispatched for attempt " +
                       std::to_string(e.attempt));
      }
      track.has_pending = false;
      track.pending.clear();
      track.any_invocation = true;
      track.since_rerun = false;
      track.last_invocation = e.invocation;
      a.invocations[e.invocation] = record;
      a.dispatch_order.push_back(e.invocation);
    } else if (reports_on_invocation(e.kind) || e.kind == "taskFailover" ||
               ends_invocation(e.kind)) {
      if (e.invocation.empty()) {
        // A timeout or kill of an attempt that was never dispatched (scheduleToStart in a task
        // list nobody serves, a kill while waiting): it ends the task, not an invocation.
        if (!ends_invocation(e.kind)) problem(e, e.kind + " without an invocation id");
        tasks[e.actor_id].has_pending = false;
        continue;
      }
      auto it = a.invocations.find(e.invocation);
      if (it == a.invocations.end()) {
        problem(e, e.kind + " for invocation " + e.invocation + ", which was never dispatched");
        continue;
      }
      auto& record = it->second;
      if (!record.ended_by.empty()) {
        problem(e, "a second completion of invocation " + e.invocation + ": " + e.kind + " after " +
                       record.ended_by + " at #" + std::to_string(record.ended_seq));
        continue;
      }
      if (tasks[e.actor_id].last_invocation != e.invocation) {
        problem(e, e.kind + " for invocation " + e.invocation + ", superseded by " +
                       tasks[e.actor_id].last_invocation);
      }
      if (e.kind == "taskRunning") {
        record.running = true;
      } else if (e.kind == "taskFailover") {
        if (record.failed_over) problem(e, "a second taskFailover of invocation " + e.invocation);
        record.failed_over = true;
        record.failover_us = e.timestamp_us;
        // It never ran, or its worker stopped it to shut down: it is over, and the task dispatches
        // it again under the same attempt (a taskRetryScheduled naming the same attempt may say when).
        const bool never_ran = e.failover_kind == "neverStarted";
        if (never_ran || e.failover_kind == "interrupted") {
          if (never_ran && record.running)
            problem(e, "invocation " + e.invocation +
                           " failed over as never started after its taskRunning");
          const char* const kept = never_ran ? never_started : interrupted;
          record.ended_by = e.kind;
          record.end_reason = kept;
          record.ended_seq = e.sequence;
          record.ended_us = e.timestamp_us;
          tasks[e.actor_id].has_pending = true;
          tasks[e.actor_id].pending = kept;
        }
      } else if (ends_invocation(e.kind)) {
        record.ended_by = e.kind;
        record.end_reason = e.reason;
        record.ended_seq = e.sequence;
        record.ended_us = e.timestamp_us;
        tasks[e.actor_id].has_pending = false;
      }
    } else if (e.kind == "taskRetryScheduled") {
      Track& track = tasks[e.actor_id];
      bool after_never_started = false;
      if (!track.last_invocation.empty() && !track.since_rerun) {
        auto& record = a.invocations[track.last_invocation];
        // Nothing of the task came between (its next dispatch would have taken the pending reason).
        // (or interrupted: either keeps the attempt)
        const bool kept = record.end_reason == never_started || record.end_reason == interrupted;
        after_never_started = record.attempt == e.attempt && kept && track.has_pending &&
                              track.pending == record.end_reason;
      }
      if (e.next_attempt != e.attempt + 1 &&
          !(after_never_started && e.next_attempt == e.attempt)) {
        problem(e, "taskRetryScheduled of attempt " + std::to_string(e.attempt) +
                       " names attempt " + std::to_string(e.next_attempt) + " next");
      }
      if (after_never_started) {
        // The failover's own retry decision: the attempt is kept when it names the same one.
        track.has_pending = true;
        track.pending = e.next_attempt == e.attempt ? track.pending
                                                    : (e.reason.empty() ? "(no cause)" : e.reason);
        continue;
      }
      if (!track.last_invocation.empty() && !track.since_rerun) {
        auto& record = a.invocations[track.last_invocation];
        if (record.attempt == e.attempt) {
          if (record.ended_by.empty()) {
            record.ended_by = e.kind;
            record.end_reason = e.reason;
            record.ended_seq = e.sequence;
            record.ended_us = e.timestamp_us;
          } else {
            problem(e, "a second completion of invocation " + record.id +
                           ": taskRetryScheduled after " + record.ended_by + " at #" +
                           std::to_string(record.ended_seq));
          }
        }
      }
      track.has_pending = true;
      track.pending = e.reason.empty() ? "(no cause)" : e.reason;
    }
  }
  return a;
}

std::string excerpt(const std::vector<Event>& events, uint64_t sequence, size_t radius) {
  std::ostringstream out;
  for (const auto& e : events) {
    if (e.sequence + radius >= sequence && e.sequence <= sequence + radius)
      out << "    " << e.describe() << "\n";
  }
  return out.str();
}

std::string task_excerpt(const std::vector<Event>& events, const std::string& task, size_t limit) {
  std::ostringstream out;
  size_t shown = 0;
  for (const auto& e : events) {
    if (e.actor_kind == "task" && e.actor_id != task) continue;
    if (e.kind == "workflowSubmitted") continue;  // the definition is long and the same for all
    if (++shown > limit) {
      out << "    ...\n";
      break;
    }
    out << "    " << e.describe() << "\n";
  }
  return out.str();
}

}  // namespace troupe::chaos
