// GatewayClient: one connection (Cap'n Proto RPC over a BufferedStream), one KJ event loop on
// the caller's thread.
#include "runtime/client/gateway_client.hpp"

#include <memory>

#include <capnp/dynamic.h>
#include <capnp/rpc-twoparty.h>
#include <capnp/serialize-packed.h>
#include <kj/async-io.h>
#include <kj/debug.h>
#include <kj/io.h>

#include "runtime/client/client_rpc.hpp"
#include "runtime/net/buffered_stream.hpp"
#include "runtime/wire.hpp"
#include "schema/gateway.capnp.h"
#include "schema/wire_states.hpp"

namespace troupe::client {
namespace {

using runtime::message_size;
using runtime::text;

kj::Duration kj_duration(Duration d) { return d.count() * kj::MICROSECONDS; }


/// What a watch's sink shares with the watch() call: the callback lives on watch()'s stack,
/// so a call that arrives after watch() returned finds `open` false and stops the watch.
struct WatchState {
  const std::function<bool(const WatchedEvent&)>* on_event = nullptr;
  const std::function<void()>* on_batch = nullptr;
  uint64_t last = 0;
  bool stopped = false;
  bool open = true;
};

class HistorySinkImpl final : public schema::HistorySink::Server {
 public:
  explicit HistorySinkImpl(std::shared_ptr<WatchState> state) : state_(std::move(state)) {}

  kj::Promise<void> events(EventsContext context) override {
    auto& st = *state_;
    for (auto e : context.getParams().getEvents()) {
      if (st.stopped || !st.open) break;
      if (e.getSequence() <= st.last) continue;  // each event once, whatever the server sends
      st.last = e.getSequence();
      if (!(*st.on_event)(watched_event(e))) st.stopped = true;
    }
    if (st.open && st.on_batch != nullptr && *st.on_batch) (*st.on_batch)();
    context.getResults().setStop(st.stopped || !st.open);
    return kj::READY_NOW;
  }

 private:
  std::shared_ptr<WatchState> state_;
};

/// What a log sink shares with the task_logs() call, as WatchState does for a watch.
struct LogState {
  const std::function<bool(const LogChunk&)>* on_chunk = nullptr;
  bool stopped = false;
  bool open = true;
};

class LogSinkImpl final : public schema::LogSink::Server {
 public:
  explicit LogSinkImpl(std::shared_ptr<LogState> state) : state_(std::move(state)) {}

  kj::Promise<void> write(WriteContext context) override {
    auto& st = *state_;
    if (!st.stopped && st.open) {
      auto in = context.getParams().getChunk();
      LogChunk chunk;
      chunk.task = text(in.getTask());
      chunk.attempt = in.getAttempt();
      chunk.invocation_id = text(in.getInvocationId());
      chunk.worker = text(in.getWorker());
      chunk.offset = in.getOffset();
      chunk.data = runtime::bytes(in.getData());
      chunk.first = in.getFirst();
      chunk.last = in.getLast();
      chunk.path = text(in.getPath());
      if (!(*st.on_chunk)(chunk)) st.stopped = true;
    }
    context.getResults().setStop(st.stopped || !st.open);
    return kj::READY_NOW;
  }

 private:
  std::shared_ptr<LogState> state_;
};

/// Sends `call` and waits for a response that has no error.
template <class Request>
Result<void> call_void(Request&& call, const std::string& address, kj::WaitScope& wait) {
  return call.send()
      .then(
          [](auto&& response) -> Result<void> {
            if (has_error(response)) return error_of(response);
            return ok();
          },
          [address](kj::Exception&& e) -> Result<void> { return lost(address, e); })
      .wait(wait);
}

}  // namespace

struct GatewayClient::Impl : kj::TaskSet::ErrorHandler {
  std::string address;
  std::shared_ptr<ThreadIo> thread_io = ThreadIo::of_this_thread();
  kj::AsyncIoContext& io = thread_io->io;
  std::shared_ptr<runtime::TlsEndpoint> tls;  ///< nullptr: plaintext
  kj::Own<Connection> connection;
  /// The scheduler's Gateway: a promise until the connection is made.
  schema::Gateway::Client gateway;
  /// The answer to Gateway.client: its service, pipelined, and whether the token was accepted.
  capnp::RemotePromise<schema::Gateway::ClientResults> handshake;
  schema::ClientService::Client service;
  kj::TaskSet tasks{*this};
  size_t outstanding = 0;
  kj::Own<kj::PromiseFulfiller<void>> idle;  ///< set while run() waits

