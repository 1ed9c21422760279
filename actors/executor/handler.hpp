// The C++ handler API: a task whose body is `"handler": "name"` runs the function registered
// under that name. A handler gets a TaskContext and reports through it, now or later, from
// any thread; it never blocks a thread to wait (TaskContext::after instead).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "schema/duration.hpp"

namespace troupe::actors {

/// One invocation, as its handler sees it. Thread-safe. Exactly one of succeed(), fail(),
/// cancelled() and handed_off() ends the invocation; later calls are ignored.
class TaskContext {
 public:
  virtual ~TaskContext() = default;

  virtual const std::string& invocation_id() const = 0;
  /// The task's input (JSON): its own `input` from the definition when it has one, else the
  /// workflow's input (`{}` when the workflow was given none). A shell task's TROUPE_INPUT.
  virtual const std::string& input_json() const = 0;
  /// The workflow's input (JSON), whatever the task's own: a shell task's TROUPE_WORKFLOW_INPUT.
  virtual const std::string& workflow_input_json() const = 0;
  /// The progress last reported by an earlier attempt of this task ("" if none).
  virtual const std::string& progress() const = 0;
  /// The attempt, from 1.
  virtual uint32_t attempt() const = 0;
  /// The task's token for completeTask/failTask; empty where none was minted (in-process runs).
  virtual const std::string& task_token() const = 0;
  /// The session the task runs in (WORKFLOW/SESSION) and the directory its tasks share; both
  /// empty outside a session.
  virtual const std::string& session_id() const = 0;
  virtual const std::string& session_dir() const = 0;
  /// Whether the task was defined with asyncCompletion.
  virtual bool async_completion() const = 0;
  /// asyncCompletion: this invocation's part is done and whoever holds the token ends the task.
  virtual void handed_off() = 0;

  /// Reports progress, which a retry will receive. Returns true once cancellation was
  /// requested: as in Cadence, a heartbeating handler learns it must stop this way.
  virtual bool heartbeat(std::string progress) = 0;
  virtual void succeed(std::string result) = 0;
  /// `reason` is matched against the retry policy's nonRetryableErrors.
  virtual void fail(std::string reason, std::string details = {}, bool non_retryable = false) = 0;
  /// Confirms that the invocation stopped because it was asked to.
  virtual void cancelled() = 0;

  virtual bool cancel_requested() const = 0;
  /// Once cancellation is requested: how long the invocation may take to stop before its
  /// executor kills what it started (a shell task's process group gets SIGTERM, then SIGKILL).
  virtual Duration cancel_grace() const = 0;
  /// Runs `then` after `delay` on the executor, holding no thread meanwhile.
  virtual void after(Duration delay, std::function<void()> then) = 0;
  /// Runs `callback` on the executor when cancellation is requested, and again when a later
  /// request shortens the grace (a kill after a stop).
  virtual void on_cancel(std::function<void()> callback) = 0;
};

using Handler = std::function<void(std::shared_ptr<TaskContext>)>;

/// Handlers by name. Built once at start-up and then only read.
class HandlerRegistry {
 public:
  /// A registry holding the built-ins:
  ///   noop   succeeds at once with {"ok":true}
  ///   sleep  succeeds after the input's "duration" ({"duration": "10m"}); ends early when
  ///          cancelled; fails with BadInput (non-retryable) on input without a duration
  static HandlerRegistry with_builtins();

  /// Adds or replaces `name`.
  void add(std::string name, Handler handler);
  /// nullptr when no handler has that name.
  const Handler* find(std::string_view name) const;

 private:
  std::map<std::string, Handler, std::less<>> handlers_;
};

}  // namespace troupe::actors
