// Gateway, ClientService, WorkerSession, TaskReporter and the Cap'n Proto WorkerLink.
#include "runtime/scheduler_rpc.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <random>

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "actors/system/replay.hpp"
#include "runtime/admin/admin_rpc.hpp"
#include "runtime/auth/task_token.hpp"
#include "actors/task/task_machine.hpp"
#include "actors/workflow/workflow_machine.hpp"
#include "runtime/caf_kj.hpp"
#include "runtime/counted_calls.hpp"
#include "runtime/gateway_listener.hpp"
#include "runtime/retention.hpp"
#include "runtime/task_log_stream.hpp"
#include "runtime/wire.hpp"
#include "runtime/worker_admin.hpp"
#include "schema/gateway.capnp.h"
#include "schema/limits.hpp"
#include "schema/wire_states.hpp"
#include "schema/worker.capnp.h"
#include "schema/duration.hpp"

namespace troupe::runtime {

Result<WorkflowStatus> describe_workflow(storage::HistoryStore& store, const std::string& id,
                                         const actors::WaitBoard* waits) {
  auto record = store.find_workflow(id);
  if (!record) return record.error();
  if (!*record) return fail(Errc::NOT_FOUND, "no workflow has id '" + id + "'");
  auto replayed = actors::replay(store, id);
  if (!replayed) return replayed.error();
  return actors::snapshot(*replayed, waits);
}

namespace {

using actors::Reply;
using actors::TaskReport;

/// An outcome from the wire as the report a task actor understands.
TaskReport report_of(const std::string& id, schema::Outcome::Reader outcome) {
  TaskReport report{id, TaskReport::SUCCEEDED, {}, {}, {}, false};
  switch (outcome.which()) {
    case schema::Outcome::SUCCEEDED: report.payload = bytes(outcome.getSucceeded()); break;
    case schema::Outcome::FAILED: {
      auto f = outcome.getFailed();
      report.kind = TaskReport::FAILED;
      report.reason = text(f.getReason());
      report.details = text(f.getDetails());
      report.non_retryable = f.getNonRetryable();
      break;
    }
    case schema::Outcome::CANCELLED:
      report.kind = TaskReport::CANCELLED;
      if (outcome.getNeverStarted()) report.loss = actors::Loss::NEVER_STARTED;
      break;
    case schema::Outcome::HANDED_OFF: report.kind = TaskReport::HANDED_OFF; break;
    case schema::Outcome::INTERRUPTED:
      report.kind = TaskReport::INTERRUPTED;
      report.details = text(outcome.getInterrupted());
      break;
  }
  // Dated on this node's wall clock (the task actors' clock): the worker says only how long ago
  // it ended, so the date is late by the message's transit, never early.
  const int64_t now_us = wall_clock_us();
  report.ended_at_us = now_us - static_cast<int64_t>(std::min<uint64_t>(outcome.getEndedAgoUs(), now_us));
  return report;
}

void set_fence(schema::Fence::Builder out, const actors::Fence& fence) {
  out.setEpoch(fence.epoch);
  out.setSequence(fence.sequence);
}

/// The WorkerControl capability of each worker registered with this scheduler, by shard: the
/// latest accepted registration's. taskLogs reads logs through it; a worker whose connection is
/// gone keeps its entry, whose calls then fail (it is not connected). RPC thread only.
class WorkerControls {
 public:
  void registered(const std::string& shard, schema::WorkerControl::Client control) {
    controls_.insert_or_assign(shard, kj::mv(control));
  }
  std::optional<schema::WorkerControl::Client> find(const std::string& shard) {
    auto it = controls_.find(shard);
    if (it == controls_.end()) return std::nullopt;
    return it->second;
  }
  /// Drops every capability, when the gateway stops serving: a peer may have passed one of the
  /// gateway's own capabilities as its control, and the gateway objects holding this table
  /// would keep each other (and the scheduler's services) alive for good.
  void clear() { controls_.clear(); }

 private:
  std::map<std::string, schema::WorkerControl::Client> controls_;
};

/// One invocation's reporter: the worker can report only through the capability it was given.
class TaskReporterImpl final : public schema::TaskReporter::Server {
 public:
  TaskReporterImpl(actors::worker_actor worker, std::string invocation_id)
      : worker_(std::move(worker)), id_(std::move(invocation_id)) {}

  kj::Promise<void> started(StartedContext) override {
    auto b = bridge<bool>();
    caf::anon_send(worker_, actors::report_atom::value, TaskReport{id_, TaskReport::STARTED, {}, {}, {}, false},
                   Reply<bool>{b.resolve});
    return b.promise.then([](Result<bool> r) {
      if (!r) kj::throwFatalException(to_kj(r.error()));
    });
  }

  kj::Promise<void> heartbeat(HeartbeatContext context) override {
    auto b = bridge<bool>();
    caf::anon_send(worker_, actors::report_atom::value,
                   TaskReport{id_, TaskReport::HEARTBEAT, bytes(context.getParams().getProgress()), {}, {}, false},
                   Reply<bool>{b.resolve});
    return b.promise.then([context](Result<bool> r) mutable {
      if (!r) kj::throwFatalException(to_kj(r.error()));
      context.getResults().setCancelRequested(*r);
    });
  }

  kj::Promise<void> complete(CompleteContext context) override {
    auto b = bridge<bool>();
    caf::anon_send(worker_, actors::update_atom::value, report_of(id_, context.getParams().getOutcome()),
                   Reply<bool>{b.resolve});
    return b.promise.then([](Result<bool> r) {
      if (!r) kj::throwFatalException(to_kj(r.error()));
    });
  }

 private:
  actors::worker_actor worker_;
  std::string id_;
};

/// The text an invocation carries, for a message's size hint.
size_t invocation_bytes(const actors::Invocation& inv) {
  size_t bytes = inv.invocation_id.size() + inv.workflow_id.size() + inv.task_name.size() + inv.task_list.size() +
                 inv.handler.size() + inv.cwd.size() + inv.input_json.size() + inv.workflow_input_json.size() +
                 inv.progress.size() + inv.session_id.size() + 256 /* a task token */;
  for (const auto& arg : inv.command) bytes += arg.size() + 16;
  for (const auto& var : inv.env) bytes += var.size() + 16;
  return bytes;
}

/// An invocation as the worker protocol carries it; an asyncCompletion one gets its token.
void fill_invocation(schema::InvocationSpec::Builder spec, const actors::Invocation& inv, const std::string& token_key) {
  spec.setInvocationId(inv.invocation_id);
  spec.setWorkflowId(inv.workflow_id);
  spec.setTaskName(inv.task_name);
  spec.setTaskList(inv.task_list);
  spec.setAttempt(inv.attempt);
  if (!inv.handler.empty()) {
    spec.setHandler(inv.handler);
  } else {
    auto shell = spec.initShell();
    auto argv = shell.initCommand(inv.command.size());
    for (size_t i = 0; i < inv.command.size(); ++i) argv.set(i, inv.command[i]);
    auto env = shell.initEnv(inv.env.size());
    for (size_t i = 0; i < inv.env.size(); ++i) env.set(i, inv.env[i]);
    shell.setCwd(inv.cwd);
  }
  spec.setInput(inv.input_json);
  if (!inv.workflow_input_json.empty()) spec.setWorkflowInput(inv.workflow_input_json);
  spec.setProgress(as_data(inv.progress));
  spec.setHeartbeatTimeoutMs(static_cast<uint32_t>(std::min<int64_t>(inv.heartbeat_timeout_us / 1000, UINT32_MAX)));
  if (inv.async_completion) {
    spec.setAsyncCompletion(true);
    spec.setTaskToken(
        mint_task_token(token_key, {inv.workflow_id, inv.task_name, inv.invocation_id, new_task_token_nonce()}));
  }
  if (!inv.session_id.empty()) spec.setSessionId(inv.session_id);
}

/// The scheduler's line to one worker. Called from CAF threads: every call hops to the RPC
/// thread, where the capability lives.
class CapnpWorkerLink final : public actors::WorkerLink {
 public:
  struct Box {
    schema::WorkerControl::Client control;
    actors::worker_actor worker;
    kj::TaskSet* tasks;
    std::string token_key;  ///< signs the tokens of asyncCompletion invocations
  };