  static capnp::RemotePromise<schema::Gateway::ClientResults> ask_client(schema::Gateway::Client& gateway,
                                                                        const std::string& token) {
    auto request = gateway.clientRequest();
    request.setToken(token);
    return request.send();
  }

  Impl(const std::string& host, uint16_t port, const std::string& token, std::shared_ptr<runtime::TlsEndpoint> endpoint)
      : address(host + ":" + std::to_string(port)),
        tls(std::move(endpoint)),
        gateway(connect(host, port)),
        handshake(ask_client(gateway, token)),
        service(handshake.getClient()) {}

  kj::Promise<schema::Gateway::Client> connect(const std::string& host, uint16_t port) {
    return connect_gateway(io, host, port, tls.get(), connection);
  }

  kj::WaitScope& wait_scope() { return io.waitScope; }

  // Callbacks catch what they can; anything else is a bug in a callback.
  void taskFailed(kj::Exception&& e) override { KJ_LOG(ERROR, "a client callback threw", e); }

  void finished_one() {
    if (--outstanding == 0 && idle) idle->fulfill();
  }

  kj::Promise<Result<std::string>> start(const StartRequest& request) {
    auto call = service.startWorkflowRequest(message_size(request.definition_json.size() + request.input_json.size() +
                                                          request.workflow_id.size() + request.run_from.size()));
    call.setDefinitionJson(request.definition_json);
    call.setInputJson(request.input_json.empty() ? "{}" : request.input_json);
    call.setWorkflowId(request.workflow_id);
    call.setRunFrom(request.run_from);
    return call.send().then(
        [](capnp::Response<schema::ClientService::StartWorkflowResults>&& response) -> Result<std::string> {
          if (has_error(response)) return error_of(response);
          return text(response.getWorkflowId());
        },
        [address = address](kj::Exception&& e) -> Result<std::string> { return lost(address, e); });
  }

  /// `timeout_ms`: how long the scheduler waits (0: until the workflow ends).
  kj::Promise<Result<WorkflowResult>> result(const std::string& workflow_id, uint64_t timeout_ms = 0) {
    auto call = service.resultRequest(message_size(workflow_id.size()));
    call.setWorkflowId(workflow_id);
    call.setTimeoutMs(timeout_ms);
    return call.send().then(
        [](capnp::Response<schema::ClientService::ResultResults>&& response) -> Result<WorkflowResult> {
          if (has_error(response)) return error_of(response);
          auto r = response.getResult();
          WorkflowResult out{text(r.getWorkflowId()), text(r.getState()), text(r.getDetail()),
                             from_wire(r.getWorkflowState()), {}};
          for (auto o : r.getOutputs()) out.outputs.push_back(TaskOutput{text(o.getTask()), text(o.getResultJson())});
          return out;
        },
        [address = address](kj::Exception&& e) -> Result<WorkflowResult> { return lost(address, e); });
  }

  kj::Promise<Result<std::string>> control(const std::string& workflow_id, GatewayClient::Control action) {
    auto call = service.controlRequest();
    call.setWorkflowId(workflow_id);
    switch (action) {
      case GatewayClient::Control::PAUSE: call.setAction(schema::ControlAction::PAUSE); break;
      case GatewayClient::Control::RESUME: call.setAction(schema::ControlAction::RESUME); break;
      case GatewayClient::Control::STOP: call.setAction(schema::ControlAction::STOP); break;
      case GatewayClient::Control::KILL: call.setAction(schema::ControlAction::KILL); break;
    }
    return call.send().then(
        [](capnp::Response<schema::ClientService::ControlResults>&& response) -> Result<std::string> {
          if (has_error(response)) return error_of(response);
          return text(response.getState());
        },
        [address = address](kj::Exception&& e) -> Result<std::string> { return lost(address, e); });
  }

