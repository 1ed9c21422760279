// LocalExecutor: slots with a priority queue of waiting tasks, one handler context per running
// invocation, timers for TaskContext::after, and cancellation.
#include "actors/executor/local_executor.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "schema/meters.hpp"

namespace troupe::actors {
namespace {

/// Timers of after() calls, shared by the executor and the contexts (which may call from any
/// thread).
struct Timers {
  std::mutex mutex;
  uint64_t next = 1;
  std::map<uint64_t, std::function<void()>> pending;
};

class LocalContext final : public TaskContext {
 public:
  LocalContext(Invocation invocation, const executor_actor& executor, std::shared_ptr<Timers> timers)
      : invocation_(std::move(invocation)),
        executor_(caf::actor_cast<caf::weak_actor_ptr>(executor)),
        timers_(std::move(timers)) {}

  const std::string& invocation_id() const override { return invocation_.invocation_id; }
  const std::string& input_json() const override { return invocation_.input_json; }
  const std::string& workflow_input_json() const override {
    return invocation_.workflow_input_json.empty() ? invocation_.input_json : invocation_.workflow_input_json;
  }
  const std::string& progress() const override { return invocation_.progress; }
  uint32_t attempt() const override { return invocation_.attempt; }
  const std::string& task_token() const override { return invocation_.task_token; }
  bool async_completion() const override { return invocation_.async_completion; }
  const std::string& session_id() const override { return invocation_.session_id; }
  const std::string& session_dir() const override { return invocation_.session_dir; }
  void handed_off() override { end(TaskReport{invocation_.invocation_id, TaskReport::HANDED_OFF, {}, {}, {}, false}); }

  bool heartbeat(std::string progress) override {
    if (!finished_) {
      send(report_atom::value, TaskReport{invocation_.invocation_id, TaskReport::HEARTBEAT, std::move(progress), {}, {}, false});
    }
    return cancel_requested();
  }
  void succeed(std::string result) override {
    end(TaskReport{invocation_.invocation_id, TaskReport::SUCCEEDED, std::move(result), {}, {}, false});
  }
  void fail(std::string reason, std::string details, bool non_retryable) override {
    end(TaskReport{invocation_.invocation_id, TaskReport::FAILED, {}, std::move(reason),
                   std::move(details), non_retryable});
  }
  void cancelled() override { end(TaskReport{invocation_.invocation_id, TaskReport::CANCELLED, {}, {}, {}, false}); }
  bool cancel_requested() const override { return cancel_requested_.load(); }
  /// Its cancellation's grace passed and it has not stopped: it counts as cancelled from now on,
  /// as a kill not confirmed within its grace does, and whatever it reports later is dropped.
  void abandon() {
    end(TaskReport{invocation_.invocation_id, TaskReport::CANCELLED, {}, {},
                   "it did not stop within its grace after it was cancelled: abandoned", false});
  }
  /// Whether the invocation has ended (its report is on its way to the executor).
  bool ended() const { return finished_.load(); }
  Duration cancel_grace() const override { return Duration(cancel_grace_us_.load()); }

  void after(Duration delay, std::function<void()> then) override {
    uint64_t id;
    {
      std::lock_guard lock(timers_->mutex);
      id = timers_->next++;
      timers_->pending.emplace(id, std::move(then));
    }
    if (auto executor = caf::actor_cast<executor_actor>(executor_.lock())) {
      caf::delayed_anon_send(executor, delay, wake_atom::value, id);
    }
  }
  void on_cancel(std::function<void()> callback) override {
    std::lock_guard lock(mutex_);
    on_cancel_ = std::move(callback);
  }

  /// Drops the callbacks the handler left (they may hold this context).
  void drop_callbacks() {
    std::lock_guard lock(mutex_);
    on_cancel_ = nullptr;
  }

  /// Called by the executor when the invocation is to be cancelled, with its grace. A later
  /// cancel with a shorter grace (a kill after a stop) calls the callback again: the handler
  /// shortens its wait.
  void request_cancel(Duration grace) {
    if (!cancel_requested_ || grace.count() < cancel_grace_us_) cancel_grace_us_ = grace.count();
    cancel_requested_ = true;
    std::function<void()> callback;
    {
      std::lock_guard lock(mutex_);
      callback = on_cancel_;
    }
    if (callback) callback();
  }

 private:
  void end(TaskReport report) {
    if (finished_.exchange(true)) return;
    drop_callbacks();
    send(report_atom::value, std::move(report));
  }