  CapnpWorkerLink(RpcThread* rpc, schema::WorkerControl::Client control, kj::TaskSet& tasks,
                  const std::string& token_key)
      : rpc_(rpc), box_(new Box{kj::mv(control), {}, &tasks, token_key}) {}

  ~CapnpWorkerLink() override {
    Box* box = box_;
    if (rpc_->on_thread()) {
      delete box;
    } else {
      rpc_->post([box] { delete box; });  // capabilities die on their own thread
    }
  }

  /// On the RPC thread, once the worker actor exists.
  void bind(actors::worker_actor worker) { box_->worker = std::move(worker); }

  void get_running_tasks(std::function<void(Result<actors::RunningTasks>)> done) override {
    Box* box = box_;
    rpc_->post([box, done] {
      box->tasks->add(box->control.getRunningTasksRequest().send().then(
          [done](auto response) {
            actors::RunningTasks running;
            for (auto id : response.getInvocationIds()) running.ids.push_back(text(id));
            for (auto id : response.getEndedIds()) running.ended.push_back(text(id));
            for (auto id : response.getOpenSessions()) running.sessions.push_back(text(id));
            done(std::move(running));
          },
          [done](kj::Exception&& e) { done(fail(Errc::UNAVAILABLE, e.getDescription().cStr())); }));
    });
  }

  void run_task(const actors::Invocation& inv, std::function<void(Result<actors::RunAnswer>)> done) override {
    Box* box = box_;
    rpc_->post([box, inv, done] {
      const size_t text_bytes = invocation_bytes(inv);
      auto request = box->control.runTaskRequest(message_size(text_bytes, 1));
      fill_invocation(request.initInvocation(), inv, box->token_key);
      request.setNotifySequence(inv.fence.sequence);
      set_fence(request.initFence(), inv.fence);
      request.setReporter(kj::heap<TaskReporterImpl>(box->worker, inv.invocation_id));
      request.setOutcomeInAnswer(true);
      box->tasks->add(request.send().then(
          [done, id = inv.invocation_id](auto response) {
            auto error = response.getError();
            if (error.getCode() == schema::ErrorCode::NONE) {
              actors::RunAnswer answer;
              answer.ended = response.getEnded();
              if (answer.ended && response.hasOutcome()) {
                answer.outcome = std::make_shared<const TaskReport>(report_of(id, response.getOutcome()));
              }
              done(std::move(answer));
            } else {
              done(fail(Errc::NOT_ALLOWED_IN_STATE, text(error.getMessage())));
            }
          },
          [done](kj::Exception&& e) { done(fail(Errc::UNAVAILABLE, e.getDescription().cStr())); }));
    });
  }

  void notify_if_not_running(std::vector<std::string> ids, actors::Fence fence,
                             std::function<void(Result<std::vector<std::string>>)> done) override {
    Box* box = box_;
    rpc_->post([box, ids = std::move(ids), fence, done] {
      auto request = box->control.notifyIfTasksNotRunningRequest();
      auto list = request.initInvocationIds(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) list.set(i, ids[i]);
      request.setNotifySequence(fence.sequence);
      set_fence(request.initFence(), fence);
      box->tasks->add(request.send().then(
          [done](auto response) {
            std::vector<std::string> not_running;
            for (auto id : response.getNotRunning()) not_running.push_back(text(id));
            done(std::move(not_running));
          },
          [done](kj::Exception&& e) { done(fail(Errc::UNAVAILABLE, e.getDescription().cStr())); }));
    });
  }

  void acknowledge(std::vector<std::string> ids) override {
    Box* box = box_;
    rpc_->post([box, ids = std::move(ids)] {
      auto request = box->control.acknowledgeRequest(message_size(ids.size() * 64));
      auto list = request.initInvocationIds(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) list.set(i, ids[i]);
      // Lost with the connection: the worker reports those outcomes again.
      box->tasks->add(request.send().ignoreResult().catch_([](kj::Exception&&) {}));
    });
  }

  void cancel_task(const std::string& id, Duration grace) override {
    Box* box = box_;
    rpc_->post([box, id, grace] {
      auto request = box->control.cancelTaskRequest();
      request.setInvocationId(id);
      request.setGraceMs(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(grace).count()));
      box->tasks->add(request.send().ignoreResult());
    });
  }

  void request_suicide(const std::string& reason) override {
    Box* box = box_;
    rpc_->post([box, reason] {
      auto request = box->control.requestSuicideRequest();
      request.setReason(reason);
      box->tasks->add(request.send().ignoreResult().catch_([](kj::Exception&&) {}));
    });
  }

  void interrupt_task(const std::string& id, Duration grace, const std::string& reason) override {
    Box* box = box_;
    rpc_->post([box, id, grace, reason] {
      auto request = box->control.interruptTaskRequest();
      request.setInvocationId(id);
      request.setGraceMs(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(grace).count()));
      request.setReason(reason);
      box->tasks->add(request.send().ignoreResult().catch_([](kj::Exception&&) {}));
    });
  }

  void request_stop(const std::string& reason) override {
    Box* box = box_;
    rpc_->post([box, reason] {
      auto request = box->control.requestStopRequest();
      request.setReason(reason);
      box->tasks->add(request.send().ignoreResult().catch_([](kj::Exception&&) {}));
    });
  }

