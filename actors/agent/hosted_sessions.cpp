// The sessions a worker node holds.
#include "actors/agent/hosted_sessions.hpp"

#include <algorithm>
#include <utility>

namespace troupe::actors {
namespace {

/// Closed sessions whose closeSession answers are kept for a late repeat of the call.
constexpr size_t kept_closed = 256;

std::string_view outcome_name(SessionActionOutcome outcome) {
  switch (outcome) {
    case SessionActionOutcome::SUCCEEDED: return "SUCCEEDED";
    case SessionActionOutcome::FAILED: return "FAILED";
    case SessionActionOutcome::CANCELED: return "CANCELED";
    case SessionActionOutcome::INTERRUPTED: return "INTERRUPTED";
    case SessionActionOutcome::NEVER_ATTEMPTED: return "NEVER_ATTEMPTED";
  }
  return "?";
}

template <class T>
void append(std::vector<T>& to, std::vector<T>& from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

SessionActionOutcome session_outcome_of(const TaskReport& report) {
  switch (report.kind) {
    case TaskReport::SUCCEEDED:
    case TaskReport::HANDED_OFF: return SessionActionOutcome::SUCCEEDED;
    case TaskReport::CANCELLED: return SessionActionOutcome::CANCELED;
    case TaskReport::INTERRUPTED:
    case TaskReport::LOST: return SessionActionOutcome::INTERRUPTED;
    default: return SessionActionOutcome::FAILED;
  }
}

std::string HostedSessions::describe(const TaskReport& outcome) {
  std::string text(outcome_name(session_outcome_of(outcome)));
  if (outcome.kind == TaskReport::FAILED) text += " (" + outcome.reason + (outcome.details.empty() ? "" : ": " + outcome.details) + ")";
  if (outcome.kind == TaskReport::INTERRUPTED && !outcome.details.empty()) text += " (" + outcome.details + ")";
  return text;
}

SessionEffects HostedSessions::open(SessionOpening opening, uint64_t call) {
  SessionEffects effects;
  auto it = sessions_.find(opening.id);
  if (it != sessions_.end() && it->second.runner.closing() && !it->second.close_calls.empty()) {
    // Closed by the scheduler, and now placed here again: a new instance, once this one closed.
    deferred_opens_.emplace_back(std::move(opening), call);
    return effects;
  }
  if (it != sessions_.end() && !it->second.closed) {
    Hosted& hosted = it->second;
    if (hosted.entered_answered) {
      effects.answers.push_back({opening.id, true, call, hosted.enter_outcome});
    } else {
      hosted.open_calls.push_back(call);
    }
    return effects;
  }
  if (it != sessions_.end()) {
    // Closed here before: it enters again, a session anew.
    closed_order_.erase(std::remove(closed_order_.begin(), closed_order_.end(), opening.id), closed_order_.end());
    forget(opening.id);
  }
  const std::string id = opening.id;
  Hosted& hosted = sessions_[id];
  hosted.runner = SessionRunner(opening.env_enter.has_value(), opening.env_exit.has_value());
  hosted.opening = std::move(opening);
  hosted.open_calls.push_back(call);
  for (auto* action : {&hosted.opening.env_enter, &hosted.opening.env_exit}) {
    if (*action) {
      (*action)->session_id = id;
      (*action)->session_dir = hosted.opening.directory;
      owner_[(*action)->invocation_id] = id;
    }
  }
  effects.log.emplace_back(id, "opened in " + hosted.opening.directory);
  apply(hosted, hosted.runner.open(), effects);
  return effects;
}

SessionEffects HostedSessions::close(const std::string& session, uint64_t call) {
  SessionEffects effects;
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    effects.answers.push_back({session, false, call, std::nullopt});
    return effects;
  }
  Hosted& hosted = it->second;
  if (hosted.closed) {
    effects.answers.push_back({session, false, call, hosted.exit_outcome});
    return effects;
  }
  hosted.close_calls.push_back(call);
  effects.log.emplace_back(session, "closing");
  apply(hosted, hosted.runner.close(), effects);
  open_deferred(effects);
  return effects;
}

void HostedSessions::open_deferred(SessionEffects& effects) {
  if (deferred_opens_.empty()) return;
  std::vector<std::pair<SessionOpening, uint64_t>> waiting;
  for (auto& [opening, call] : std::exchange(deferred_opens_, {})) {
    auto it = sessions_.find(opening.id);
    if (it != sessions_.end() && !it->second.closed) {
      waiting.emplace_back(std::move(opening), call);
      continue;
    }
    SessionEffects opened = open(std::move(opening), call);
    append(effects.start, opened.start);
    append(effects.never_ran, opened.never_ran);
    append(effects.answers, opened.answers);
    append(effects.log, opened.log);
  }
  for (auto& entry : waiting) deferred_opens_.push_back(std::move(entry));
}

bool HostedSessions::takes_tasks(const std::string& session) const {
  auto it = sessions_.find(session);
  return it != sessions_.end() && !it->second.closed && it->second.runner.takes_tasks();
}

bool HostedSessions::is_env_action(const std::string& invocation_id) const {
  auto owner = owner_.find(invocation_id);
  if (owner == owner_.end()) return false;
  auto it = sessions_.find(owner->second);
  if (it == sessions_.end()) return false;
  const auto& opening = it->second.opening;
  return (opening.env_enter && opening.env_enter->invocation_id == invocation_id) ||
         (opening.env_exit && opening.env_exit->invocation_id == invocation_id);
}

SessionEffects HostedSessions::add_task(Invocation invocation) {
  SessionEffects effects;
  auto it = sessions_.find(invocation.session_id);
  if (it == sessions_.end()) {
    effects.never_ran.push_back(invocation.invocation_id);
    return effects;
  }
  Hosted& hosted = it->second;
  invocation.session_dir = hosted.opening.directory;
  const std::string id = invocation.invocation_id;
  owner_[id] = invocation.session_id;
  hosted.queued.emplace(id, std::move(invocation));
  // A task that did not succeed held the session; another task coming is the scheduler's word
  // that it goes on (it sends none once the failure was final, and closes the session). Holding
  // the newcomer instead would hold the task-list slot it was granted, which the failed task's
  // retry may need: on a worker of one slot, neither would ever run.
  apply(hosted, hosted.runner.proceed(), effects);
  apply(hosted, hosted.runner.add_task(id), effects);
  return effects;
}

SessionEffects HostedSessions::cancel_queued(const std::string& invocation_id) {
  SessionEffects effects;
  auto owner = owner_.find(invocation_id);
  if (owner == owner_.end()) return effects;
  auto it = sessions_.find(owner->second);
  if (it == sessions_.end() || it->second.queued.count(invocation_id) == 0) return effects;
  Hosted& hosted = it->second;
  if (hosted.runner.withdraw(invocation_id)) {
    hosted.queued.erase(invocation_id);
    owner_.erase(invocation_id);
    effects.never_ran.push_back(invocation_id);
    effects.log.emplace_back(owner->second, "task " + invocation_id + " cancelled before it ran");
  }
  return effects;
}

SessionEffects HostedSessions::ended(const std::string& invocation_id, const TaskReport& outcome) {
  SessionEffects effects;
  auto owner = owner_.find(invocation_id);
  if (owner == owner_.end()) return effects;
  const std::string session = owner->second;
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    owner_.erase(owner);
    return effects;
  }
  Hosted& hosted = it->second;
  const auto& opening = hosted.opening;
  SessionActionRef ref{SessionActionKind::TASK, invocation_id};
  std::string what = "task " + invocation_id;
  if (opening.env_enter && opening.env_enter->invocation_id == invocation_id) {
    ref = {SessionActionKind::ENV_ENTER, {}};
    what = "envEnter";
    hosted.enter_outcome = outcome;
  } else if (opening.env_exit && opening.env_exit->invocation_id == invocation_id) {
    ref = {SessionActionKind::ENV_EXIT, {}};
    what = "envExit";
    hosted.exit_outcome = outcome;
  }
  if (ref.kind == SessionActionKind::TASK) owner_.erase(invocation_id);
  effects.log.emplace_back(session, what + " ended " + describe(outcome));
  apply(hosted, hosted.runner.ended(ref, session_outcome_of(outcome)), effects);
  open_deferred(effects);
  return effects;
}

void HostedSessions::apply(Hosted& hosted, const SessionStep& step, SessionEffects& effects) {
  const std::string& session = hosted.opening.id;
  for (const auto& [ref, outcome] : step.report) {
    if (ref.kind == SessionActionKind::ENV_ENTER && !hosted.entered_answered) {
      hosted.entered_answered = true;
      for (uint64_t call : hosted.open_calls) effects.answers.push_back({session, true, call, hosted.enter_outcome});
      hosted.open_calls.clear();
    }
    if (ref.kind == SessionActionKind::TASK && outcome == SessionActionOutcome::NEVER_ATTEMPTED) {
      hosted.queued.erase(ref.id);
      owner_.erase(ref.id);
      effects.never_ran.push_back(ref.id);
      effects.log.emplace_back(session, "task " + ref.id + " NEVER_ATTEMPTED");
    }
  }
  if (hosted.runner.takes_tasks() && !hosted.entered_answered) {
    // No envEnter to run: the session is entered as it opens.
    hosted.entered_answered = true;
    for (uint64_t call : hosted.open_calls) effects.answers.push_back({session, true, call, std::nullopt});
    hosted.open_calls.clear();
  }
  if (step.start) {
    const auto& ref = *step.start;
    std::optional<Invocation> invocation;
    if (ref.kind == SessionActionKind::ENV_ENTER) {
      invocation = hosted.opening.env_enter;
      effects.log.emplace_back(session, "envEnter started");
    } else if (ref.kind == SessionActionKind::ENV_EXIT) {
      invocation = hosted.opening.env_exit;
      effects.log.emplace_back(session, "envExit started");
    } else if (auto q = hosted.queued.find(ref.id); q != hosted.queued.end()) {
      invocation = std::move(q->second);
      hosted.queued.erase(q);
      effects.log.emplace_back(session, "task " + ref.id + " started");
    }
    if (invocation) effects.start.push_back(std::move(*invocation));
  }
  if (step.closed && !hosted.closed) {
    hosted.closed = true;
    if (!hosted.entered_answered) {
      // Closed before it was ever entered: an opening still waiting hears it did not enter.
      hosted.entered_answered = true;
      TaskReport never;
      never.kind = TaskReport::CANCELLED;
      for (uint64_t call : hosted.open_calls) effects.answers.push_back({session, true, call, never});
      hosted.open_calls.clear();
    }
    for (uint64_t call : hosted.close_calls) effects.answers.push_back({session, false, call, hosted.exit_outcome});
    hosted.close_calls.clear();
    effects.log.emplace_back(session, "closed");
    closed_order_.push_back(session);
    while (closed_order_.size() > kept_closed) {
      forget(closed_order_.front());
      closed_order_.pop_front();
    }
  }
}

void HostedSessions::forget(const std::string& session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  for (const auto* action : {&it->second.opening.env_enter, &it->second.opening.env_exit}) {
    if (*action) owner_.erase((*action)->invocation_id);
  }
  sessions_.erase(it);
}

std::string HostedSessions::directory(const std::string& session) const {
  auto it = sessions_.find(session);
  return it == sessions_.end() ? std::string() : it->second.opening.directory;
}

std::vector<std::string> HostedSessions::open_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, hosted] : sessions_) {
    if (!hosted.closed) ids.push_back(id);
  }
  return ids;
}

size_t HostedSessions::open_count() const {
  return static_cast<size_t>(
      std::count_if(sessions_.begin(), sessions_.end(), [](const auto& entry) { return !entry.second.closed; }));
}

std::vector<std::string> HostedSessions::queued_tasks() const {
  std::vector<std::string> ids;
  for (const auto& [id, hosted] : sessions_) {
    for (const auto& [task, invocation] : hosted.queued) ids.push_back(task);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<std::string> HostedSessions::running_env_actions() const {
  std::vector<std::string> ids;
  for (const auto& [id, hosted] : sessions_) {
    const auto& running = hosted.runner.running();
    if (hosted.closed || !running || running->kind == SessionActionKind::TASK) continue;
    const auto& action = running->kind == SessionActionKind::ENV_ENTER ? hosted.opening.env_enter : hosted.opening.env_exit;
    if (action) ids.push_back(action->invocation_id);
  }
  return ids;
}

}  // namespace troupe::actors
