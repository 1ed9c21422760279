// The schedule's invariants, from the histories and the workers' ledger.
#include "test/sim/sim_checks.hpp"

#include <map>
#include <set>

#include "actors/invocation_id.hpp"
#include "schema/history.capnp.h"
#include "storage/codec.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/history.hpp"

namespace troupe::sim {
namespace {

/// The fields of a history event the checks read.
struct Event {
  uint64_t sequence = 0;
  Time at{0};
  bool task = false;
  std::string actor;
  uint32_t attempt = 0;
  std::string kind;
  std::string invocation;
  std::string worker;
  std::string reason;
  uint32_t next_attempt = 0;
  schema::FailoverKind failover = schema::FailoverKind::MAY_HAVE_STARTED;

  std::string describe() const {
    std::string out = "#" + std::to_string(sequence) + " at " + show(at) + " " + actor + " attempt " +
                      std::to_string(attempt) + " " + kind;
    if (!invocation.empty()) out += " " + invocation;
    if (!worker.empty()) out += " on " + worker;
    if (!reason.empty()) out += " (" + reason + ")";
    return out;
  }
};

const char* timeout_reason(schema::TimeoutKind kind) {
  switch (kind) {
    case schema::TimeoutKind::SCHEDULE_TO_START: return "Timeout:scheduleToStart";
    case schema::TimeoutKind::START_TO_CLOSE: return "Timeout:startToClose";
    case schema::TimeoutKind::SCHEDULE_TO_CLOSE: return "Timeout:scheduleToClose";
    case schema::TimeoutKind::HEARTBEAT: return "Timeout:heartbeat";
  }
  return "Timeout:?";
}

const char* failover_name(schema::FailoverKind kind) {
  switch (kind) {
    case schema::FailoverKind::MAY_HAVE_STARTED: return "mayHaveStarted";
    case schema::FailoverKind::NEVER_STARTED: return "neverStarted";
    case schema::FailoverKind::LOST_WHILE_RUNNING: return "lostWhileRunning";
    case schema::FailoverKind::RESULT_LOST: return "resultLost";
    case schema::FailoverKind::INTERRUPTED: return "interrupted";
  }
  return "?";
}

Event read_event(const storage::DecodedEvent& decoded) {
  auto e = decoded.get();
  Event out;
  out.sequence = e.getSequence();
  out.at = Time(e.getTimestampUs() - test::ActorFixture::epoch_us);
  out.task = e.getActorKind() == schema::ActorKind::TASK;
  out.actor = e.getActorId().cStr();
  out.attempt = e.getAttempt();
  out.kind = test::body_kind(decoded);
  auto body = e.getBody();
  switch (body.which()) {
    case schema::EventBody::TASK_DISPATCHED:
      out.invocation = body.getTaskDispatched().getInvocationId().cStr();
      out.worker = body.getTaskDispatched().getWorkerShard().cStr();
      break;
    case schema::EventBody::TASK_RUNNING: out.invocation = body.getTaskRunning().getInvocationId().cStr(); break;
    case schema::EventBody::TASK_HEARTBEAT: out.invocation = body.getTaskHeartbeat().getInvocationId().cStr(); break;
    case schema::EventBody::TASK_KILLED: out.invocation = body.getTaskKilled().getInvocationId().cStr(); break;
    case schema::EventBody::TASK_SUCCEEDED: out.invocation = body.getTaskSucceeded().getInvocationId().cStr(); break;
    case schema::EventBody::TASK_FAILED:
      out.invocation = body.getTaskFailed().getInvocationId().cStr();
      out.reason = body.getTaskFailed().getFailure().getReason().cStr();
      break;
    case schema::EventBody::TASK_TIMED_OUT:
      out.invocation = body.getTaskTimedOut().getInvocationId().cStr();
      out.reason = timeout_reason(body.getTaskTimedOut().getKind());
      break;
    case schema::EventBody::TASK_RETRY_SCHEDULED:
      out.next_attempt = body.getTaskRetryScheduled().getNextAttempt();
      out.reason = body.getTaskRetryScheduled().getCause().getReason().cStr();
      break;
    case schema::EventBody::TASK_FAILOVER:
      out.invocation = body.getTaskFailover().getInvocationId().cStr();
      out.worker = body.getTaskFailover().getWorkerShard().cStr();
      out.failover = body.getTaskFailover().getKind();
      out.reason = failover_name(out.failover);
      break;
    case schema::EventBody::WORKFLOW_FAILED: out.reason = body.getWorkflowFailed().getReason().cStr(); break;
    default: break;
  }
  return out;
}

/// An invocation as its history records it.
struct Dispatch {
  std::string task;
  uint32_t attempt = 0;
  std::string shard;
  Time at{0};
  const Event* failover = nullptr;
};

class Checker {
 public:
  explicit Checker(const Ledger& ledger) : ledger_(ledger) {
    for (const auto& run : ledger.runs()) runs_[run.invocation].push_back(&run);
  }