  void open_session(const actors::SessionOpen& session, std::function<void(Result<TaskReport>)> done) override {
    Box* box = box_;
    rpc_->post([box, session, done] {
      auto request = box->control.openSessionRequest(
          message_size(invocation_bytes(session.env_enter) + invocation_bytes(session.env_exit) + session.id.size() * 2, 1));
      auto spec = request.initSession();
      spec.setSessionId(session.id);
      spec.setWorkflowId(session.workflow_id);
      spec.setSessionName(session.name);
      if (!session.env_enter.invocation_id.empty()) fill_invocation(spec.initEnvEnter(), session.env_enter, box->token_key);
      if (!session.env_exit.invocation_id.empty()) fill_invocation(spec.initEnvExit(), session.env_exit, box->token_key);
      box->tasks->add(request.send().then(
          [done, id = session.env_enter.invocation_id](auto response) {
            auto error = response.getError();
            if (error.getCode() != schema::ErrorCode::NONE) {
              done(fail(Errc::NOT_ALLOWED_IN_STATE, text(error.getMessage())));
              return;
            }
            done(report_of(id, response.getOutcome()));
          },
          [done](kj::Exception&& e) { done(fail(Errc::UNAVAILABLE, e.getDescription().cStr())); }));
    });
  }

  void close_session(const std::string& session_id,
                     std::function<void(Result<std::optional<TaskReport>>)> done) override {
    Box* box = box_;
    rpc_->post([box, session_id, done] {
      auto request = box->control.closeSessionRequest();
      request.setSessionId(session_id);
      box->tasks->add(request.send().then(
          [done, session_id](auto response) {
            auto error = response.getError();
            if (error.getCode() != schema::ErrorCode::NONE) {
              done(fail(Errc::NOT_ALLOWED_IN_STATE, text(error.getMessage())));
              return;
            }
            std::optional<TaskReport> outcome;
            if (response.getRan()) outcome = report_of(session_id + "/envExit", response.getOutcome());
            done(std::move(outcome));
          },
          [done](kj::Exception&& e) { done(fail(Errc::UNAVAILABLE, e.getDescription().cStr())); }));
    });
  }

 private:
  RpcThread* rpc_;
  Box* box_;
};

class WorkerSessionImpl final : public schema::WorkerSession::Server {
 public:
  explicit WorkerSessionImpl(actors::worker_actor worker) : worker_(std::move(worker)) {}

  kj::Promise<void> heartbeat(HeartbeatContext context) override {
    auto b = bridge<actors::HealthState>();
    caf::anon_send(worker_, actors::heartbeat_atom::value, Reply<actors::HealthState>{b.resolve});
    return b.promise.then([context](Result<actors::HealthState> health) mutable {
      // An ended worker actor drops the reply: the instance is MUST_DIE.
      auto h = health ? *health : actors::HealthState::MUST_DIE;
      context.getResults().setHealth(static_cast<schema::Health>(static_cast<uint16_t>(h)));
    }, [context](kj::Exception&&) mutable { context.getResults().setHealth(schema::Health::MUST_DIE); });
  }

  kj::Promise<void> updateStatus(UpdateStatusContext context) override {
    auto params = context.getParams();
    auto b = bridge<bool>();
    caf::anon_send(worker_, actors::update_atom::value, report_of(text(params.getInvocationId()), params.getOutcome()),
                   Reply<bool>{b.resolve});
    return b.promise.then([context](Result<bool> r) mutable {
      if (!r) set_error(context.getResults().initError(), r.error());
    });
  }

  kj::Promise<void> stopping(StoppingContext context) override {
    auto params = context.getParams();
    caf::anon_send(worker_, actors::stop_atom::value, text(params.getReason()),
                   int64_t{params.getGraceMs()} * 1000);
    return kj::READY_NOW;
  }

  kj::Promise<void> stopped(StoppedContext) override {
    caf::anon_send(worker_, actors::finished_atom::value);
    return kj::READY_NOW;
  }

  kj::Promise<void> taskHeartbeat(TaskHeartbeatContext context) override {
    auto params = context.getParams();
    auto b = bridge<bool>();
    caf::anon_send(worker_, actors::report_atom::value,
                   TaskReport{text(params.getInvocationId()), TaskReport::HEARTBEAT, bytes(params.getProgress()), {},
                              {}, false},
                   Reply<bool>{b.resolve});
    return b.promise.then([context](Result<bool> r) mutable {
      if (r) {
        context.getResults().setCancelRequested(*r);
      } else {
        set_error(context.getResults().initError(), r.error());
      }
    });
  }

 private:
  actors::worker_actor worker_;
};

/// A workflow id for a submission that names none: "wf-" and 128 random bits in hex, so ids
/// from any number of schedulers and restarts do not collide.
std::string new_workflow_id() {
  thread_local std::mt19937_64 random = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }();
  char buf[40];
  std::snprintf(buf, sizeof buf, "wf-%016llx%016llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random()));
  return buf;
}

/// The one actor through which client calls reach the directory: RPC threads are not actors,
/// so each call travels as a message with its Reply, and the bridge asks the directory and
/// delivers the answer. (An actor spawned per call did the same at twice the cost.)
struct ClientBridgeState {
  static inline const char* name = "client_bridge";
};

/// The error handler of a request made for `reply`: passes the refusal on.
template <class T>
auto refuse(const Reply<T>& reply) {
  return [reply](const caf::error& e) { reply.deliver(actors::from_caf(e)); };
}

/// A client's control action as the directory's.
actors::WorkflowControl workflow_control(schema::ControlAction action) {
  switch (action) {
    case schema::ControlAction::PAUSE: return actors::WorkflowControl::PAUSE;
    case schema::ControlAction::RESUME: return actors::WorkflowControl::RESUME;
    case schema::ControlAction::STOP: return actors::WorkflowControl::STOP;
    case schema::ControlAction::KILL: break;
  }
  return actors::WorkflowControl::KILL;
}

/// The definition JSON that `text` stands for: itself, or the registered definition it names.
Result<std::string> definition_json(const std::string& text, DefinitionRegistry* definitions) {
  if (!is_definition_name(text)) return text;
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  const std::string name = text.substr(first, last - first + 1);
  if (definitions == nullptr) {
    return fail(Errc::INVALID_ARGUMENT, "'" + name +
                                            "' is not a definition (a JSON object), and this scheduler has no "
                                            "definitions directory to look it up in as a name");
  }
  return definitions->json_of(name);
}

