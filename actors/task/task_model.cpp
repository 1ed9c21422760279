// TaskModel::apply: one history event, one machine event.
#include "actors/task/task_model.hpp"

namespace troupe::actors {

using Body = schema::EventBody;

// The history stores a Loss as its FailoverKind.
static_assert(static_cast<uint16_t>(schema::FailoverKind::MAY_HAVE_STARTED) == uint8_t(Loss::MAY_HAVE_STARTED));
static_assert(static_cast<uint16_t>(schema::FailoverKind::NEVER_STARTED) == uint8_t(Loss::NEVER_STARTED));
static_assert(static_cast<uint16_t>(schema::FailoverKind::LOST_WHILE_RUNNING) == uint8_t(Loss::WHILE_RUNNING));
static_assert(static_cast<uint16_t>(schema::FailoverKind::RESULT_LOST) == uint8_t(Loss::RESULT_LOST));
static_assert(static_cast<uint16_t>(schema::FailoverKind::INTERRUPTED) == uint8_t(Loss::INTERRUPTED));

std::optional<TaskEvent> TaskModel::event_of(Body::Which body, TaskState state) {
  switch (body) {
    case Body::TASK_DISPATCHING:
      return state == TaskState::DELAY_EXECUTION ? TaskEvent::DISPATCH : TaskEvent::START;
    case Body::TASK_DISPATCHED: return TaskEvent::DISPATCHED;
    case Body::TASK_RUNNING: return TaskEvent::RUNNING;
    case Body::TASK_HEARTBEAT: return TaskEvent::HEARTBEAT;
    case Body::TASK_AWAITING_COMPLETION: return TaskEvent::HANDED_OFF;
    case Body::TASK_TIMED_OUT: return TaskEvent::TIMEOUT;
    case Body::TASK_RETRY_SCHEDULED: return TaskEvent::RETRY;
    case Body::TASK_PAUSE_REQUESTED: return TaskEvent::PAUSE;
    case Body::TASK_PAUSED: return TaskEvent::PAUSED;
    case Body::TASK_KILL_REQUESTED: return TaskEvent::KILL;
    case Body::TASK_KILLED: return TaskEvent::KILLED;
    case Body::TASK_SUCCEEDED: return TaskEvent::SUCCEEDED;
    case Body::TASK_FORCED_SUCCESS: return TaskEvent::FORCE;
    case Body::TASK_OPTIONS_UPDATED: return TaskEvent::UPDATE;
    case Body::TASK_FAILED: return TaskEvent::FAILED;
    case Body::TASK_FAILOVER: return TaskEvent::FAILOVER;
    default: return std::nullopt;
  }
}

namespace {

/// An attempt that ends on its executor (failed, timed out) may leave its invocation running
/// there a while (being cancelled): an operator's retry waits it out like an automatic one.
void keep_abandoned(TaskModel& model) {
  if (!TaskMachine::is_on_executor(model.state)) return;
  model.previous_invocation = model.invocation_id;
  model.previous_executor = model.executor;
}

/// An attempt ends in failure (failed, timed out, or retried): the worker it failed on is the one
/// it was on. One that failed over was lost with its worker, which FAILOVER noted already; one
/// that never reached a worker failed on none.
void note_failed_on(TaskModel& model) {
  if (TaskMachine::is_on_executor(model.state)) {
    model.failed_on = model.executor;
  } else if (model.state != TaskState::FAILOVER) {
    model.failed_on.clear();
  }
}

Duration micros(int64_t us) { return Duration(us); }
std::optional<Duration> micros_or_none(int64_t us) {
  return us > 0 ? std::optional<Duration>(Duration(us)) : std::nullopt;
}

}  // namespace

void write_options(schema::TaskOptionsUpdated::Builder out, const TaskOverrides& o) {
  if (o.task_list) out.setTaskList(*o.task_list);
  if (o.priority) {
    out.setPriorityChanged(true);
    out.setPriority(*o.priority);
  }
  if (o.timeouts) {
    out.setTimeoutsChanged(true);
    auto t = out.initTimeouts();
    auto us = [](const std::optional<Duration>& d) { return d ? d->count() : int64_t{0}; };
    t.setScheduleToStartUs(us(o.timeouts->schedule_to_start));
    t.setStartToCloseUs(us(o.timeouts->start_to_close));
    t.setScheduleToCloseUs(us(o.timeouts->schedule_to_close));
    t.setHeartbeatUs(us(o.timeouts->heartbeat));
  }
  if (o.retry) {
    out.setRetryChanged(true);
    if (*o.retry) {
      const RetrySpec& r = **o.retry;
      auto w = out.initRetry();
      w.setInitialIntervalUs(r.initial_interval.count());
      w.setBackoffCoefficient(r.backoff_coefficient);
      w.setMaximumIntervalUs(r.maximum_interval.count());
      w.setMaximumAttempts(r.maximum_attempts);
      w.setExpirationIntervalUs(r.expiration_interval ? r.expiration_interval->count() : 0);
      auto errors = w.initNonRetryableErrors(static_cast<unsigned>(r.non_retryable_errors.size()));
      for (size_t i = 0; i < r.non_retryable_errors.size(); ++i) {
        errors.set(static_cast<unsigned>(i), r.non_retryable_errors[i]);
      }
    }
  }
}

TaskOverrides read_options(schema::TaskOptionsUpdated::Reader in) {
  TaskOverrides o;
  if (in.hasTaskList() && in.getTaskList().size() > 0) o.task_list = to_string(in.getTaskList());
  if (in.getPriorityChanged()) o.priority = in.getPriority();
  if (in.getTimeoutsChanged()) {
    auto t = in.getTimeouts();
    o.timeouts = TimeoutsSpec{micros_or_none(t.getScheduleToStartUs()), micros_or_none(t.getStartToCloseUs()),
                              micros_or_none(t.getScheduleToCloseUs()), micros_or_none(t.getHeartbeatUs())};
  }
  if (in.getRetryChanged()) {
    o.retry = std::optional<RetrySpec>();
    if (in.hasRetry()) {
      auto r = in.getRetry();
      RetrySpec spec;
      spec.initial_interval = micros(r.getInitialIntervalUs());
      spec.backoff_coefficient = r.getBackoffCoefficient();
      spec.maximum_interval = micros(r.getMaximumIntervalUs());
      spec.maximum_attempts = r.getMaximumAttempts();
      spec.expiration_interval = micros_or_none(r.getExpirationIntervalUs());
      for (auto e : r.getNonRetryableErrors()) spec.non_retryable_errors.push_back(to_string(e));
      o.retry = std::move(spec);
    }
  }
  return o;
}

TaskSpec TaskModel::effective(const TaskSpec& spec, bool with_pending) const {
  TaskSpec out = spec;
  if (options) options->apply_to(out);
  if (with_pending && pending_options) pending_options->apply_to(out);
  return out;
}

Result<void> TaskModel::apply(const EventView& event) {
  const auto body = event.body;
  if (body.isTaskScheduled()) {
    const bool continues = body.getTaskScheduled().getContinuesAttempts();
    if (continues && (!scheduled || (state != TaskState::FAILURE && state != TaskState::KILLED))) {
      return fail(Errc::NOT_ALLOWED_IN_STATE, "task '" + name + "' was retried while " +
                                                  std::string(scheduled ? TaskMachineTraits::name(state) : "not run"));
    }
    if (scheduled) {
      // Scheduled again by a rerun or an operator's retry: a fresh instance, once the previous
      // one ended. The count of dispatches carries on, so every invocation id stays unique
      // within the workflow, and so do the options an operator gave.
      if (!TaskMachine::is_terminal(state) && state != TaskState::PAUSED) {
        return fail(Errc::NOT_ALLOWED_IN_STATE, "task '" + name + "' was scheduled again while " +
                                                    std::string(TaskMachineTraits::name(state)));
      }
      TaskModel fresh;
      fresh.name = std::move(name);
      fresh.dispatches = dispatches;
      fresh.options = pending_options ? merged(options, *pending_options) : options;
      if (continues) {
        // A retry goes on where the failed attempt left: its number, its progress, and the
        // invocation it may have left on an executor, which the next one waits out.
        fresh.attempt = attempt;
        fresh.attempt_base = attempt;
        fresh.progress = progress;
        fresh.previous_invocation = previous_invocation;
        fresh.previous_executor = previous_executor;
        fresh.failed_on = failed_on;
        fresh.ran_attempt = ran_attempt;
      }
      *this = std::move(fresh);
    }
    scheduled = true;
    input_json = to_string(body.getTaskScheduled().getInput());
    ++applied;
    return ok();
  }
  auto machine_event = event_of(body.which(), state);
  if (!machine_event) {
    return fail(Errc::INVALID_ARGUMENT, "task '" + name + "' was given a non-task event");
  }
  auto t = TaskMachine::transition(state, *machine_event);
  if (!t) return fail(t.error().code, "task '" + name + "': " + t.error().message);

  const int64_t now = event.timestamp_us;
  const uint32_t attempt_before = attempt;
  // Its worker's word that the invocation never started there (it failed over, or was killed, unstarted).
  bool never_started_there = false;
  switch (body.which()) {
    case Body::TASK_DISPATCHING:
      if (state == TaskState::SUBMITTED || state == TaskState::PAUSED) {
        attempt = starting_attempt();
        segment_start_us = now;
      }
      break;
    case Body::TASK_DISPATCHED: {
      if (state == TaskState::SUBMITTED || state == TaskState::PAUSED) {
        // Started with a slot free at once: this is its start too.
        attempt = starting_attempt();
        segment_start_us = now;
      }
      auto d = body.getTaskDispatched();
      invocation_id = to_string(d.getInvocationId());
      executor = to_string(d.getWorkerShard());
      dispatch_fence = Fence{d.getSchedulerEpoch(), d.getNotifySequence()};
      previous_invocation.clear();
      previous_executor.clear();
      dispatched_us = now;
      if (started_us == 0) started_us = now;
      ++dispatches;
      awaiting_completion = false;
      break;
    }
    case Body::TASK_AWAITING_COMPLETION:
      awaiting_completion = true;
      ran_attempt = attempt;
      break;
    case Body::TASK_RUNNING:
      ran_attempt = attempt;
      heartbeat_us = now;
      never_started = 0;
      break;
    case Body::TASK_HEARTBEAT:
      progress = to_string(body.getTaskHeartbeat().getProgress());
      heartbeat_us = now;
      break;
    case Body::TASK_RETRY_SCHEDULED: {
      auto r = body.getTaskRetryScheduled();
      if (TaskMachine::is_on_executor(state)) {
        previous_invocation = invocation_id;
        previous_executor = executor;
      }
      if (r.getNextAttempt() != attempt) {
        never_started = 0;
        note_failed_on(*this);
      }
      attempt = r.getNextAttempt();
      delay_until_us = now + r.getBackoffUs();
      failure_reason = to_string(r.getCause().getReason());
      failure_details = to_string(r.getCause().getDetails());
      invocation_id.clear();
      executor.clear();
      break;
    }
    case Body::TASK_TIMED_OUT:
      keep_abandoned(*this);
      note_failed_on(*this);
      failure_reason = std::string("Timeout:") +
                       (body.getTaskTimedOut().getKind() == schema::TimeoutKind::HEARTBEAT ? "heartbeat"
                        : body.getTaskTimedOut().getKind() == schema::TimeoutKind::START_TO_CLOSE
                            ? "startToClose"
                        : body.getTaskTimedOut().getKind() == schema::TimeoutKind::SCHEDULE_TO_START
                            ? "scheduleToStart"
                            : "scheduleToClose");
      invocation_id.clear();
      break;
    case Body::TASK_KILLED:
      never_started_there = body.getTaskKilled().getNeverStarted();
      break;
    case Body::TASK_KILL_REQUESTED: {
      auto reason = body.getTaskKillRequested();
      kill_requested = true;
      if (reason.getImmediate()) kill_immediate = true;
      if (reason.getNeverAttempted()) kill_never_attempted = true;
      kill_reason = to_string(reason.getText());
      break;
    }
    case Body::TASK_PAUSE_REQUESTED:
      if (TaskMachine::is_on_executor(state)) pause_requested = true;
      break;
    case Body::TASK_SUCCEEDED:
      result = to_string(body.getTaskSucceeded().getResult());
      invocation_id.clear();
      break;
    case Body::TASK_FAILED: {
      keep_abandoned(*this);
      note_failed_on(*this);
      auto f = body.getTaskFailed().getFailure();
      failure_reason = to_string(f.getReason());
      failure_details = to_string(f.getDetails());
      invocation_id.clear();
      break;
    }
    case Body::TASK_FAILOVER:
      failure_reason = "Failover";
      failure_details = to_string(body.getTaskFailover().getReason());
      {
        // A kind this version does not know may have started: the attempt counts.
        const auto kind = static_cast<uint16_t>(body.getTaskFailover().getKind());
        failover = kind <= static_cast<uint16_t>(Loss::INTERRUPTED) ? static_cast<Loss>(kind) : Loss::MAY_HAVE_STARTED;
      }
      if (failover == Loss::NEVER_STARTED) {
        ++never_started;
        never_started_there = true;
      }
      // Lost while it may have run: the attempt failed there. One that never started, or that
      // its worker interrupted to shut down, goes on under the same attempt.
      if (failover != Loss::NEVER_STARTED && failover != Loss::INTERRUPTED) failed_on = executor;
      invocation_id.clear();
      executor.clear();
      break;
    case Body::TASK_OPTIONS_UPDATED: {
      auto update = read_options(body.getTaskOptionsUpdated());
      if (TaskMachine::is_on_executor(state)) {
        pending_options = merged(pending_options, update);
      } else {
        options = merged(options, update);
      }
      break;
    }
    default:
      break;
  }
  // An attempt that leaves its executor takes the options changed while it ran for the next.
  if (TaskMachine::is_on_executor(state) && !TaskMachine::is_on_executor(t->to) && pending_options) {
    options = merged(options, *pending_options);
    pending_options.reset();
  }
  // Pausing banks the running time; finishing stops the clock.
  if ((t->to == TaskState::PAUSED || TaskMachine::is_terminal(t->to)) && segment_start_us >= 0) {
    banked_us += now - segment_start_us;
    segment_start_us = -1;
  }
  // An attempt that left its executor may have run there (it ended, failed, timed out, paused or
  // was lost), unless its worker said it never started it.
  if (TaskMachine::is_on_executor(state) && !TaskMachine::is_on_executor(t->to) && !never_started_there) {
    ran_attempt = attempt_before;
  }
  if (TaskMachine::is_terminal(t->to)) ended_us = now;
  if (t->to == TaskState::KILLED || t->to == TaskState::PAUSED) invocation_id.clear();
  // An attempt stopped by a kill did not fail where it ran.
  if (t->to == TaskState::KILLED && TaskMachine::is_on_executor(state)) failed_on.clear();
  if (invocation_id.empty()) awaiting_completion = false;
  if (t->to == TaskState::PAUSED || TaskMachine::is_terminal(t->to)) pause_requested = false;
  state = t->to;
  ++applied;
  return ok();
}

Duration TaskModel::elapsed(int64_t now_us) const {
  return Duration(banked_us + (segment_start_us >= 0 ? now_us - segment_start_us : 0));
}

std::string TaskModel::failure_message() const {
  if (failure_details.empty()) return failure_reason;
  return failure_reason + ": " + failure_details;
}

std::string TaskModel::canonical() const {
  std::string out;
  auto field = [&](const char* key, const std::string& value) { canonical_field(out, key, value); };
  field("name", name);
  field("state", std::string(TaskMachineTraits::name(state)));
  field("attempt", std::to_string(attempt));
  field("attempt_base", std::to_string(attempt_base));
  field("scheduled", scheduled ? "1" : "0");
  field("invocation", invocation_id);
  field("executor", executor);
  field("input", input_json);
  field("progress", progress);
  field("result", result);
  field("failure_reason", failure_reason);
  field("failure_details", failure_details);
  field("kill_requested", kill_requested ? "1" : "0");
  field("kill_immediate", kill_immediate ? "1" : "0");
  field("kill_never_attempted", kill_never_attempted ? "1" : "0");
  field("kill_reason", kill_reason);
  field("ran_attempt", std::to_string(ran_attempt));
  field("awaiting_completion", awaiting_completion ? "1" : "0");
  field("pause_requested", pause_requested ? "1" : "0");
  field("delay_until", std::to_string(delay_until_us));
  field("banked", std::to_string(banked_us));
  field("segment_start", std::to_string(segment_start_us));
  field("dispatched", std::to_string(dispatched_us));
  field("heartbeat", std::to_string(heartbeat_us));
  field("dispatches", std::to_string(dispatches));
  field("fence", dispatch_fence.to_string());
  field("failover", std::string(loss_name(failover)));
  field("never_started", std::to_string(never_started));
  field("previous_invocation", previous_invocation);
  field("previous_executor", previous_executor);
  field("failed_on", failed_on);
  field("started", std::to_string(started_us));
  field("ended", std::to_string(ended_us));
  field("options", options ? options->canonical() : std::string());
  field("pending_options", pending_options ? pending_options->canonical() : std::string());
  field("applied", std::to_string(applied));
  return out;
}

}  // namespace troupe::actors