  void workflow(const WorkflowDesign& design, std::vector<Event> history) {
    design_ = &design;
    const auto& events = histories_[design.id] = std::move(history);
    events_ = &events;
    bool failure_explained = false;  // a task failed for good for a worker-side cause
    std::map<std::string, std::string> open;  // task -> its open invocation
    std::set<std::string> ended_tasks;
    std::map<std::string, Dispatch> dispatches;
    bool finalized = false;
    std::string final_state;
    for (size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      if (e.sequence != i + 1) {
        problem("history gap: event " + std::to_string(i + 1) + " has sequence " + std::to_string(e.sequence));
      }
      if (finalized) problem("an event after workflowFinalized: " + e.describe());
      if (!e.task) {
        if (e.kind == "workflowSucceeded") final_state = "SUCCESS";
        if (e.kind == "workflowFailed") final_state = "FAILED";
        if (e.kind == "workflowStopped") final_state = "STOPPED";
        if (e.kind == "workflowFinalized") finalized = true;
        continue;
      }
      if (ended_tasks.count(e.actor)) problem("an event after its task ended: " + e.describe(), e.actor);
      std::string& current = open[e.actor];
      if (e.kind == "taskDispatched") {
        if (!current.empty()) problem("dispatched while " + current + " was still open: " + e.describe(), e.actor);
        if (dispatches.count(e.invocation)) problem("dispatched twice: " + e.describe(), e.actor);
        dispatches[e.invocation] = Dispatch{e.actor, e.attempt, e.worker, e.at, nullptr};
        current = e.invocation;
      } else if (e.kind == "taskRunning" || e.kind == "taskHeartbeat") {
        if (e.invocation != current) problem("a report on an invocation that is not open: " + e.describe(), e.actor);
      } else if (e.kind == "taskFailover") {
        if (e.invocation != current) problem("a failover of an invocation that is not open: " + e.describe(), e.actor);
        if (auto d = dispatches.find(e.invocation); d != dispatches.end()) d->second.failover = &e;
        ++counts[std::string("failover ") + failover_name(e.failover)];
        never_started(e);
      } else if (e.kind == "taskSucceeded" || e.kind == "taskFailed" || e.kind == "taskKilled" ||
                 e.kind == "taskTimedOut") {
        // The completion of the open invocation (a timeout before any dispatch has none, and
        // the end of one failed over names none).
        const bool after_failover = e.invocation.empty() && !current.empty() &&
                                    dispatches.count(current) && dispatches.at(current).failover != nullptr;
        if (e.invocation != current && !after_failover) problem("a second completion, or one of an invocation not open: " + e.describe(), e.actor);
        if (e.kind != "taskSucceeded" && attempt_used(e, current, dispatches)) failure_explained = true;
        if (!current.empty()) ended_by_[current] = e.kind == "taskTimedOut" ? e.reason : e.kind;
        if (!current.empty()) closed_at_[current] = e.at;
        current.clear();
        ended_tasks.insert(e.actor);
      } else if (e.kind == "taskRetryScheduled") {
        ++counts[e.next_attempt == e.attempt ? "dispatched again, attempt kept" : "retry after " + e.reason];
        if (e.next_attempt != e.attempt) attempt_used(e, current, dispatches);
        if (!current.empty()) ended_by_[current] = e.reason;
        current.clear();
      }
    }
    if (!finalized) {
      std::string text = "never closed (no workflowFinalized); its last events:";
      for (size_t i = events.size() > 30 ? events.size() - 30 : 0; i < events.size(); ++i) {
        text += "\n        " + events[i].describe();
      }
      problem(text);
    }
    const std::string expected = design.expected();
    if (final_state == "SUCCESS" && expected != "SUCCESS") {
      for (const auto& t : design.tasks) {
        if (!t.fails_by_design()) continue;
        if (timeout_extended_by_restart(t, dispatches)) {
          known.push_back(design.id + "/" + t.name + ": its startToClose would have failed it, but a scheduler restart "
                          "during its attempt re-armed the timeout from the revival (by design)");
          continue;
        }
        problem("succeeded, but task " + t.name + " fails by design", t.name);
      }
    }
    if (final_state == "STOPPED") problem("stopped, though nobody stopped it");
    if (final_state == "FAILED" && expected == "SUCCESS" && !failure_explained) {
      problem("failed, though no task fails by design and no attempt ran out for a worker-side cause");
    }
  }