caf::behavior client_bridge(caf::stateful_actor<ClientBridgeState>* self, actors::directory_actor directory,
                            actors::dispatcher_actor dispatcher, std::shared_ptr<storage::HistoryStore> store,
                            std::shared_ptr<DefinitionRegistry> definitions,
                            std::shared_ptr<const actors::WaitBoard> waits) {
  self->link_to(directory);  // ends with the directory
  return {
      [=](actors::view_atom, const std::string& name, Reply<std::vector<actors::WorkerView>>& reply) {
        self->request(dispatcher, std::chrono::seconds(30), actors::view_atom::value, name)
            .then([reply](std::vector<actors::WorkerView>& views) { reply.deliver(std::move(views)); },
                  refuse(reply));
      },
      [=](actors::operate_atom, actors::WorkerOrder& order, Reply<actors::WorkerView>& reply) {
        self->request(dispatcher, std::chrono::seconds(30), actors::operate_atom::value, std::move(order))
            .then([reply](actors::WorkerView& view) { reply.deliver(std::move(view)); }, refuse(reply));
      },
      [=](actors::describe_atom, const std::string& id, Reply<WorkflowStatus>& reply) {
        // A read of one history: short enough for this actor's thread.
        reply.deliver(describe_workflow(*store, id, waits.get()));
      },
      [=](actors::submit_atom, const std::string& id, const std::string& json, const std::string& input,
          const std::string& run_from, Reply<std::string>& reply) {
        // A registered definition's file is read here: small, local, and off the RPC thread.
        auto resolved = definition_json(json, definitions.get());
        if (!resolved) {
          reply.deliver(resolved.error());
          return;
        }
        self->request(directory, caf::infinite, actors::submit_atom::value, id, *resolved, input, run_from)
            .then([reply, id](const std::string&) { reply.deliver(id); },
                  refuse(reply));
      },
      [=](actors::control_atom, const std::string& id, uint8_t action, Reply<std::string>& reply) {
        // The directory finds (revives, wakes) the workflow and asks it; the answer comes once
        // the event is durable.
        self->request(directory, caf::infinite, actors::control_atom::value, id,
                      static_cast<uint8_t>(workflow_control(static_cast<schema::ControlAction>(action))))
            .then([reply](const std::string& state) { reply.deliver(state); }, refuse(reply));
      },
      [=](actors::complete_atom, const std::string& id, const std::string& task, TaskReport& report,
          Reply<bool>& reply) {
        self->request(directory, caf::infinite, actors::complete_atom::value, id, task, report)
            .then([reply](bool) { reply.deliver(true); }, refuse(reply));
      },
      [=](actors::rerun_atom, const std::string& id, const std::string& from, Reply<std::string>& reply) {
        self->request(directory, caf::infinite, actors::rerun_atom::value, id, from)
            .then([reply](const std::string& state) { reply.deliver(state); }, refuse(reply));
      },
      [=](actors::operate_atom, const std::string& id, actors::TaskCommand& command,
          Reply<actors::TaskCommandOutcome>& reply) {
        self->request(directory, caf::infinite, actors::operate_atom::value, id, std::move(command))
            .then([reply](const actors::TaskCommandOutcome& outcome) { reply.deliver(outcome); }, refuse(reply));
      },
      [=](actors::result_atom, const std::string& id, Reply<actors::WorkflowOutcome>& reply) {
        self->request(directory, caf::infinite, actors::result_atom::value, id)
            .then([reply](const actors::WorkflowOutcome& o) { reply.deliver(o); },
                  refuse(reply));
      },
  };
}

/// updateTask's options as the task actors take them. The retry policy travels as the JSON of a
/// definition's, so that it is checked (with the task's other options) by a definition's rules.
Result<actors::TaskOptionsPatch> task_options_patch(schema::TaskOptionsUpdate::Reader in) {
  actors::TaskOptionsPatch patch;
  patch.task_list = text(in.getTaskList());
  patch.set_priority = in.getSetPriority();
  patch.priority = in.getPriority();
  if (in.hasTimeouts()) {
    auto t = in.getTimeouts();
    patch.schedule_to_start = text(t.getScheduleToStart());
    patch.start_to_close = text(t.getStartToClose());
    patch.schedule_to_close = text(t.getScheduleToClose());
    patch.heartbeat = text(t.getHeartbeat());
  }
  patch.remove_retry = in.getRemoveRetry();
  patch.retry_json = text(in.getRetryJson());
  return patch;
}

/// Whether `presented` is the cluster's token, in time independent of where they differ.
bool token_matches(const std::string& expected, const std::string& presented) {
  if (expected.empty()) return true;  // the cluster has no token
  unsigned char diff = expected.size() == presented.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(expected[i] ^ (i < presented.size() ? presented[i] : 0));
  }
  return diff == 0;
}

Error wrong_token(const std::string& presented) {
  return fail(Errc::INVALID_ARGUMENT, presented.empty()
                                          ? "this cluster requires its token: pass --token-file FILE or --config CLUSTER.toml"
                                          : "the token presented is not this cluster's token");
}

/// A client's list query as the store's. INVALID_ARGUMENT for a state, sort or limit it cannot
/// serve.
Result<storage::ListQuery> store_query(schema::ListQuery::Reader in) {
  storage::ListQuery q;
  const std::string state = text(in.getState());
  const auto code = workflow_state_code(state);
  if (state == "OPEN") {
    q.status = storage::WorkflowStatus::OPEN;
  } else if (state == "CLOSED") {
    q.status = storage::WorkflowStatus::CLOSED;
  } else if (code == WorkflowStateCode::SUCCESS || code == WorkflowStateCode::FAILED ||
             code == WorkflowStateCode::STOPPED) {
    q.status = storage::WorkflowStatus::CLOSED;
    q.final_state = state;
  } else if (code != WorkflowStateCode::UNKNOWN) {
    q.status = storage::WorkflowStatus::OPEN;
    q.live_state = state;
  } else if (!state.empty()) {
    return fail(Errc::INVALID_ARGUMENT,
                "unknown state '" + state +
                    "' (OPEN, CLOSED, SUBMITTED, RUNNING, READY_PAUSE, PAUSED, READY_STOP, FAILOVER, SUCCESS, "
                    "FAILED or STOPPED)");
  }
  switch (in.getSort()) {
    case schema::ListSort::CREATED: q.order = storage::ListOrder::NEWEST_FIRST; break;
    case schema::ListSort::ID: q.order = storage::ListOrder::ID; break;
    default: return fail(Errc::INVALID_ARGUMENT, "unknown sort order (created or id)");
  }
  q.definition_name = text(in.getDefinitionName());
  q.created_from_us = in.getCreatedFromUs();
  q.created_to_us = in.getCreatedToUs();
  q.after = text(in.getAfter());
  q.limit = in.getLimit() == 0 ? 100 : in.getLimit();
  if (q.limit > 1000) return fail(Errc::INVALID_ARGUMENT, "a page holds at most 1000 workflows");
  // Bounds the time one call holds the RPC thread when few records match; the client pages on.
  q.scan_budget = 20000;
  return q;
}

/// The state a listed workflow shows: its state as of its last change while open, how it ended
/// once closed. A record written before the store kept open workflows' states has none: the
/// history tells (the record gets one with the workflow's next change, at the latest when a
/// restarted scheduler takes it back).
std::string listed_state(storage::HistoryStore& store, const storage::WorkflowEntry& entry) {
  const auto& record = entry.record;
  if (record.status == storage::WorkflowStatus::CLOSED) {
    return record.final_state.empty() ? "CLOSED" : record.final_state;  // closed before it was kept
  }
  if (!record.live_state.empty()) return record.live_state;
  if (auto replayed = actors::replay(store, entry.id)) {
    return std::string(actors::WorkflowMachineTraits::name(replayed->workflow.state));
  }
  return "OPEN";
}

/// One watch: pushes a workflow's history to the client's sink, a page per call (the next call
/// once the sink answered, so a slow client slows the watch, not the scheduler), then polls the
/// store for new events until the workflow has closed and everything was delivered. The store
/// is read on the RPC thread: each read is one short range scan.
class HistoryWatch {
 public:
  HistoryWatch(std::shared_ptr<storage::HistoryStore> store, std::string id, uint64_t from,
               schema::HistorySink::Client sink, kj::Timer& timer)
      : store_(std::move(store)), id_(std::move(id)), next_(from), sink_(kj::mv(sink)), timer_(timer) {}