  /// `promise`, or TIMED_OUT after `timeout`.
  template <class T>
  kj::Promise<Result<T>> within(kj::Promise<Result<T>> promise, Duration timeout, std::string what) {
    auto expired = io.provider->getTimer().afterDelay(kj_duration(timeout)).then([what]() -> Result<T> {
      return fail(Errc::TIMED_OUT, what);
    });
    return promise.exclusiveJoin(kj::mv(expired));
  }
};

GatewayClient::GatewayClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GatewayClient::~GatewayClient() = default;

Result<std::unique_ptr<GatewayClient>> GatewayClient::connect(const std::string& host, uint16_t port,
                                                               const ConnectOptions& options) {
  const std::string address = host + ":" + std::to_string(port);
  const Duration timeout = options.timeout;
  try {
    auto tls = client_tls(host, options);
    if (!tls) return tls.error();
    auto impl = std::make_unique<Impl>(host, port, options.token, std::move(*tls));
    // The connection is made lazily: wait for the handshake now, so an unreachable scheduler
    // or a refused token shows here rather than on the first call.
    auto ready = kj::mv(impl->handshake).then(
        [](capnp::Response<schema::Gateway::ClientResults>&& response) -> Result<bool> {
          if (has_error(response)) return error_of(response);
          return true;
        },
        [address](kj::Exception&& e) -> Result<bool> {
          return fail(Errc::UNAVAILABLE, "cannot reach the scheduler at " + address + ": " + e.getDescription().cStr());
        });
    auto outcome = impl->within(kj::mv(ready), timeout, "no answer from the scheduler at " + address + " within " +
                                                            format_duration(timeout))
                       .wait(impl->wait_scope());
    if (!outcome) {
      if (outcome.error().code == Errc::TIMED_OUT) return fail(Errc::UNAVAILABLE, outcome.error().message);
      return outcome.error();
    }
    return std::unique_ptr<GatewayClient>(new GatewayClient(std::move(impl)));
  } catch (const kj::Exception& e) {
    return fail(Errc::UNAVAILABLE, "cannot reach the scheduler at " + address + ": " + e.getDescription().cStr());
  }
}

Result<std::string> GatewayClient::start(const StartRequest& request) {
  return impl_->start(request).wait(impl_->wait_scope());
}

Result<WorkflowResult> GatewayClient::result(const std::string& workflow_id, Duration timeout) {
  // The scheduler answers TIMED_OUT itself; the local deadline, a little later, only covers one
  // that predates the timeout parameter.
  const auto ms = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  return impl_
      ->within(impl_->result(workflow_id, static_cast<uint64_t>(ms)), timeout + std::chrono::seconds(2),
               "workflow '" + workflow_id + "' did not end within " + format_duration(timeout))
      .wait(impl_->wait_scope());
}

Result<WorkflowStatus> GatewayClient::describe(const std::string& workflow_id) {
  auto call = impl_->service.describeRequest();
  call.setWorkflowId(workflow_id);
  return call.send()
      .then(
          [](capnp::Response<schema::ClientService::DescribeResults>&& response) -> Result<WorkflowStatus> {
            if (has_error(response)) return error_of(response);
            auto d = response.getDescription();
            WorkflowStatus out{text(d.getWorkflowId()), text(d.getState()), text(d.getDetail()), {},
                               from_wire(d.getWorkflowState()), {}};
            for (auto t : d.getTasks()) {
              TaskStatus task;
              task.name = text(t.getName());
              task.state = text(t.getState());
              task.state_code = from_wire(t.getTaskState());
              task.attempt = t.getAttempt();
              task.worker = text(t.getWorker());
              task.failure = text(t.getFailure());
              task.failure_details = text(t.getFailureDetails());
              // JSON is Text; an older scheduler filled only the Data field.
              task.progress = t.hasProgressText() ? text(t.getProgressText()) : runtime::bytes(t.getProgress());
              task.awaiting_completion = t.getAwaitingCompletion();
              task.result_json = text(t.getResultJson());
              task.started_us = t.getStartedUs();
              task.ended_us = t.getEndedUs();
              task.wait_reason = text(t.getWaitReason());
              for (auto dependency : t.getDependsOn()) task.depends_on.push_back(text(dependency));
              task.session = text(t.getSession());
              out.tasks.push_back(std::move(task));
            }
            for (auto s : d.getSessions()) {
              out.sessions.push_back(SessionStatus{text(s.getName()), text(s.getState()), s.getAttempt(),
                                                   text(s.getWorker()), text(s.getResourceId()),
                                                   text(s.getEnvEnter()), text(s.getEnvExit()),
                                                   text(s.getFailure()), text(s.getRecreateToken()),
                                                   text(s.getWaitReason())});
            }
            return out;
          },
          [address = impl_->address](kj::Exception&& e) -> Result<WorkflowStatus> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

Result<std::string> GatewayClient::control(const std::string& workflow_id, Control action) {
  return impl_->control(workflow_id, action).wait(impl_->wait_scope());
}

Result<std::string> GatewayClient::rerun(const std::string& workflow_id, const std::string& from_task) {
  auto call = impl_->service.rerunRequest();
  call.setWorkflowId(workflow_id);
  call.setRunFrom(from_task);
  return call.send()
      .then(
          [](capnp::Response<schema::ClientService::RerunResults>&& response) -> Result<std::string> {
            if (has_error(response)) return error_of(response);
            return text(response.getState());
          },
          [address = impl_->address](kj::Exception&& e) -> Result<std::string> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

Result<uint64_t> GatewayClient::purge(int64_t closed_before_us) {
  auto call = impl_->service.purgeRequest();
  call.setClosedBeforeUs(closed_before_us);
  return call.send()
      .then(
          [](capnp::Response<schema::ClientService::PurgeResults>&& response) -> Result<uint64_t> {
            if (has_error(response)) return error_of(response);
            return response.getPurged();
          },
          [address = impl_->address](kj::Exception&& e) -> Result<uint64_t> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

namespace {

std::string health_word(schema::WorkerHealth health) {
  switch (health) {
    case schema::WorkerHealth::NEW: return "NEW";
    case schema::WorkerHealth::HEALTHY: return "HEALTHY";
    case schema::WorkerHealth::UNHEALTHY: return "UNHEALTHY";
    case schema::WorkerHealth::MUST_DIE: return "MUST_DIE";
    case schema::WorkerHealth::STOPPING: return "STOPPING";
  }
  return "?";
}

WorkerJournalEntry journal_entry(schema::HistoryEvent::Reader event) {
  WorkerJournalEntry entry;
  entry.at_us = event.getTimestampUs();
  auto body = event.getBody();
  if (body.isWorkerRegistered()) {
    auto r = body.getWorkerRegistered();
    entry.what = "registered (pid " + std::to_string(r.getPid()) + " on " + text(r.getHostname()) + ", instance " +
                 text(r.getInstanceId()) + ", worker id " + text(r.getWorkerId()) + ")";
  } else if (body.isWorkerHealthChanged()) {
    auto h = body.getWorkerHealthChanged();
    entry.what = "health " + health_word(h.getFrom()) + " -> " + health_word(h.getTo());
  } else {
    entry.what = "(an entry this client does not know)";
  }
  return entry;
}

WorkerSummary worker_summary(schema::WorkerSummary::Reader in) {
  WorkerSummary out;
  out.name = text(in.getName());
  out.worker_id = text(in.getWorkerId());
  out.status = text(in.getStatus());
  out.health = text(in.getHealth());
  out.standing = text(in.getStanding());
  out.live = in.getLive();
  out.hostname = text(in.getHostname());
  out.pid = in.getPid();
  out.resource_id = text(in.getResourceId());
  for (auto l : in.getTaskLists()) out.task_lists.push_back({text(l.getName()), l.getSlots(), l.getUsed()});
  for (auto id : in.getRunning()) out.running.push_back(text(id));
  out.last_heartbeat_age_ms = in.getLastHeartbeatAgeMs();
  auto drain = in.getDrain();
  out.drain_immediate = drain.getImmediate();
  out.drain_deadline_us = drain.getDeadlineUs();
  out.drain_exit = drain.getExitWhenDrained();
  out.drain_requested_us = drain.getRequestedUs();
  out.quarantined_until_us = in.getQuarantinedUntilUs();
  out.quarantines = in.getQuarantines();
  for (auto f : in.getFailures()) out.failures.push_back({text(f.getTask()), text(f.getReason()), f.getAtUs()});
  out.first_registered_us = in.getFirstRegisteredUs();
  out.last_registered_us = in.getLastRegisteredUs();
  out.registrations = in.getRegistrations();
  for (auto r : in.getRecent()) {
    out.recent.push_back({text(r.getInvocationId()), text(r.getTask()), r.getAttempt(), text(r.getOutcome()),
                          r.getEndedUs()});
  }
  for (auto e : in.getJournal()) out.journal.push_back(journal_entry(e));
  return out;
}

/// The answer of a worker order (drain, undrain, forgive).
template <class Response>
Result<WorkerSummary> order_result(Response& response) {
  if (has_error(response)) return error_of(response);
  return worker_summary(response.getWorker());
}

}  // namespace

Result<std::vector<WorkerSummary>> GatewayClient::workers(const std::string& name, bool history) {
  auto call = impl_->service.workersRequest();
  call.setName(name);
  call.setHistory(history);
  return call.send()
      .then(
          [](capnp::Response<schema::ClientService::WorkersResults>&& response) -> Result<std::vector<WorkerSummary>> {
            if (has_error(response)) return error_of(response);
            std::vector<WorkerSummary> out;
            for (auto w : response.getWorkers()) out.push_back(worker_summary(w));
            return out;
          },
          [address = impl_->address](kj::Exception&& e) -> Result<std::vector<WorkerSummary>> {
            return lost(address, e);
          })
      .wait(impl_->wait_scope());
}

Result<WorkerSummary> GatewayClient::drain_worker(const std::string& name, const DrainRequest& drain) {
  auto call = impl_->service.drainWorkerRequest();
  call.setName(name);
  call.setImmediate(drain.immediate);
  call.setDeadlineMs(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(drain.deadline).count()));
  call.setExitWhenDrained(drain.exit_when_drained);
  return call.send()
      .then([](capnp::Response<schema::ClientService::DrainWorkerResults>&& r) { return order_result(r); },
            [address = impl_->address](kj::Exception&& e) -> Result<WorkerSummary> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

Result<WorkerSummary> GatewayClient::undrain_worker(const std::string& name) {
  auto call = impl_->service.undrainWorkerRequest();
  call.setName(name);
  return call.send()
      .then([](capnp::Response<schema::ClientService::UndrainWorkerResults>&& r) { return order_result(r); },
            [address = impl_->address](kj::Exception&& e) -> Result<WorkerSummary> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

Result<WorkerSummary> GatewayClient::forgive_worker(const std::string& name) {
  auto call = impl_->service.forgiveWorkerRequest();
  call.setName(name);
  return call.send()
      .then([](capnp::Response<schema::ClientService::ForgiveWorkerResults>&& r) { return order_result(r); },
            [address = impl_->address](kj::Exception&& e) -> Result<WorkerSummary> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

namespace {

/// The answer of a task command.
template <class Response>
Result<TaskCommandResult> command_result(Response& response) {
  if (has_error(response)) return error_of(response);
  return TaskCommandResult{text(response.getWorkflowState()), text(response.getTaskState()),
                           from_wire(response.getWorkflowStateCode()), from_wire(response.getTaskStateCode())};
}

}  // namespace

Result<TaskCommandResult> GatewayClient::retry_task(const std::string& workflow_id, const std::string& task) {
  auto call = impl_->service.retryTaskRequest();
  call.setWorkflowId(workflow_id);
  call.setTask(task);
  return call.send()
      .then([](capnp::Response<schema::ClientService::RetryTaskResults>&& r) { return command_result(r); },
            [address = impl_->address](kj::Exception&& e) -> Result<TaskCommandResult> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

Result<TaskCommandResult> GatewayClient::skip_task(const std::string& workflow_id, const std::string& task,
                                                   const std::string& reason) {
  auto call = impl_->service.skipTaskRequest();
  call.setWorkflowId(workflow_id);
  call.setTask(task);
  call.setReason(reason);
  return call.send()
      .then([](capnp::Response<schema::ClientService::SkipTaskResults>&& r) { return command_result(r); },
            [address = impl_->address](kj::Exception&& e) -> Result<TaskCommandResult> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

Result<TaskCommandResult> GatewayClient::update_task(const std::string& workflow_id, const std::string& task,
                                                     const TaskUpdate& update) {
  auto call = impl_->service.updateTaskRequest();
  call.setWorkflowId(workflow_id);
  call.setTask(task);
  auto options = call.initOptions();
  options.setTaskList(update.task_list);
  if (update.priority) {
    options.setSetPriority(true);
    options.setPriority(*update.priority);
  }
  if (!update.schedule_to_start.empty() || !update.start_to_close.empty() || !update.schedule_to_close.empty() ||
      !update.heartbeat.empty()) {
    auto t = options.initTimeouts();
    if (!update.schedule_to_start.empty()) t.setScheduleToStart(update.schedule_to_start);
    if (!update.start_to_close.empty()) t.setStartToClose(update.start_to_close);
    if (!update.schedule_to_close.empty()) t.setScheduleToClose(update.schedule_to_close);
    if (!update.heartbeat.empty()) t.setHeartbeat(update.heartbeat);
  }
  if (update.retry_json == "none") {
    options.setRemoveRetry(true);
  } else {
    options.setRetryJson(update.retry_json);
  }
  return call.send()
      .then([](capnp::Response<schema::ClientService::UpdateTaskResults>&& r) { return command_result(r); },
            [address = impl_->address](kj::Exception&& e) -> Result<TaskCommandResult> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

Result<WorkflowPage> GatewayClient::list(const ListQuery& query) {
  auto call = impl_->service.listRequest();
  auto q = call.initQuery();
  q.setState(query.state);
  q.setDefinitionName(query.definition_name);
  q.setCreatedFromUs(query.created_from_us);
  q.setCreatedToUs(query.created_to_us);
  q.setAfter(query.after);
  q.setLimit(query.limit);
  q.setSort(query.sort == ListSort::ID ? schema::ListSort::ID : schema::ListSort::CREATED);
  return call.send()
      .then(
          [](capnp::Response<schema::ClientService::ListResults>&& response) -> Result<WorkflowPage> {
            if (has_error(response)) return error_of(response);
            WorkflowPage page;
            for (auto w : response.getWorkflows()) {
              page.workflows.push_back(WorkflowSummary{text(w.getWorkflowId()), text(w.getDefinitionName()),
                                                       text(w.getState()), w.getCreatedUs(), w.getClosedUs(),
                                                       from_wire(w.getWorkflowState())});
            }
            page.next_cursor = text(response.getNextCursor());
            return page;
          },
          [address = impl_->address](kj::Exception&& e) -> Result<WorkflowPage> { return lost(address, e); })
      .wait(impl_->wait_scope());
}

Result<uint64_t> GatewayClient::watch(const std::string& workflow_id, uint64_t from,
                                      const std::function<bool(const WatchedEvent&)>& on_event,
                                      const std::function<void()>& on_batch) {
  auto state = std::make_shared<WatchState>();
  state->on_event = &on_event;
  state->on_batch = &on_batch;
  state->last = from > 0 ? from - 1 : 0;
  auto call = impl_->service.watchRequest();
  call.setWorkflowId(workflow_id);
  call.setFromSequence(from == 0 ? 1 : from);
  call.setSink(kj::heap<HistorySinkImpl>(state));
  auto outcome = call.send()
                     .then(
                         [](capnp::Response<schema::ClientService::WatchResults>&& response) -> Result<void> {
                           if (has_error(response)) return error_of(response);
                           return ok();
                         },
                         [address = impl_->address](kj::Exception&& e) -> Result<void> { return lost(address, e); })
                     .wait(impl_->wait_scope());
  state->open = false;
  if (!outcome) return outcome.error();
  return state->last;
}

Result<void> GatewayClient::task_logs(const std::string& workflow_id, const LogRequest& request,
                                     const std::function<bool(const LogChunk&)>& on_chunk) {
  auto state = std::make_shared<LogState>();
  state->on_chunk = &on_chunk;
  auto call = impl_->service.taskLogsRequest();
  call.setWorkflowId(workflow_id);
  call.setTask(request.task);
  call.setAttempt(request.attempt);
  call.setFollow(request.follow);
  call.setSink(kj::heap<LogSinkImpl>(state));
  auto outcome = call.send()
                     .then(
                         [](capnp::Response<schema::ClientService::TaskLogsResults>&& response) -> Result<void> {
                           if (has_error(response)) return error_of(response);
                           return ok();
                         },
                         [address = impl_->address](kj::Exception&& e) -> Result<void> { return lost(address, e); })
                     .wait(impl_->wait_scope());
  state->open = false;
  return outcome;
}

Result<void> GatewayClient::complete_task(const std::string& token, const std::string& result) {
  auto call = impl_->service.completeTaskRequest();
  call.setToken(token);
  call.setResultJson(result);
  // The same bytes for a scheduler that predates resultJson.
  call.setResult(kj::arrayPtr(reinterpret_cast<const kj::byte*>(result.data()), result.size()));
  return call_void(call, impl_->address, impl_->wait_scope());
}

Result<void> GatewayClient::fail_task(const std::string& token, const std::string& reason, const std::string& details) {
  auto call = impl_->service.failTaskRequest();
  call.setToken(token);
  call.setReason(reason);
  call.setDetails(details);
  return call_void(call, impl_->address, impl_->wait_scope());
}

void GatewayClient::start_async(const StartRequest& request, StartCallback done) {
  ++impl_->outstanding;
  impl_->tasks.add(impl_->start(request).then([impl = impl_.get(), done = std::move(done)](Result<std::string> r) {
    done(std::move(r));
    impl->finished_one();
  }));
}

void GatewayClient::result_async(const std::string& workflow_id, ResultCallback done) {
  ++impl_->outstanding;
  impl_->tasks.add(impl_->result(workflow_id).then([impl = impl_.get(), done = std::move(done)](Result<WorkflowResult> r) {
    done(std::move(r));
    impl->finished_one();
  }));
}

void GatewayClient::control_async(const std::string& workflow_id, Control action, ControlCallback done) {
  ++impl_->outstanding;
  impl_->tasks.add(
      impl_->control(workflow_id, action).then([impl = impl_.get(), done = std::move(done)](Result<std::string> r) {
        done(std::move(r));
        impl->finished_one();
      }));
}

Result<void> GatewayClient::run(Duration timeout) {
  if (impl_->outstanding == 0) return ok();
  auto pair = kj::newPromiseAndFulfiller<void>();
  impl_->idle = kj::mv(pair.fulfiller);
  auto idle = pair.promise.then([]() -> Result<bool> { return true; });
  auto outcome = impl_->within(kj::mv(idle), timeout,
                               std::to_string(impl_->outstanding) + " calls still outstanding after " +
                                   format_duration(timeout))
                     .wait(impl_->wait_scope());
  impl_->idle = nullptr;
  if (!outcome) return outcome.error();
  return ok();
}

}  // namespace troupe::client
