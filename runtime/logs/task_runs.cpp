// A workflow's task invocations, folded from its history.
#include "runtime/logs/task_runs.hpp"

#include <charconv>

#include <kj/exception.h>

#include "schema/definition.hpp"

namespace troupe::runtime {
namespace {

std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

/// The attempt an invocation id (WORKFLOW/TASK/ATTEMPT.DISPATCH) names; 0 if it names none.
uint32_t attempt_of(std::string_view invocation_id) {
  const auto slash = invocation_id.rfind('/');
  if (slash == std::string_view::npos) return 0;
  const auto suffix = invocation_id.substr(slash + 1);
  uint32_t attempt = 0;
  auto [end, error] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), attempt);
  return error == std::errc() && end != suffix.data() ? attempt : 0;
}

/// The JSON string starting at `json[at]` (its opening quote), unescaped as json_quote escapes;
/// empty when it is not one.
std::string json_string_at(std::string_view json, size_t at) {
  if (at >= json.size() || json[at] != '"') return {};
  std::string out;
  for (size_t i = at + 1; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= json.size()) return {};
    switch (json[i]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        unsigned code = 0;
        if (i + 4 >= json.size()) return {};
        auto [end, error] = std::from_chars(json.data() + i + 1, json.data() + i + 5, code, 16);
        if (error != std::errc() || end != json.data() + i + 5 || code >= 0x80) return {};  // not a path troupe wrote
        out += static_cast<char>(code);
        i += 4;
        break;
      }
      default: return {};
    }
  }
  return {};
}

}  // namespace

std::string log_path_in_result(std::string_view result_json) {
  constexpr std::string_view key = "\"log\":";
  const auto at = result_json.find(key);
  if (at == std::string_view::npos) return {};
  return json_string_at(result_json, at + key.size());
}

std::string log_path_in_failure(std::string_view details) {
  constexpr std::string_view marker = "; log: ";
  const auto at = details.rfind(marker);
  if (at == std::string_view::npos) return {};
  // The path ends at its ".log": the scheduler may have added why it was not retried after it.
  const auto path = details.substr(at + marker.size());
  for (auto end = path.find(".log"); end != std::string_view::npos; end = path.find(".log", end + 1)) {
    const auto after = end + 4;
    if (after == path.size() || path[after] == ' ') return std::string(path.substr(0, after));
  }
  return {};
}

TaskRun* TaskRuns::find(std::string_view invocation_id) {
  auto it = index_.find(invocation_id);
  if (it == index_.end()) return nullptr;
  return &runs_[it->second.first][it->second.second];
}

Result<void> TaskRuns::add(schema::HistoryEvent::Reader event) {
  // A stored event's Text fields are checked for their closing NUL when read (storage/codec.hpp).
  try {
    fold(event);
    return ok();
  } catch (const kj::Exception& e) {
    return fail(Errc::CORRUPTION, std::string("malformed history event: ") + e.getDescription().cStr());
  }
}

void TaskRuns::fold(schema::HistoryEvent::Reader event) {
  auto body = event.getBody();
  using Body = schema::EventBody;
  switch (body.which()) {
    case Body::WORKFLOW_SUBMITTED: {
      // The definition says which tasks run handlers. One that does not parse (it did when it
      // was submitted) leaves every task taken for a shell task: its worker then finds no log.
      auto spec = parse_definition(text(body.getWorkflowSubmitted().getDefinitionJson()));
      if (!spec) return;
      handler_tasks_.clear();
      for (const auto& task : spec->tasks) {
        if (std::holds_alternative<HandlerSpec>(task.body)) handler_tasks_.insert(task.name);
      }
      return;
    }
    case Body::TASK_DISPATCHED: {
      if (event.getActorKind() != schema::ActorKind::TASK) return;
      auto dispatched = body.getTaskDispatched();
      TaskRun run;
      run.invocation_id = text(dispatched.getInvocationId());
      run.attempt = attempt_of(run.invocation_id);
      if (run.attempt == 0) run.attempt = event.getAttempt();
      run.worker = text(dispatched.getWorkerShard());
      if (find(run.invocation_id) != nullptr) return;  // an id is dispatched once
      const std::string task = text(event.getActorId());
      auto& runs = runs_[task];
      index_[run.invocation_id] = {task, runs.size()};
      runs.push_back(std::move(run));
      return;
    }
    case Body::TASK_RUNNING:
      if (auto* run = find(text(body.getTaskRunning().getInvocationId()))) run->started = true;
      return;
    case Body::TASK_AWAITING_COMPLETION:
      // Handed off: its process is over, though the task goes on waiting for its token.
      if (auto* run = find(text(body.getTaskAwaitingCompletion().getInvocationId()))) {
        run->started = true;
        run->ended = true;
      }
      return;
    case Body::TASK_SUCCEEDED:
      if (auto* run = find(text(body.getTaskSucceeded().getInvocationId()))) {
        run->started = true;
        run->ended = true;
        auto result = body.getTaskSucceeded().getResult();
        run->log_path = log_path_in_result(std::string_view(reinterpret_cast<const char*>(result.begin()), result.size()));
      }
      return;
    case Body::TASK_FAILED:
      if (auto* run = find(text(body.getTaskFailed().getInvocationId()))) {
        run->started = true;
        run->ended = true;
        run->log_path = log_path_in_failure(text(body.getTaskFailed().getFailure().getDetails()));
      }
      return;
    case Body::TASK_KILLED:
      if (auto* run = find(text(body.getTaskKilled().getInvocationId()))) {
        run->ended = true;
        if (body.getTaskKilled().getNeverStarted()) run->never_started = true;
      }
      return;
    case Body::TASK_TIMED_OUT:
      if (auto* run = find(text(body.getTaskTimedOut().getInvocationId()))) run->ended = true;
      return;
    case Body::TASK_FAILOVER:
      if (auto* run = find(text(body.getTaskFailover().getInvocationId()))) {
        run->ended = true;
        if (body.getTaskFailover().getKind() == schema::FailoverKind::NEVER_STARTED) run->never_started = true;
      }
      return;
    default: return;
  }
}

const std::vector<TaskRun>& TaskRuns::of(std::string_view task) const {
  static const std::vector<TaskRun> none;
  auto it = runs_.find(task);
  return it == runs_.end() ? none : it->second;
}

uint32_t TaskRuns::last_attempt(std::string_view task) const {
  uint32_t last = 0;
  for (const auto& run : of(task)) {
    if (!run.never_started) last = std::max(last, run.attempt);
  }
  return last;
}

std::vector<TaskRun> TaskRuns::runs_of_attempt(std::string_view task, uint32_t attempt) const {
  std::vector<TaskRun> out;
  for (const auto& run : of(task)) {
    if (run.attempt == attempt && !run.never_started) out.push_back(run);
  }
  return out;
}

}  // namespace troupe::runtime