  /// The last sequence delivered, once the watch is over.
  kj::Promise<Result<uint64_t>> run() {
    auto page = store_->read(id_, next_, 512);
    if (!page) return Result<uint64_t>(page.error());
    if (!page->empty()) {
      auto request = sink_.eventsRequest();
      auto list = request.initEvents(static_cast<unsigned>(page->size()));
      for (size_t i = 0; i < page->size(); ++i) {
        auto decoded = storage::DecodedEvent::decode((*page)[i].packed);
        if (!decoded) return Result<uint64_t>(decoded.error());
        list.setWithCaveats(static_cast<unsigned>(i), decoded->get());
      }
      next_ = page->back().sequence + 1;
      poll_ = min_poll;
      return request.send().then([this](capnp::Response<schema::HistorySink::EventsResults>&& response) {
        if (response.getStop()) return kj::Promise<Result<uint64_t>>(Result<uint64_t>(next_ - 1));
        return run();
      });
    }
    // Caught up. A closed workflow's last events were written with its closing record, so
    // once the record says closed, one more read finds whatever is left.
    if (closed_) return Result<uint64_t>(next_ - 1);
    auto record = store_->find_workflow(id_);
    if (!record) return Result<uint64_t>(record.error());
    if (*record && (*record)->status == storage::WorkflowStatus::CLOSED) {
      closed_ = true;
      return run();
    }
    auto wait = poll_;
    poll_ = std::min(poll_ * 2, max_poll);
    return timer_.afterDelay(wait).then([this] { return run(); });
  }

 private:
  // New events are looked for soon after the last ones (a running workflow records in bursts),
  // and less often the longer it stays quiet.
  static constexpr kj::Duration min_poll = 10 * kj::MILLISECONDS;
  static constexpr kj::Duration max_poll = 250 * kj::MILLISECONDS;

  std::shared_ptr<storage::HistoryStore> store_;
  std::string id_;
  uint64_t next_;
  schema::HistorySink::Client sink_;
  kj::Timer& timer_;
  kj::Duration poll_ = min_poll;
  bool closed_ = false;
};

class ClientServiceImpl : public schema::ClientService::Server {
 public:
  ClientServiceImpl(std::shared_ptr<SchedulerServices> services, kj::Timer& timer,
                    std::shared_ptr<WorkerControls> workers)
      : services_(std::move(services)), timer_(timer), workers_(std::move(workers)) {}

  kj::Promise<void> taskLogs(TaskLogsContext context) override {
    auto params = context.getParams();
    TaskLogRequest request{text(params.getWorkflowId()), text(params.getTask()), params.getAttempt(),
                           params.getFollow()};
    auto logs = stream_task_logs(log_ports(), std::move(request), params.getSink(), timer_);
    return logs.then([context](Result<void> streamed) mutable {
      if (!streamed) set_error(context.getResults().initError(), streamed.error());
    });
  }

  kj::Promise<void> completeTask(CompleteTaskContext context) override {
    auto params = context.getParams();
    // JSON is Text: resultJson when given, else the same bytes in the older Data field.
    std::string result = params.hasResultJson() ? text(params.getResultJson()) : "";
    if (result.empty()) result = bytes(params.getResult());
    // Empty: no result. Anything else is the task's result, JSON as a handler's would be.
    if (auto valid = check_task_result(result, services_->limits); !valid) {
      set_error(context.getResults().initError(), valid.error());
      return kj::READY_NOW;
    }
    TaskReport report{{}, TaskReport::SUCCEEDED, std::move(result), {}, {}, false};
    return end_task(text(params.getToken()), std::move(report), context.getResults().initError());
  }

  kj::Promise<void> failTask(FailTaskContext context) override {
    auto params = context.getParams();
    TaskReport report{{}, TaskReport::FAILED, {}, text(params.getReason()), text(params.getDetails()), false};
    if (auto valid = check_task_failure(report.reason, report.details, services_->limits); !valid) {
      set_error(context.getResults().initError(), valid.error());
      return kj::READY_NOW;
    }
    if (report.reason.empty()) report.reason = "Failed";
    return end_task(text(params.getToken()), std::move(report), context.getResults().initError());
  }

  kj::Promise<void> list(ListContext context) override {
    auto results = context.getResults();
    auto query = store_query(context.getParams().getQuery());
    if (!query) {
      set_error(results.initError(), query.error());
      return kj::READY_NOW;
    }
    auto page = services_->store->list_workflows(*query);
    if (!page) {
      set_error(results.initError(), page.error());
      return kj::READY_NOW;
    }
    std::vector<std::pair<const storage::WorkflowEntry*, std::string>> listed;
    listed.reserve(page->entries.size());
    for (const auto& entry : page->entries) {
      std::string state = listed_state(*services_->store, entry);
      // The store lets records without a state through a state filter: decided here.
      if (!query->live_state.empty() && state != query->live_state) continue;
      listed.emplace_back(&entry, std::move(state));
    }
    auto out = results.initWorkflows(static_cast<unsigned>(listed.size()));
    for (size_t i = 0; i < listed.size(); ++i) {
      const auto& [entry, state] = listed[i];
      auto w = out[static_cast<unsigned>(i)];
      w.setWorkflowId(entry->id);
      w.setDefinitionName(entry->record.definition_name);
      w.setState(state);
      w.setWorkflowState(to_wire(workflow_state_code(state)));
      w.setCreatedUs(entry->record.created_us);
      w.setClosedUs(entry->record.closed_us);
    }
    results.setNextCursor(page->next_cursor);
    return kj::READY_NOW;
  }

  kj::Promise<void> watch(WatchContext context) override {
    auto params = context.getParams();
    std::string id = text(params.getWorkflowId());
    auto record = services_->store->find_workflow(id);
    if (!record || !*record) {
      set_error(context.getResults().initError(),
                record ? fail(Errc::NOT_FOUND, "no workflow has id '" + id + "'") : record.error());
      return kj::READY_NOW;
    }
    auto watch = kj::heap<HistoryWatch>(services_->store, id, std::max<uint64_t>(1, params.getFromSequence()),
                                        params.getSink(), timer_);
    auto running = watch->run();
    return running.attach(kj::mv(watch)).then([context](Result<uint64_t> last) mutable {
      auto results = context.getResults();
      if (last) {
        results.setLastSequence(*last);
      } else {
        set_error(results.initError(), last.error());
      }
    });
  }