  void overlaps() {
    std::map<std::string, std::vector<const RunRecord*>> by_task;
    for (const auto& run : ledger_.runs()) {
      auto parts = actors::parse_invocation_id(run.invocation);
      if (!parts) continue;
      by_task[std::string(parts->workflow_id) + "/" + std::string(parts->task_name)].push_back(&run);
    }
    for (const auto& [task, runs] : by_task) {
      for (size_t i = 0; i < runs.size(); ++i) {
        for (size_t j = i + 1; j < runs.size(); ++j) {
          const RunRecord& a = *runs[i];
          const RunRecord& b = *runs[j];
          if (a.start < b.end && b.start < a.end) {
            const RunRecord& earlier = a.start <= b.start ? a : b;
            std::string text = task + ": two runs at once: " + describe(a) + " and " + describe(b);
            if (auto ended = ended_by_.find(earlier.invocation); ended != ended_by_.end()) {
              text += "; the first was ended by " + ended->second;
            }
            auto parts = actors::parse_invocation_id(a.invocation);
            if (auto h = histories_.find(std::string(parts->workflow_id)); h != histories_.end()) {
              text += "\n      its history:";
              for (const auto& e : h->second) {
                if (e.task && e.actor == parts->task_name) text += "\n        " + e.describe();
              }
            }
            problems.push_back(std::move(text));
          }
        }
      }
    }
  }

  std::vector<std::string> problems;
  std::vector<std::string> known;
  std::map<std::string, size_t> counts;

 private:
  /// Whether `t`'s designed timeout (attempt 1 outlasting startToClose) was re-armed by a
  /// scheduler that started while attempt 1 ran.
  bool timeout_extended_by_restart(const TaskDesign& t, const std::map<std::string, Dispatch>& dispatches) const {
    if (!t.slow_first || t.doomed || t.fail_first >= t.max_attempts) return false;
    for (const auto& [id, d] : dispatches) {
      if (d.task != t.name || d.attempt != 1) continue;
      // Its outcome was recorded by a scheduler that started after its dispatch.
      auto closed = closed_at_.find(id);
      const Time until = closed == closed_at_.end() ? never : closed->second;
      for (Time started : ledger_.scheduler_starts()) {
        if (started > d.at && started < until) return true;
      }
    }
    return false;
  }

  static std::string describe(const RunRecord& r) {
    return r.invocation + " on " + r.instance + " from " + show(r.start) + " to " +
           (r.end == never ? std::string("still running") : show(r.end) + " (" + r.how + ")");
  }

  /// A problem with `task` (empty: the workflow's) is reported with the task's history.
  void problem(const std::string& what, const std::string& task = {}) {
    std::string text = design_->id + ": " + what;
    if (!task.empty()) {
      text += "\n      the history of " + task + ":";
      size_t shown = 0;
      for (const auto& e : *events_) {
        if (e.task && e.actor == task && shown++ < 30) text += "\n        " + e.describe();
      }
    }
    problems.push_back(std::move(text));
  }

  /// The process that ran `invocation`, or else the one that held its shard when dispatched.
  const ProcessRecord* process_of(const std::string& invocation, const Dispatch& d) const {
    if (auto it = runs_.find(invocation); it != runs_.end()) return ledger_.process(it->second.front()->instance);
    return ledger_.process_at(d.shard, d.at);
  }