  /// To the executor, if it still exists: a context must not keep its executor alive.
  template <class... Ts>
  void send(Ts&&... xs) {
    if (auto executor = caf::actor_cast<executor_actor>(executor_.lock())) {
      caf::anon_send(executor, std::forward<Ts>(xs)...);
    }
  }

  const Invocation invocation_;
  const caf::weak_actor_ptr executor_;
  const std::shared_ptr<Timers> timers_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> cancel_requested_{false};
  std::atomic<int64_t> cancel_grace_us_{0};
  std::mutex mutex_;
  std::function<void()> on_cancel_;
};

struct Waiting {
  int32_t priority;
  uint64_t order;
  task_port task;
};

struct Running {
  std::shared_ptr<LocalContext> context;
  task_port task;
};

struct LocalExecutorState {
  static inline const char* name = "local_executor";

  /// Callbacks of unfinished handlers may hold their contexts, and contexts the timers:
  /// dropping both breaks the cycles when the executor ends.
  ~LocalExecutorState() {
    for (auto& [id, run] : running) run.context->drop_callbacks();
    std::lock_guard lock(timers->mutex);
    timers->pending.clear();
  }

  std::shared_ptr<const HandlerRegistry> handlers;
  LocalExecutorOptions options;
  std::shared_ptr<Timers> timers = std::make_shared<Timers>();
  std::vector<Waiting> waiting;  // kept sorted: highest priority, then oldest, first
  uint64_t next_order = 0;
  size_t in_use = 0;
  std::map<std::string, Running> running;
  /// Where the size of `running` goes (nullptr: nowhere).
  std::shared_ptr<meters::Gauge> running_gauge;
  /// Tasks waiting for a running invocation to end before their next attempt (settled_atom).
  std::map<std::string, std::vector<caf::response_promise>> settle_waiters;
};

using Self = executor_actor::stateful_pointer<LocalExecutorState>;

void count_running(const LocalExecutorState& st) {
  if (st.running_gauge) st.running_gauge->set(static_cast<int64_t>(st.running.size()));
}

void release_slot(Self self);

void grant_free_slots(Self self) {
  auto& st = self->state;
  while (st.in_use < st.options.slots && !st.waiting.empty()) {
    Waiting next = std::move(st.waiting.front());
    st.waiting.erase(st.waiting.begin());
    ++st.in_use;
    // A request, not a message: a task that ended meanwhile (killed, timed out) cannot answer,
    // and the bounced request gives the slot back instead of holding it for ever.
    self->request(next.task, caf::infinite, grant_atom::value, st.options.name)
        .then([self](bool taken) {
                if (!taken) release_slot(self);
              },
              [self](const caf::error&) { release_slot(self); });
  }
}

void release_slot(Self self) {
  if (self->state.in_use > 0) --self->state.in_use;
  grant_free_slots(self);
}

executor_actor::behavior_type local_executor(Self self, std::shared_ptr<const HandlerRegistry> handlers,
                                             LocalExecutorOptions options, std::shared_ptr<meters::Gauge> running) {
  self->state.handlers = std::move(handlers);
  self->state.options = std::move(options);
  self->state.running_gauge = std::move(running);
  return {
      // One executor: a retry has no other to go to, so `avoid` changes nothing here, and a
      // session's tasks run here like any others.
      [=](enqueue_atom, task_port task, int32_t priority, const std::string&, const std::string&,
          const std::string&) -> std::string {
        auto& st = self->state;
        if (st.waiting.empty() && st.in_use < st.options.slots) {
          ++st.in_use;  // the answer hands the slot over
          return st.options.name;
        }
        auto& w = st.waiting;
        Waiting entry{priority, st.next_order++, std::move(task)};
        auto at = std::find_if(w.begin(), w.end(), [&](const Waiting& x) {
          return x.priority < entry.priority;
        });
        w.insert(at, std::move(entry));
        grant_free_slots(self);
        return std::string();
      },
      [=](withdraw_atom, const task_port& task, const std::string&) {
        auto& w = self->state.waiting;
        w.erase(std::remove_if(w.begin(), w.end(), [&](const Waiting& x) { return x.task == task; }),
                w.end());
      },
      [=](release_atom) { release_slot(self); },
      [=](run_atom, Invocation invocation, task_port task) {
        const std::string id = invocation.invocation_id;
        const std::string handler_name = invocation.handler;
        const ShellRunner& shell = self->state.options.shell;
        std::optional<Invocation> shell_invocation;
        if (handler_name.empty() && shell) shell_invocation = invocation;
        // A running invocation may wait for a long time: keep only what its handler reads.
        invocation.workflow_id.clear();
        invocation.workflow_id.shrink_to_fit();
        invocation.task_name.clear();
        invocation.task_name.shrink_to_fit();
        invocation.handler.clear();
        invocation.handler.shrink_to_fit();
        auto context = std::make_shared<LocalContext>(
            std::move(invocation), caf::actor_cast<executor_actor>(self), self->state.timers);
        self->state.running[id] = Running{context, task};
        count_running(self->state);
        // Its start is news only if the invocation outlives this call: one that ends at once
        // goes from dispatched straight to its outcome (as Temporal records an activity's start
        // only with its end). Sent directly, the start overtakes any report the handler made
        // meanwhile, which reaches the task through this actor's mailbox.
        auto started = [&] {
          if (!context->ended()) self->send(task, report_atom::value, TaskReport{id, TaskReport::STARTED, {}, {}, {}, false});
        };
        if (shell_invocation) {
          try {
            shell(*shell_invocation, context);
          } catch (const std::exception& e) {
            context->fail("ShellException", e.what(), false);
          }
          started();
          return;
        }
        if (handler_name.empty()) {
          context->fail("Unsupported",
                        "shell tasks run on worker nodes; the in-process executor runs handlers only",
                        true);
          return;
        }
        const Handler* handler = self->state.handlers->find(handler_name);
        if (handler == nullptr) {
          context->fail("UnknownHandler", "no handler is registered as '" + handler_name + "'", true);
          return;
        }
        // On this actor, as the handler contract says: a handler only starts its work (a
        // thread, an after() timer, I/O) and returns.
        try {
          (*handler)(context);
        } catch (const std::exception& e) {
          context->fail("HandlerException", e.what(), false);
        }
        started();
      },
      [=](adopt_atom, const Invocation& invocation, const task_port& task) {
        // Its invocations ran in this process's threads: none survived the restart.
        self->send(task, report_atom::value,
                   TaskReport{invocation.invocation_id, TaskReport::LOST, {}, "Failover",
                              "the process that ran it restarted", false});
      },
      [=](park_atom, const std::string& id, const std::string&, task_port to) {
        auto it = self->state.running.find(id);
        if (it == self->state.running.end()) return false;
        it->second.task = std::move(to);
        return true;
      },
      [=](settled_atom, const std::string& id, const std::string&) -> caf::result<bool> {
        // Over once it ends, or once its cancellation's grace has passed (see cancel_atom).
        if (!self->state.running.count(id)) return true;
        auto promise = self->make_response_promise<bool>();
        self->state.settle_waiters[id].push_back(promise);
        return promise;
      },
      [=](cancel_atom, const std::string& id, const std::string&, int64_t grace_us) {
        auto it = self->state.running.find(id);
        if (it == self->state.running.end()) return;
        auto context = it->second.context;
        context->request_cancel(Duration(grace_us));
        // A handler stops cooperatively; one that ignores its cancellation must not hold its
        // slot, nor its task's next attempt, for ever.
        context->after(Duration(grace_us), [context] { context->abandon(); });
      },
      [=](report_atom, TaskReport report) {
        auto it = self->state.running.find(report.invocation_id);
        if (it == self->state.running.end()) return;  // ended already
        auto task = it->second.task;
        const bool ends = report.kind != TaskReport::HEARTBEAT && report.kind != TaskReport::STARTED;
        if (ends) {
          self->state.running.erase(it);
          count_running(self->state);
        }
        const std::string id = report.invocation_id;
        self->send(task, report_atom::value, std::move(report));
        if (ends) {
          release_slot(self);
          if (auto waiting = self->state.settle_waiters.find(id); waiting != self->state.settle_waiters.end()) {
            for (auto& promise : waiting->second) promise.deliver(true);
            self->state.settle_waiters.erase(waiting);
          }
        }
      },
      [=](wake_atom, uint64_t timer) {
        std::function<void()> then;
        {
          std::lock_guard lock(self->state.timers->mutex);
          auto it = self->state.timers->pending.find(timer);
          if (it == self->state.timers->pending.end()) return;
          then = std::move(it->second);
          self->state.timers->pending.erase(it);
        }
        then();
      },
  };
}

}  // namespace

executor_actor spawn_local_executor(caf::actor_system& system,
                                    std::shared_ptr<const HandlerRegistry> handlers,
                                    LocalExecutorOptions options, std::shared_ptr<meters::Gauge> running) {
  return system.spawn(local_executor, std::move(handlers), std::move(options), std::move(running));
}

}  // namespace troupe::actors