  kj::Promise<void> startWorkflow(StartWorkflowContext context) override {
    auto params = context.getParams();
    std::string input = params.hasInputJson() ? text(params.getInputJson()) : "";
    if (input.empty()) input = "{}";
    std::string id = text(params.getWorkflowId());
    if (auto valid = check_workflow_id(id, services_->limits); !valid) {
      set_error(context.getResults().initError(), valid.error());
      return kj::READY_NOW;
    }
    if (auto valid = check_workflow_input(input, services_->limits); !valid) {
      set_error(context.getResults().initError(), valid.error());
      return kj::READY_NOW;
    }
    auto b = bridge<std::string>();
    if (id.empty()) id = new_workflow_id();
    std::string json = text(params.getDefinitionJson());
    std::string run_from = text(params.getRunFrom());
    caf::anon_send(services_->client_bridge, actors::submit_atom::value, id, json, input, run_from,
                   Reply<std::string>{b.resolve});
    return b.promise.then([context](Result<std::string> r) mutable {
      auto results = context.getResults(message_size(r ? r->size() : r.error().message.size()));
      if (r) {
        results.setWorkflowId(*r);
      } else {
        set_error(results.initError(), r.error());
      }
    });
  }

  kj::Promise<void> result(ResultContext context) override {
    auto b = bridge<actors::WorkflowOutcome>();
    std::string id = text(context.getParams().getWorkflowId());
    const uint64_t timeout_ms = context.getParams().getTimeoutMs();
    caf::anon_send(services_->client_bridge, actors::result_atom::value, id,
                   Reply<actors::WorkflowOutcome>{b.resolve});
    kj::Promise<Result<actors::WorkflowOutcome>> answer = kj::mv(b.promise);
    // Beyond what kj's timer can hold, a timeout is as good as none.
    if (timeout_ms > 0 && timeout_ms < uint64_t{1} << 40) {
      const Duration timeout = std::chrono::milliseconds(timeout_ms);
      // The directory keeps the request until the workflow ends; its answer then goes nowhere.
      answer = answer.exclusiveJoin(timer_.afterDelay(timeout_ms * kj::MILLISECONDS).then([id, timeout] {
        return Result<actors::WorkflowOutcome>(
            fail(Errc::TIMED_OUT, "workflow '" + id + "' did not end within " + format_duration(timeout)));
      }));
    }
    return answer.then([context, id](Result<actors::WorkflowOutcome> r) mutable {
      size_t bytes = id.size() + (r ? r->failure_reason.size() : r.error().message.size());
      if (r) {
        for (const auto& output : r->outputs) bytes += output.task.size() + output.result_json.size() + 16;
      }
      auto results = context.getResults(message_size(bytes));
      if (!r) {
        set_error(results.initError(), r.error());
        return;
      }
      auto out = results.initResult();
      out.setWorkflowId(id);
      out.setState(r->state);
      out.setWorkflowState(to_wire(workflow_state_code(r->state)));
      out.setDetail(r->failure_reason);
      if (!r->outputs.empty()) {
        auto outputs = out.initOutputs(static_cast<unsigned>(r->outputs.size()));
        for (size_t i = 0; i < r->outputs.size(); ++i) {
          outputs[static_cast<unsigned>(i)].setTask(r->outputs[i].task);
          outputs[static_cast<unsigned>(i)].setResultJson(r->outputs[i].result_json);
        }
      }
    });
  }

  kj::Promise<void> describe(DescribeContext context) override {
    auto b = bridge<WorkflowStatus>();
    caf::anon_send(services_->client_bridge, actors::describe_atom::value, text(context.getParams().getWorkflowId()),
                   Reply<WorkflowStatus>{b.resolve});
    return b.promise.then([context](Result<WorkflowStatus> r) mutable {
      auto results = context.getResults();
      if (!r) {
        set_error(results.initError(), r.error());
        return;
      }
      auto out = results.initDescription();
      out.setWorkflowId(r->workflow_id);
      out.setState(r->state);
      out.setWorkflowState(to_wire(r->state_code));
      out.setDetail(r->detail);
      const int64_t now_us = wall_clock_us();
      auto tasks = out.initTasks(static_cast<unsigned>(r->tasks.size()));
      for (size_t i = 0; i < r->tasks.size(); ++i) {
        const auto& t = r->tasks[i];
        auto task = tasks[static_cast<unsigned>(i)];
        task.setName(t.name);
        task.setState(t.state);
        task.setTaskState(to_wire(t.state_code));
        task.setAttempt(t.attempt);
        task.setWorker(t.worker);
        task.setFailure(t.failure);
        task.setFailureDetails(t.failure_details);
        task.setProgress(as_data(t.progress));
        task.setProgressText(t.progress);
        task.setResultJson(t.result_json);
        task.setAwaitingCompletion(t.awaiting_completion);
        task.setStartedUs(t.started_us);
        task.setEndedUs(t.ended_us);
        task.setDurationUs(t.duration_us(now_us));
        task.setWaitReason(t.wait_reason);
        auto depends_on = task.initDependsOn(static_cast<unsigned>(t.depends_on.size()));
        for (size_t d = 0; d < t.depends_on.size(); ++d) depends_on.set(static_cast<unsigned>(d), t.depends_on[d]);
        task.setSession(t.session);
      }
      auto sessions = out.initSessions(static_cast<unsigned>(r->sessions.size()));
      for (size_t i = 0; i < r->sessions.size(); ++i) {
        const auto& s = r->sessions[i];
        auto session = sessions[static_cast<unsigned>(i)];
        session.setName(s.name);
        session.setState(s.state);
        session.setAttempt(s.attempt);
        session.setWorker(s.worker);
        session.setResourceId(s.resource_id);
        session.setEnvEnter(s.env_enter);
        session.setEnvExit(s.env_exit);
        session.setFailure(s.failure);
        session.setRecreateToken(s.recreate_token);
        session.setWaitReason(s.wait_reason);
      }
    });
  }

  kj::Promise<void> control(ControlContext context) override {
    auto params = context.getParams();
    // An enumerant this build does not know (a newer client's, or a hostile one's) is refused
    // here, before it can be taken for another action.
    const auto raw_action = static_cast<uint16_t>(params.getAction());
    if (raw_action > static_cast<uint16_t>(schema::ControlAction::KILL)) {
      set_error(context.getResults().initError(),
                Error{Errc::INVALID_ARGUMENT, "unknown control action " + std::to_string(raw_action) +
                                                  " (expected pause, resume, stop or kill)"});
      return kj::READY_NOW;
    }
    auto b = bridge<std::string>();
    caf::anon_send(services_->client_bridge, actors::control_atom::value, text(params.getWorkflowId()),
                   static_cast<uint8_t>(params.getAction()), Reply<std::string>{b.resolve});
    return answer_state(kj::mv(b.promise), context);
  }

  kj::Promise<void> rerun(RerunContext context) override {
    auto params = context.getParams();
    auto b = bridge<std::string>();
    caf::anon_send(services_->client_bridge, actors::rerun_atom::value, text(params.getWorkflowId()),
                   text(params.getRunFrom()), Reply<std::string>{b.resolve});
    return answer_state(kj::mv(b.promise), context);
  }