  bool ran(const std::string& invocation) const { return runs_.count(invocation) > 0; }

  /// A failover that keeps the attempt must be of an invocation that never ran.
  void never_started(const Event& e) {
    if (e.failover != schema::FailoverKind::NEVER_STARTED) return;
    if (ran(e.invocation)) {
      const auto* run = runs_.at(e.invocation).front();
      problem("called never-started, so dispatched again under the same attempt, though it ran: " + e.describe() +
              "; it ran on " + run->instance + " from " + show(run->start), e.actor);
    }
  }

  /// Attempt `e.attempt` of task `e.actor` was used up by `e`; its invocation was `invocation`.
  /// Whether that had a worker-side cause (else it is a problem).
  bool attempt_used(const Event& e, const std::string& invocation, const std::map<std::string, Dispatch>& dispatches) {
    const std::string& reason = e.reason;
    if (reason.rfind("Timeout:", 0) == 0 || reason == "SimFlaky" || reason == "SimDoomed" || reason == "Killed:lease") {
      return true;
    }
    auto d = dispatches.find(invocation);
    if (reason == "Failover" && d != dispatches.end() && d->second.failover != nullptr) {
      const Event& f = *d->second.failover;
      const ProcessRecord* p = process_of(invocation, d->second);
      if (p != nullptr && p->lost() <= f.at) return true;
      std::string where = p == nullptr ? "no process of " + d->second.shard + " at its dispatch"
                                       : "its process " + p->instance + " was lost at " +
                                             (p->lost() == never ? std::string("no time") : show(p->lost()));
      problem("attempt " + std::to_string(e.attempt) + " of " + e.actor + " used up by a failover with no loss on the worker side: " +
              f.describe() + " then " + e.describe() + "; " + (ran(invocation) ? "it ran" : "it never ran") + ", " + where, e.actor);
      return false;
    }
    problem("attempt " + std::to_string(e.attempt) + " of " + e.actor + " used up for no worker-side cause: " +
            e.describe() + (invocation.empty() ? "" : " (invocation " + invocation + (ran(invocation) ? ", which ran)" : ", which never ran)")), e.actor);
    return false;
  }

  const Ledger& ledger_;
  std::map<std::string, std::vector<const RunRecord*>> runs_;  ///< by invocation
  const WorkflowDesign* design_ = nullptr;
  const std::vector<Event>* events_ = nullptr;
  std::map<std::string, std::vector<Event>> histories_;  ///< by workflow id
  std::map<std::string, std::string> ended_by_;  ///< invocation -> what ended it: a cause or an event kind
  std::map<std::string, Time> closed_at_;        ///< invocation -> when its completion was recorded
};

}  // namespace

Findings check_schedule(const Workload& workload, storage::HistoryStore& store, const Ledger& ledger,
                        bool clean_network, const actors::HealthTimeouts& timeouts) {
  Checker checker(ledger);
  for (const auto& design : workload.workflows) {
    std::vector<Event> events;
    for (const auto& decoded : test::decoded_history(store, design.id)) events.push_back(read_event(decoded));
    if (events.empty()) {
      checker.problems.push_back(design.id + ": no history: the workflow was never recorded");
      continue;
    }
    checker.workflow(design, std::move(events));
  }
  checker.overlaps();
  if (clean_network) {
    // Re-registering and the first acknowledged heartbeat take a few intervals after a restart.
    const Duration slack = 3 * timeouts.heartbeat_interval;
    for (const auto& p : ledger.processes()) {
      if (p.lease_ran_out == never) continue;
      const Duration down = ledger.scheduler_down(p.lease_ran_out - timeouts.lease, p.lease_ran_out);
      if (down + slack < timeouts.lease) {
        checker.problems.push_back("worker " + p.instance + "'s lease ran out at " + show(p.lease_ran_out) +
                                   " on a clean network, though the scheduler was down for only " + show(down) +
                                   " of the lease before");
      }
    }
  }
  return Findings{std::move(checker.problems), std::move(checker.known), std::move(checker.counts)};
}

}  // namespace troupe::sim