  kj::Promise<void> workers(WorkersContext context) override {
    auto params = context.getParams();
    const std::string name = text(params.getName());
    const bool history = params.getHistory() && !name.empty();
    auto b = bridge<std::vector<actors::WorkerView>>();
    caf::anon_send(services_->client_bridge, actors::view_atom::value, name,
                   Reply<std::vector<actors::WorkerView>>{b.resolve});
    auto store = services_->store;
    return b.promise.then([context, store, name, history](Result<std::vector<actors::WorkerView>> views) mutable {
      auto results = context.getResults();
      if (!views) {
        set_error(results.initError(), views.error());
        return;
      }
      std::optional<std::vector<storage::StoredEvent>> journal;
      if (history) {
        auto read = store->read_worker_journal(name, 1, storage::default_worker_journal_entries);
        if (!read) {
          set_error(results.initError(), read.error());
          return;
        }
        journal = std::move(*read);
      }
      auto out = results.initWorkers(static_cast<unsigned>(views->size()));
      for (unsigned i = 0; i < out.size(); ++i) fill_worker_summary(out[i], (*views)[i], journal ? &*journal : nullptr);
    });
  }

  kj::Promise<void> drainWorker(DrainWorkerContext context) override {
    auto params = context.getParams();
    actors::WorkerOrder order;
    order.shard_id = text(params.getName());
    order.kind = actors::WorkerOrderKind::DRAIN;
    order.immediate = params.getImmediate();
    order.exit_when_drained = params.getExitWhenDrained();
    if (const uint64_t deadline_ms = params.getDeadlineMs(); deadline_ms > 0) {
      // As long as a duration may be: in microseconds from now, a longer one does not fit.
      if (deadline_ms > static_cast<uint64_t>(max_duration.count() / 1000)) {
        set_error(context.getResults().initError(),
                  fail(Errc::INVALID_ARGUMENT, "a drain deadline of " + std::to_string(deadline_ms) +
                                                   " ms is too long (at most about 146 years)"));
        return kj::READY_NOW;
      }
      order.deadline_us = wall_clock_us() + static_cast<int64_t>(deadline_ms) * 1000;
    }
    return order_worker(std::move(order), context);
  }

  kj::Promise<void> undrainWorker(UndrainWorkerContext context) override {
    actors::WorkerOrder order;
    order.shard_id = text(context.getParams().getName());
    order.kind = actors::WorkerOrderKind::UNDRAIN;
    return order_worker(std::move(order), context);
  }

  kj::Promise<void> forgiveWorker(ForgiveWorkerContext context) override {
    actors::WorkerOrder order;
    order.shard_id = text(context.getParams().getName());
    order.kind = actors::WorkerOrderKind::FORGIVE;
    return order_worker(std::move(order), context);
  }

  kj::Promise<void> purge(PurgeContext context) override {
    auto b = bridge<uint64_t>();
    services_->retention->purge(context.getParams().getClosedBeforeUs(), b.resolve);
    return b.promise.then([context](Result<uint64_t> purged) mutable {
      auto results = context.getResults();
      if (purged) {
        results.setPurged(*purged);
      } else {
        set_error(results.initError(), purged.error());
      }
    });
  }

  kj::Promise<void> retryTask(RetryTaskContext context) override {
    auto params = context.getParams();
    actors::TaskCommand command{actors::TaskCommandKind::RETRY, text(params.getTask()), {}, {}};
    return operate(text(params.getWorkflowId()), std::move(command), context);
  }

  kj::Promise<void> skipTask(SkipTaskContext context) override {
    auto params = context.getParams();
    actors::TaskCommand command{actors::TaskCommandKind::SKIP, text(params.getTask()), text(params.getReason()), {}};
    if (command.reason.empty()) command.reason = "skipped by a client";
    return operate(text(params.getWorkflowId()), std::move(command), context);
  }

  kj::Promise<void> updateTask(UpdateTaskContext context) override {
    auto params = context.getParams();
    auto options = task_options_patch(params.getOptions());
    if (!options) {
      set_error(context.getResults().initError(), options.error());
      return kj::READY_NOW;
    }
    actors::TaskCommand command{actors::TaskCommandKind::UPDATE, text(params.getTask()), {}, std::move(*options)};
    return operate(text(params.getWorkflowId()), std::move(command), context);
  }

 private:
  /// Answers a call whose results are (state, error) with the state the bridge replies.
  template <class Context>
  static kj::Promise<void> answer_state(kj::Promise<Result<std::string>> state, Context context) {
    return state.then([context](Result<std::string> r) mutable {
      auto results = context.getResults();
      if (r) {
        results.setState(*r);
        results.setWorkflowState(to_wire(workflow_state_code(*r)));
      } else {
        set_error(results.initError(), r.error());
      }
    });
  }

  /// Passes an operator's task command to the workflow; answers (workflowState, taskState, error).
  template <class Context>
  kj::Promise<void> operate(std::string workflow_id, actors::TaskCommand command, Context context) {
    auto b = bridge<actors::TaskCommandOutcome>();
    caf::anon_send(services_->client_bridge, actors::operate_atom::value, std::move(workflow_id), std::move(command),
                   Reply<actors::TaskCommandOutcome>{b.resolve});
    return b.promise.then([context](Result<actors::TaskCommandOutcome> r) mutable {
      auto results = context.getResults();
      if (r) {
        results.setWorkflowState(r->workflow_state);
        results.setTaskState(r->task_state);
        results.setWorkflowStateCode(to_wire(workflow_state_code(r->workflow_state)));
        results.setTaskStateCode(to_wire(task_state_code(r->task_state)));
      } else {
        set_error(results.initError(), r.error());
      }
    });
  }

  /// Passes an operator's drain, undrain or forgive to the dispatcher; answers (worker, error).
  template <class Context>
  kj::Promise<void> order_worker(actors::WorkerOrder order, Context context) {
    auto b = bridge<actors::WorkerView>();
    caf::anon_send(services_->client_bridge, actors::operate_atom::value, std::move(order),
                   Reply<actors::WorkerView>{b.resolve});
    return b.promise.then([context](Result<actors::WorkerView> view) mutable {
      auto results = context.getResults();
      if (view) {
        fill_worker_summary(results.initWorker(), *view);
      } else {
        set_error(results.initError(), view.error());
      }
    });
  }

  /// Ends the invocation the token names with `report`; `error` is set unless that is durable.
  kj::Promise<void> end_task(const std::string& token, TaskReport report, schema::Error::Builder error) {
    auto claims = verify_task_token(services_->task_token_key, token);
    if (!claims) {
      set_error(error, claims.error());
      return kj::READY_NOW;
    }
    report.invocation_id = claims->invocation_id;
    auto b = bridge<bool>();
    caf::anon_send(services_->client_bridge, actors::complete_atom::value, claims->workflow_id, claims->task_name,
                   std::move(report), Reply<bool>{b.resolve});
    return b.promise.then([error](Result<bool> r) mutable {
      if (!r) set_error(error, r.error());
    });
  }

  /// What taskLogs reads: the store, describe and worker views through the client bridge, and
  /// the workers' capabilities.
  TaskLogPorts log_ports() const {
    TaskLogPorts ports;
    ports.store = services_->store;
    auto bridge_actor = services_->client_bridge;
    ports.describe = [bridge_actor](const std::string& id) {
      auto b = bridge<WorkflowStatus>();
      caf::anon_send(bridge_actor, actors::describe_atom::value, id, Reply<WorkflowStatus>{b.resolve});
      return kj::mv(b.promise);
    };
    ports.worker = [workers = workers_](const std::string& shard) { return workers->find(shard); };
    ports.hostname = [bridge_actor](const std::string& shard) {
      auto b = bridge<std::vector<actors::WorkerView>>();
      caf::anon_send(bridge_actor, actors::view_atom::value, shard, Reply<std::vector<actors::WorkerView>>{b.resolve});
      return b.promise.then([](Result<std::vector<actors::WorkerView>> views) {
        return views && !views->empty() ? views->front().record.hostname : std::string();
      });
    };
    return ports;
  }

  std::shared_ptr<SchedulerServices> services_;
  kj::Timer& timer_;
  std::shared_ptr<WorkerControls> workers_;
};

class GatewayImpl final : public schema::Gateway::Server {
 public:
  /// One per connection: `ticket` is that connection's, admitted or refused by its calls.
  GatewayImpl(std::shared_ptr<SchedulerServices> services, kj::TaskSet& tasks, kj::Timer& timer,
              std::shared_ptr<WorkerControls> workers, std::shared_ptr<ConnectionTicket> ticket)
      : services_(std::move(services)), tasks_(tasks), timer_(timer), workers_(std::move(workers)),
        ticket_(std::move(ticket)) {}

  kj::Promise<void> client(ClientContext context) override {
    if (!admit(text(context.getParams().getToken()), context.getResults().initError())) return kj::READY_NOW;
    context.getResults().setClient(kj::heap<CountedCalls<ClientServiceImpl>>(ticket_, services_, timer_, workers_));
    return kj::READY_NOW;
  }

  kj::Promise<void> admin(AdminContext context) override {
    if (!admit(text(context.getParams().getToken()), context.getResults().initError())) return kj::READY_NOW;
    context.getResults().setAdmin(make_admin_service(services_, ticket_));
    return kj::READY_NOW;
  }

  kj::Promise<void> registerWorker(RegisterWorkerContext context) override {
    auto params = context.getParams();
    if (!admit(text(params.getToken()), context.getResults().initError())) return kj::READY_NOW;
    auto in = params.getInfo();
    actors::WorkerInfo info;
    info.shard_id = text(in.getShardId());
    info.hostname = text(in.getHostname());
    info.pid = in.getPid();
    info.instance_id = text(in.getInstanceId());
    info.worker_id = text(in.getWorkerId());
    for (auto list : in.getTaskLists()) info.task_lists[text(list.getName())] = list.getSlots();
    info.resource_id = text(in.getResourceId());
    info.max_concurrent_sessions = in.getMaxConcurrentSessions();
    for (auto f : in.getRegistrations()) info.registrations.push_back(actors::Fence{f.getEpoch(), f.getSequence()});
    if (info.shard_id.empty() || info.instance_id.empty() || info.task_lists.empty()) {
      set_error(context.getResults().initError(),
                fail(Errc::INVALID_ARGUMENT, "a worker registers with a shard id, an instance id and at least one task list"));
      return kj::READY_NOW;
    }
    // A worker that proved who it is with a certificate registers as that worker only: holding
    // the cluster token, or another worker's certificate, does not make anyone worker X.
    if (const auto& named = ticket_->certificate_name(); !named.empty() && named != info.shard_id) {
      set_error(context.getResults().initError(),
                fail(Errc::INVALID_ARGUMENT, "this connection's certificate names " + named +
                                                 ": it may register only as worker " + named + ", not " +
                                                 info.shard_id));
      return kj::READY_NOW;
    }
    auto link = std::make_shared<CapnpWorkerLink>(services_->rpc, params.getControl(), tasks_,
                                                  services_->task_token_key);
    auto b = bridge<actors::RegistrationOutcome>();
    caf::anon_send(services_->dispatcher, actors::register_atom::value, info,
                   std::shared_ptr<actors::WorkerLink>(link), Reply<actors::RegistrationOutcome>{b.resolve});
    return b.promise.then([context, link, workers = workers_, shard = info.shard_id,
                           control = params.getControl()](Result<actors::RegistrationOutcome> outcome) mutable {
      auto results = context.getResults();
      if (!outcome) {
        set_error(results.initError(), outcome.error());
        return;
      }
      link->bind(outcome->worker);
      workers->registered(shard, kj::mv(control));
      auto registration = results.initRegistration();
      // Not counted: a worker's heartbeats keep its connection from being idle, and its
      // reports are the hot path.
      registration.setSession(kj::heap<WorkerSessionImpl>(outcome->worker));
      auto t = registration.initTimeouts();
      auto ms = [](Duration d) {
        return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
      };
      t.setHeartbeatIntervalMs(ms(outcome->timeouts.heartbeat_interval));
      t.setUnhealthyAfterMs(ms(outcome->timeouts.unhealthy_after));
      t.setMustDieAfterMs(ms(outcome->timeouts.must_die_after));
      registration.setStartClean(outcome->start_clean);
      set_fence(registration.initFence(), outcome->fence);
      registration.setLeaseMs(ms(outcome->timeouts.lease));
    });
  }

 private:
  /// Whether `token` admits the connection; if not, `error` says why and the connection closes.
  bool admit(const std::string& token, schema::Error::Builder error) {
    if (!token_matches(services_->cluster_token, token)) {
      set_error(error, wrong_token(token));
      ticket_->refuse();
      return false;
    }
    ticket_->admit({});
    return true;
  }

  std::shared_ptr<SchedulerServices> services_;
  kj::TaskSet& tasks_;
  kj::Timer& timer_;
  std::shared_ptr<WorkerControls> workers_;  ///< shared by every connection: filled at registration, read by taskLogs
  std::shared_ptr<ConnectionTicket> ticket_;
};

}  // namespace

Result<std::function<void()>> serve_scheduler(kj::AsyncIoContext& io, kj::TaskSet& tasks,
                                              std::shared_ptr<SchedulerServices> services,
                                              const Address& listen, uint16_t* bound_port) {
  services->client_bridge =
      services->system->spawn(client_bridge, services->directory, services->dispatcher, services->store,
                              services->definitions, std::shared_ptr<const actors::WaitBoard>(services->waits));
  auto workers = std::make_shared<WorkerControls>();
  GatewayListenerSetup setup;
  setup.limits = services->connection_limits;
  setup.log = services->log;
  setup.meters = services->rpc_meters;
  setup.tls = services->tls;
  setup.gateway = [services, workers, &tasks, &timer = io.provider->getTimer()](std::shared_ptr<ConnectionTicket> ticket) {
    return capnp::Capability::Client(kj::heap<GatewayImpl>(services, tasks, timer, workers, std::move(ticket)));
  };
  auto served = serve_gateway_connections(io, std::move(setup), listen, bound_port);
  if (!served) return served.error();
  return std::function<void()>([stop = std::move(*served), workers] {
    stop();
    workers->clear();
  });
}

}  // namespace troupe::runtime
