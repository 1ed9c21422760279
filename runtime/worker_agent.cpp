// The worker agent: registration, heartbeats, WorkerControl, and outcome delivery.
#include "runtime/worker_agent.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/agent/hosted_sessions.hpp"
#include "actors/agent/worker_state.hpp"
#include "actors/meters.hpp"
#include "actors/worker/fence.hpp"
#include "schema/gateway.capnp.h"
#include "schema/worker.capnp.h"
#include "runtime/logs/log_files.hpp"
#include "runtime/net/buffered_stream.hpp"
#include "runtime/net/tls.hpp"
#include "runtime/shell_runner.hpp"
#include "runtime/wire.hpp"
#include "schema/node_log.hpp"

namespace troupe::runtime {
namespace {

using actors::TaskReport;
using Clock = std::chrono::steady_clock;

std::string random_instance_id() {
  std::random_device device;
  std::mt19937_64 random((uint64_t(device()) << 32) ^ device() ^ uint64_t(::getpid()));
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random()));
  return buf;
}

/// The grace of a cancel that names none.
constexpr Duration default_cancel_grace = std::chrono::seconds(10);

kj::Duration to_kj(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count() * kj::MILLISECONDS;
}

/// The worker's one task_port: the node's executor reports every invocation here, and the
/// bridge hands each report to the agent. One long-lived actor rather than one per invocation: on a worker that
/// runs thousands of short tasks a second, spawning and ending an actor each was a good part
/// of its CPU. Invocations run without asking for a slot: a worker node's executor has
/// unlimited slots, because the scheduler's credit already bounds what it sends.
using ReportSink = std::function<void(TaskReport)>;

struct BridgeState {
  static inline const char* name = "report_bridge";
};

actors::task_port::behavior_type report_bridge(actors::task_port::stateful_pointer<BridgeState> self,
                                               actors::executor_actor executor, ReportSink sink) {
  self->link_to(executor);  // ends with the node's executor
  return {
      [=](actors::report_atom, TaskReport& report) { sink(std::move(report)); },
      [=](actors::update_atom, TaskReport&) { return true; },
      [=](actors::grant_atom, const std::string&) { return false; },
  };
}

/// The text and data an outcome carries, for a message's size hint.
size_t outcome_bytes(const TaskReport& report) {
  return report.payload.size() + report.reason.size() + report.details.size();
}

/// An outcome as the worker protocol carries it, built `ended_ago` after the invocation ended.
void fill(schema::Outcome::Builder out, const TaskReport& report, Duration ended_ago) {
  out.setEndedAgoUs(static_cast<uint64_t>(ended_ago.count()));
  switch (report.kind) {
    case TaskReport::SUCCEEDED: out.setSucceeded(as_data(report.payload)); break;
    case TaskReport::CANCELLED:
      out.setCancelled();
      out.setNeverStarted(report.loss == actors::Loss::NEVER_STARTED);
      break;
    case TaskReport::HANDED_OFF: out.setHandedOff(); break;
    case TaskReport::INTERRUPTED: out.setInterrupted(report.details); break;
    default: {
      auto f = out.initFailed();
      f.setReason(report.reason);
      f.setDetails(report.details);
      f.setNonRetryable(report.non_retryable);
    }
  }
}

/// The fence a call carries; a scheduler that predates fences sends only the sequence.
template <class Params>
actors::Fence fence_of(uint64_t notify_sequence, Params params) {
  if (!params.hasFence()) return actors::Fence{0, notify_sequence};
  return actors::Fence{params.getFence().getEpoch(), params.getFence().getSequence()};
}

/// An invocation as the worker protocol carries it.
actors::Invocation invocation_of(schema::InvocationSpec::Reader spec) {
  actors::Invocation inv;
  inv.invocation_id = text(spec.getInvocationId());
  inv.workflow_id = text(spec.getWorkflowId());
  inv.task_name = text(spec.getTaskName());
  inv.task_list = text(spec.getTaskList());
  inv.attempt = spec.getAttempt();
  if (spec.isHandler()) {
    inv.handler = text(spec.getHandler());
  } else {
    auto shell = spec.getShell();
    for (auto arg : shell.getCommand()) inv.command.push_back(text(arg));
    for (auto e : shell.getEnv()) inv.env.push_back(text(e));
    inv.cwd = text(shell.getCwd());
  }
  inv.input_json = text(spec.getInput());
  inv.workflow_input_json = text(spec.getWorkflowInput());
  auto progress = spec.getProgress();
  inv.progress.assign(reinterpret_cast<const char*>(progress.begin()), progress.size());
  inv.heartbeat_timeout_us = int64_t{spec.getHeartbeatTimeoutMs()} * 1000;
  inv.async_completion = spec.getAsyncCompletion();
  inv.task_token = text(spec.getTaskToken());
  inv.session_id = text(spec.getSessionId());
  return inv;
}

class Agent;

class WorkerControlImpl final : public schema::WorkerControl::Server {
 public:
  explicit WorkerControlImpl(std::shared_ptr<Agent> agent) : agent_(std::move(agent)) {}
  kj::Promise<void> getRunningTasks(GetRunningTasksContext context) override;
  kj::Promise<void> runTask(RunTaskContext context) override;
  kj::Promise<void> notifyIfTasksNotRunning(NotifyIfTasksNotRunningContext context) override;
  kj::Promise<void> cancelTask(CancelTaskContext context) override;
  kj::Promise<void> requestSuicide(RequestSuicideContext context) override;
  kj::Promise<void> acknowledge(AcknowledgeContext context) override;
  kj::Promise<void> interruptTask(InterruptTaskContext context) override;
  kj::Promise<void> requestStop(RequestStopContext context) override;
  kj::Promise<void> openSession(OpenSessionContext context) override;
  kj::Promise<void> closeSession(CloseSessionContext context) override;
  kj::Promise<void> readLog(ReadLogContext context) override;

 private:
  std::shared_ptr<Agent> agent_;
};

class Agent : public std::enable_shared_from_this<Agent> {
 public:
  Agent(kj::AsyncIoContext& io, kj::TaskSet& tasks, std::shared_ptr<WorkerAgentSetup> setup)
      : io_(io), tasks_(tasks), setup_(std::move(setup)),
        state_(setup_->node.name, random_instance_id(), Clock::now()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    hostname_ = host;
  }

  void start() {
    std::weak_ptr<Agent> weak = weak_from_this();
    // setup->rpc is read per report: it is set only once the RPC thread (running this) is up.
    ReportSink sink = [weak, setup = setup_](TaskReport report) {
      setup->rpc->post([weak, report = std::move(report)]() mutable {
        if (auto agent = weak.lock()) agent->on_report(std::move(report));
      });
    };
    bridge_ = setup_->system->spawn(report_bridge, setup_->executor, std::move(sink));
    connect();
  }

  void stop() {
    stopped_ = true;
    connection_ = nullptr;
  }

  /// A signal asked this worker to stop (Deadline's worker-initiated drain): it takes no new
  /// task from now on and tells the scheduler so; what runs gets the shutdown grace to finish,
  /// then is interrupted (SIGKILL) and reported INTERRUPTED, which the scheduler runs again
  /// elsewhere without using an attempt. Once every outcome is delivered it tells the scheduler
  /// it STOPPED and the node exits 0. Called again (a second signal): the grace ends now.
  void shut_down(const std::string& why) {
    if (stopped_ || state_.dying()) return;
    if (!state_.begin_stopping()) {
      log().warn("shutting down: asked again, interrupting what still runs", {{"why", why}});
      interrupt_remaining();
      return;
    }
    shutdown_reason_ = why;
    const auto running = state_.unended_ids();
    log().info("shutting down: no new tasks; what runs gets its grace to finish",
               {{"why", why}, {"running", running.size()}, {"grace", format_duration(setup_->shutdown_grace)}});
    tell_stopping();
    close_sessions();
    auto self = shared_from_this();
    // The grace covers a session's env action too (envEnter running, or envExit after its task).
    if (!running.empty() || !sessions_.open_ids().empty()) {
      tasks_.add(io_.provider->getTimer().afterDelay(to_kj(setup_->shutdown_grace)).then([self] {
        self->interrupt_remaining();
      }));
    }
    // Outcomes go on being delivered until the scheduler has them all, but not for ever: an
    // unreachable scheduler fails them over once this worker's lease runs out.
    const auto give_up = Clock::now() + setup_->shutdown_grace + std::max(state_.timeouts().must_die_after, Duration(std::chrono::seconds(2)));
    tasks_.add(stop_when_idle(give_up));
  }

  // --- WorkerControl ---------------------------------------------------------------------
  std::vector<std::string> running_ids() { return state_.running_ids(); }
  std::vector<std::string> ended_ids() const { return state_.ended_ids(); }
  std::vector<std::string> open_sessions() const { return sessions_.open_ids(); }

  /// runTask's answer: the invocation runs, or it ended before the answer and, if the
  /// scheduler asked for it there, how.
  struct RunAnswer {
    bool ended = false;
    std::optional<TaskReport> outcome;
  };

  /// Starts an invocation. The promise is runTask's answer, once the executor has said that it
  /// started or how it ended.
  Result<kj::Promise<RunAnswer>> run_task(schema::InvocationSpec::Reader spec, actors::Fence fence,
                                          schema::TaskReporter::Client reporter, bool outcome_in_answer) {
    const std::string id = text(spec.getInvocationId());
    actors::Invocation inv = invocation_of(spec);
    if (!inv.session_id.empty() && !sessions_.takes_tasks(inv.session_id)) {
      // Refused before it is held: it never started, and the scheduler waits for the session.
      return fail(Errc::NOT_ALLOWED_IN_STATE,
                  "session '" + inv.session_id + "' is not open on worker " + setup_->node.name);
    }
    if (auto accepted = state_.accept(id, fence, outcome_in_answer, Clock::now()); !accepted) {
      return accepted.error();
    }
    auto answer = kj::newPromiseAndFulfiller<RunAnswer>();
    Calls calls;
    calls.reporter = kj::mv(reporter);
    calls.answer = kj::mv(answer.fulfiller);
    calls_.insert_or_assign(id, kj::mv(calls));
    if (inv.session_id.empty()) {
      caf::anon_send(setup_->executor, actors::run_atom::value, std::move(inv), bridge_);
    } else {
      carry_out(sessions_.add_task(std::move(inv)));  // after what the session runs
    }
    return kj::mv(answer.promise);
  }

  /// openSession's answer: envEnter's outcome, or none (there was none to run).
  using SessionOutcome = std::optional<TaskReport>;

  /// Opens a session here; the promise is its envEnter's outcome.
  kj::Promise<SessionOutcome> open_session(schema::SessionOpening::Reader spec) {
    if (state_.stopping() || state_.dying()) {
      // Going away: the scheduler asks again until it sees this worker gone, then moves the
      // session; an envEnter started now would only be interrupted.
      return kj::Promise<SessionOutcome>(kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                                                       kj::str("worker ", setup_->node.name.c_str(), " is shutting down")));
    }
    actors::SessionOpening opening;
    opening.id = text(spec.getSessionId());
    opening.workflow_id = text(spec.getWorkflowId());
    opening.name = text(spec.getSessionName());
    opening.directory = session_directory(setup_->node.log_dir, opening.workflow_id, opening.name);
    std::error_code ec;
    std::filesystem::create_directories(opening.directory, ec);
    if (ec) {
      TaskReport failed;
      failed.kind = TaskReport::FAILED;
      failed.reason = "SessionDirectory";
      failed.details = "cannot create " + opening.directory + ": " + ec.message();
      return SessionOutcome(std::move(failed));
    }
    if (spec.hasEnvEnter() && spec.getEnvEnter().getInvocationId().size() > 0) opening.env_enter = invocation_of(spec.getEnvEnter());
    if (spec.hasEnvExit() && spec.getEnvExit().getInvocationId().size() > 0) opening.env_exit = invocation_of(spec.getEnvExit());
    const uint64_t call = sessions_.next_call();
    auto answer = kj::newPromiseAndFulfiller<SessionOutcome>();
    session_calls_.emplace(call, kj::mv(answer.fulfiller));
    carry_out(sessions_.open(std::move(opening), call));
    return kj::mv(answer.promise);
  }

  /// Closes a session here; the promise is its envExit's outcome (none: none ran).
  kj::Promise<SessionOutcome> close_session(const std::string& id) {
    const uint64_t call = sessions_.next_call();
    auto answer = kj::newPromiseAndFulfiller<SessionOutcome>();
    session_calls_.emplace(call, kj::mv(answer.fulfiller));
    carry_out(sessions_.close(id, call));
    return kj::mv(answer.promise);
  }

  std::vector<std::string> not_running(const std::vector<std::string>& ids, actors::Fence fence) {
    return state_.not_running(ids, fence);
  }

  /// Stops invocation `id`: SIGTERM for a shell task, SIGKILL after `grace`. A cancel learned
  /// from a heartbeat's reply (which carries no grace) gets the default; the scheduler's
  /// cancelTask follows with its own.
  void cancel(const std::string& id, Duration grace = default_cancel_grace) {
    if (sessions_.owns(id)) {
      auto effects = sessions_.cancel_queued(id);
      if (!effects.never_ran.empty()) {
        carry_out(std::move(effects));
        return;
      }
    }
    if (state_.holds(id) || sessions_.is_env_action(id)) {
      caf::anon_send(setup_->executor, actors::cancel_atom::value, id, std::string(), int64_t{grace.count()});
    }
  }

  void suicide(const std::string& reason) { die("the scheduler asked this worker to exit: " + reason); }

  /// A drain asked this worker to stop: it shuts down as on SIGTERM, unless its node runs the
  /// scheduler too.
  void stop_on_request(const std::string& reason) {
    if (!setup_->may_stop_on_request) {
      log().info("asked to stop, but this node runs the scheduler too: it stays up, taking no tasks",
                 {{"why", reason}});
      return;
    }
    shut_down("the scheduler asked: " + reason);
  }

  /// A drain stops invocation `id`: it ends INTERRUPTED (`why`) unless it succeeds first.
  void interrupt(const std::string& id, Duration grace, const std::string& why) {
    if (!state_.holds(id)) return;
    state_.interrupt(id, why);
    cancel(id, grace);
  }

  /// The outcomes these invocations' answers carried are durable: forget them.
  void acknowledge(const std::vector<std::string>& ids) {
    for (const auto& id : state_.acknowledge(ids)) calls_.erase(id);
  }

  /// readLog's answer: a range of a log, and whether the log is complete.
  struct LogRead {
    LogRange range;
    bool complete = false;
  };

  /// Up to `max_bytes` of invocation `id`'s log from `offset`. The log is complete once the
  /// invocation does not run here (it ended, or this worker does not hold it) and the range
  /// reaches its end. Errors as read_invocation_log's; NOT_FOUND only for an invocation that
  /// does not run here.
  Result<LogRead> read_log(const std::string& id, uint64_t offset, size_t max_bytes) {
    // Decided before the read: the log of an invocation that ended by then is whole (its
    // output is written before its end is reported), so a read after it misses nothing.
    const bool runs = (state_.holds(id) && state_.outcome(id) == nullptr) || sessions_.is_env_action(id);
    auto range = read_invocation_log(setup_->node.log_dir, id, offset, max_bytes);
    if (!range && range.error().code == Errc::NOT_FOUND) {
      // Held but not started yet (queued in its session, or a handler): nothing written so far.
      if (runs) return LogRead{LogRange{{}, offset, 0}, false};
      return fail(Errc::NOT_FOUND, "worker " + setup_->node.name + " has no log of " + id +
                                       " (a handler task writes none; a log removed from its log_dir is gone)");
    }
    if (!range) return range.error();
    const bool complete = !runs && range->next_offset >= range->size;
    return LogRead{std::move(*range), complete};
  }

 private:
  const NodeLog& log() const { return log_or_none(setup_->log); }

  /// The capabilities of an invocation the state holds.
  struct Calls {
    schema::TaskReporter::Client reporter = nullptr;
    kj::Own<kj::PromiseFulfiller<RunAnswer>> answer;  ///< runTask's answer, until given
  };
  struct Connection {
    kj::Own<kj::AsyncIoStream> stream;
    capnp::TwoPartyClient client;
    schema::Gateway::Client gateway;
    kj::Maybe<schema::WorkerSession::Client> session;
    explicit Connection(kj::Own<kj::AsyncIoStream> s)
        : stream(kj::mv(s)), client(*stream), gateway(client.bootstrap().castAs<schema::Gateway>()) {}
  };

  /// A shutdown closes every session held here, as Deadline's worker does: what waits in one never
  /// runs here (it is interrupted: the scheduler runs it again, its attempt kept), and envExit runs
  /// after the running action, within the shutdown's grace.
  void close_sessions() {
    for (const auto& id : sessions_.queued_tasks()) state_.interrupt(id);
    for (const auto& id : sessions_.open_ids()) carry_out(sessions_.close(id, 0));  // nobody waits for the answer
  }

  void interrupt_remaining() {
    for (const auto& id : state_.unended_ids()) {
      state_.interrupt(id);
      cancel(id, Duration::zero());
    }
    for (const auto& id : sessions_.running_env_actions()) cancel(id, Duration::zero());
  }

  /// Does what the sessions said: starts invocations, ends tasks that never ran (cancelled),
  /// answers openSession and closeSession, writes session log lines.
  void carry_out(actors::SessionEffects effects) {
    // Every change to the sessions held here comes through this: the gauge follows them.
    if (setup_->meters) setup_->meters->open_sessions.set(static_cast<int64_t>(sessions_.open_count()));
    for (auto& [session, line] : effects.log) log_session(session, line);
    for (const auto& id : effects.never_ran) {
      TaskReport never;
      never.invocation_id = id;
      never.kind = TaskReport::CANCELLED;
      never.details = "never attempted: its session stopped taking tasks";
      never.loss = actors::Loss::NEVER_STARTED;
      on_report(std::move(never));
    }
    for (auto& answer : effects.answers) {
      auto it = session_calls_.find(answer.call);
      if (it == session_calls_.end()) continue;
      if (it->second->isWaiting()) it->second->fulfill(kj::mv(answer.outcome));
      session_calls_.erase(it);
    }
    for (auto& invocation : effects.start) {
      caf::anon_send(setup_->executor, actors::run_atom::value, std::move(invocation), bridge_);
    }
  }

  /// A line in the session's own log, beside its directory.
  void log_session(const std::string& session, const std::string& line) {
    const std::string directory = sessions_.directory(session);
    if (directory.empty()) return;
    std::ofstream log(directory + ".log", std::ios::app);
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    log << stamp << " " << session << ": " << line << "\n";
  }

  /// Tells the scheduler this worker is shutting down (again after a reconnection).
  void tell_stopping() {
    if (connection_.get() == nullptr) return;
    KJ_IF_MAYBE(session, connection_->session) {
      auto request = session->stoppingRequest();
      request.setGraceMs(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(setup_->shutdown_grace).count()));
      request.setReason(shutdown_reason_);
      tasks_.add(request.send().ignoreResult().catch_([](kj::Exception&&) {}));
    }
  }

  /// Checks every few milliseconds whether every outcome is delivered; then (or at `give_up`)
  /// says STOPPED and has the node exit.
  kj::Promise<void> stop_when_idle(Clock::time_point give_up) {
    if (stopped_) return kj::READY_NOW;
    const bool idle = state_.idle() && sessions_.open_ids().empty();
    if (!idle && Clock::now() < give_up) {
      auto self = shared_from_this();
      return io_.provider->getTimer().afterDelay(20 * kj::MILLISECONDS).then([self, give_up] {
        return self->stop_when_idle(give_up);
      });
    }
    std::string how = idle ? "every task finished or was interrupted, and the scheduler has every outcome"
                           : std::to_string(state_.ended_ids().size()) +
                                 " outcomes did not reach the scheduler; it fails them over when this worker's lease runs out";
    auto self = shared_from_this();
    auto exit = [self, how] {
      self->log().info("worker stopped", {{"how", how}});
      if (self->setup_->stopped) self->setup_->stopped(self->shutdown_reason_ + ": " + how);
    };
    if (!idle || connection_.get() == nullptr) {
      exit();
      return kj::READY_NOW;
    }
    KJ_IF_MAYBE(session, connection_->session) {
      // Awaited (briefly): the scheduler fails nothing over on the worker's word until it has it.
      return session->stoppedRequest().send().ignoreResult()
          .exclusiveJoin(io_.provider->getTimer().afterDelay(2 * kj::SECONDS))
          .catch_([](kj::Exception&&) {})
          .then(kj::mv(exit));
    }
    exit();
    return kj::READY_NOW;
  }

  void die(const std::string& reason) {
    auto cancels = state_.die();
    if (!cancels) return;
    log().error("worker must die", {{"why", reason}, {"cancelled", cancels->size()}});
    for (const auto& id : *cancels) cancel(id);
    if (setup_->exit) setup_->exit(reason);
  }

  /// The connection is gone: its calls failed with it.
  void drop_connection() {
    connection_ = nullptr;
    state_.disconnected();
  }

  void connect() {
    if (stopped_ || !state_.may_connect()) return;
    const auto& address = setup_->node.scheduler_address;
    auto self = shared_from_this();
    tasks_.add(io_.provider->getNetwork()
                   .parseAddress(address.host, address.port)
                   .then([](kj::Own<kj::NetworkAddress> a) { return a->connect().attach(kj::mv(a)); })
                   .then([self](kj::Own<kj::AsyncIoStream> stream) -> kj::Promise<kj::Own<kj::AsyncIoStream>> {
                     if (!self->setup_->tls) return kj::mv(stream);
                     return self->setup_->tls->context().wrapClient(kj::mv(stream),
                                                                    self->setup_->node.scheduler_address.host);
                   })
                   .then([self](kj::Own<kj::AsyncIoStream> stream) { return self->registered(kj::mv(stream)); })
                   .catch_([self](kj::Exception&& e) {
                     self->drop_connection();
                     if (!self->reported_unreachable_) {
                       self->log().warn("cannot reach the scheduler; retrying",
                                        {{"scheduler", self->setup_->node.scheduler_address.to_string()},
                                         {"error", e.getDescription().cStr()}});
                       self->reported_unreachable_ = true;
                     }
                     return self->io_.provider->getTimer().afterDelay(to_kj(self->state_.timeouts().heartbeat_interval))
                         .then([self] { self->connect(); });
                   }));
  }

  kj::Promise<void> registered(kj::Own<kj::AsyncIoStream> stream) {
    connection_ = kj::heap<Connection>(kj::heap<BufferedStream>(kj::mv(stream)));
    state_.connecting();
    auto request = connection_->gateway.registerWorkerRequest();
    request.setToken(setup_->cluster_token);
    auto info = request.initInfo();
    info.setShardId(setup_->node.name);
    info.setHostname(hostname_);
    info.setPid(static_cast<uint32_t>(::getpid()));
    info.setInstanceId(state_.instance_id());
    info.setWorkerId(setup_->worker_id);
    auto lists = info.initTaskLists(setup_->node.task_lists.size());
    size_t i = 0;
    for (const auto& [name, slots] : setup_->node.task_lists) {
      lists[i].setName(name);
      lists[i].setSlots(slots);
      ++i;
    }
    info.setResourceId(setup_->node.resource_id);
    info.setMaxConcurrentSessions(setup_->node.max_concurrent_sessions);
    const auto& known = state_.registrations();
    auto registrations = info.initRegistrations(static_cast<unsigned>(known.size()));
    for (size_t r = 0; r < known.size(); ++r) {
      registrations[static_cast<unsigned>(r)].setEpoch(known[r].epoch);
      registrations[static_cast<unsigned>(r)].setSequence(known[r].sequence);
    }
    request.setControl(kj::heap<WorkerControlImpl>(shared_from_this()));
    const auto sent = Clock::now();
    auto self = shared_from_this();
    return request.send().then([self, sent](auto response) -> kj::Promise<void> {
      if (response.hasError() && response.getError().getCode() != schema::ErrorCode::NONE) {
        // Said once per reason: a second node started with a taken name retries every interval
        // (it takes over once the other instance is declared dead) and would flood its log.
        std::string refusal = text(response.getError().getMessage());
        if (refusal != self->last_refusal_) {
          self->log().warn("registration refused; retrying",
                           {{"error", refusal},
                            {"every", format_duration(self->state_.timeouts().heartbeat_interval)}});
          self->last_refusal_ = std::move(refusal);
        }
        self->drop_connection();
        return self->io_.provider->getTimer().afterDelay(to_kj(self->state_.timeouts().heartbeat_interval))
            .then([self] { self->connect(); });
      }
      auto registration = response.getRegistration();
      auto t = registration.getTimeouts();
      actors::Registration accepted;
      accepted.timeouts.heartbeat_interval = std::chrono::milliseconds(t.getHeartbeatIntervalMs());
      accepted.timeouts.unhealthy_after = std::chrono::milliseconds(t.getUnhealthyAfterMs());
      accepted.timeouts.must_die_after = std::chrono::milliseconds(t.getMustDieAfterMs());
      accepted.timeouts.lease = std::chrono::milliseconds(registration.getLeaseMs());
      accepted.fence = actors::Fence{registration.getFence().getEpoch(), registration.getFence().getSequence()};
      self->connection_->session = registration.getSession();
      // Outcomes whose reporters died with an earlier connection go through the session.
      const auto undelivered = self->state_.registered(accepted, sent);
      if (self->setup_->extend_lease) self->setup_->extend_lease(self->state_.lease_ends());
      self->reported_unreachable_ = false;
      self->last_refusal_.clear();
      self->log().info("registered with the scheduler",
                       {{"scheduler", self->setup_->node.scheduler_address.to_string()},
                        {"start_clean", registration.getStartClean()}});
      self->tasks_.add(self->heartbeat_loop(++self->heartbeat_generation_));
      if (self->state_.stopping()) self->tell_stopping();
      for (const auto& id : undelivered) self->deliver(id);
      return self->connection_->client.onDisconnect().then([self] {
        self->log().warn("lost the connection to the scheduler",
                         {{"scheduler", self->setup_->node.scheduler_address.to_string()}});
        self->drop_connection();
        self->connect();
      });
    });
  }

  /// Heartbeats every interval from a registration on; a newer registration's loop replaces it.
  kj::Promise<void> heartbeat_loop(uint64_t generation) {
    auto self = shared_from_this();
    return io_.provider->getTimer().afterDelay(to_kj(state_.timeouts().heartbeat_interval)).then([self, generation]() -> kj::Promise<void> {
      if (self->stopped_ || generation != self->heartbeat_generation_) return kj::READY_NOW;
      self->beat();
      return self->heartbeat_loop(generation);
    });
  }

  void beat() {
    if (auto lost = state_.lease_lost(Clock::now())) {
      die(*lost);
      return;
    }
    if (connection_.get() == nullptr) return;
    KJ_IF_MAYBE(session, connection_->session) {
      const auto sent = Clock::now();
      auto self = shared_from_this();
      tasks_.add(session->heartbeatRequest().send().then(
          [self, sent](auto response) {
            if (response.getHealth() == schema::Health::MUST_DIE) {
              self->die("the scheduler declared this worker MUST_DIE");
              return;
            }
            self->state_.heartbeat_acknowledged(sent);
            if (self->setup_->extend_lease) self->setup_->extend_lease(self->state_.lease_ends());
          },
          [](kj::Exception&&) {}));
    }
  }

  void on_report(TaskReport report) {
    const std::string id = report.invocation_id;
    if (sessions_.is_env_action(id)) {
      // envEnter and envExit answer openSession and closeSession; only their ends matter.
      if (report.kind != TaskReport::STARTED && report.kind != TaskReport::HEARTBEAT) {
        carry_out(sessions_.ended(id, report));
      }
      return;
    }
    if (!state_.holds(id)) return;
    auto& calls = calls_.at(id);
    switch (report.kind) {
      case TaskReport::STARTED:
        answer(calls, RunAnswer{});
        return;
      case TaskReport::HEARTBEAT:
        if (state_.reporter_lost(id)) {
          heartbeat_through_session(id, report.payload);
          return;
        }
        {
          auto request = calls.reporter.heartbeatRequest(message_size(report.payload.size()));
          request.setProgress(as_data(report.payload));
          auto self = shared_from_this();
          tasks_.add(request.send().then(
              [self, id](auto response) {
                if (response.getCancelRequested()) self->cancel(id);
              },
              [self, id, progress = report.payload](kj::Exception&&) {
                // The reporter went with its connection (the scheduler restarted, or the link
                // broke): this and later heartbeats go through the current session.
                if (!self->state_.lose_reporter(id)) return;
                self->heartbeat_through_session(id, progress);
              }));
        }
        return;
      default: {
        const bool awaited = calls.answer.get() != nullptr && calls.answer->isWaiting();
        auto outcome = std::make_shared<const TaskReport>(std::move(report));
        if (state_.ended(id, outcome, awaited, Clock::now()) == actors::EndAnswer::WITH_OUTCOME) {
          // The answer carries it; it stays here until the scheduler acknowledges it.
          answer(calls, RunAnswer{true, *outcome});
        } else {
          answer(calls, RunAnswer{true, std::nullopt});
          deliver(id);
        }
        // Its session's next action starts once its outcome is on its way.
        if (sessions_.owns(id)) carry_out(sessions_.ended(id, *outcome));
      }
    }
  }

  static void answer(Calls& calls, RunAnswer answer) {
    if (calls.answer.get() != nullptr && calls.answer->isWaiting()) calls.answer->fulfill(kj::mv(answer));
  }

  /// The scheduler has the outcome of `id`: forget the invocation.
  void delivered(const std::string& id) {
    state_.delivered(id);
    calls_.erase(id);
  }

  /// A heartbeat whose reporter is gone; lost if there is no session right now (the next one
  /// carries the progress again).
  void heartbeat_through_session(const std::string& id, const std::string& progress) {
    if (connection_.get() == nullptr) return;
    KJ_IF_MAYBE(session, connection_->session) {
      auto request = session->taskHeartbeatRequest();
      request.setInvocationId(id);
      request.setProgress(as_data(progress));
      auto self = shared_from_this();
      tasks_.add(request.send().then(
          [self, id](auto response) {
            if (response.getCancelRequested()) self->cancel(id);
          },
          [](kj::Exception&&) {}));
    }
  }

  /// Reports an ended invocation until acknowledged: through its reporter, or, once that is
  /// gone with its connection, through the current session.
  void deliver(const std::string& id) {
    auto outcome = state_.outcome(id);
    if (outcome == nullptr || stopped_) return;
    auto self = shared_from_this();
    auto acknowledged = [self, id] { self->delivered(id); };
    auto retry = [self, id](kj::Exception&&) {
      self->tasks_.add(self->io_.provider->getTimer().afterDelay(to_kj(self->state_.timeouts().heartbeat_interval)).then([self, id] {
        // The reporter failed (its connection is gone): use the session from now on.
        self->deliver_through_session(id);
      }));
    };
    auto request = calls_.at(id).reporter.completeRequest(message_size(outcome_bytes(*outcome)));
    fill(request.initOutcome(), *outcome, state_.ended_ago(id, Clock::now()));
    // Moved in: kj's then() keeps an lvalue handler by reference, which would dangle.
    tasks_.add(request.send().then([acknowledged](auto) { acknowledged(); }, kj::mv(retry)));
  }

  void deliver_through_session(const std::string& id) {
    auto outcome = state_.outcome(id);
    if (outcome == nullptr || stopped_) return;
    auto self = shared_from_this();
    auto again = [self, id] {
      self->tasks_.add(self->io_.provider->getTimer().afterDelay(to_kj(self->state_.timeouts().heartbeat_interval)).then(
          [self, id] { self->deliver_through_session(id); }));
    };
    if (connection_.get() == nullptr) {
      again();
      return;
    }
    KJ_IF_MAYBE(session, connection_->session) {
      auto request = session->updateStatusRequest();
      request.setInvocationId(id);
      fill(request.initOutcome(), *outcome, state_.ended_ago(id, Clock::now()));
      tasks_.add(request.send().then(
          [self, id, again](auto response) {
            const auto code = response.hasError() ? response.getError().getCode() : schema::ErrorCode::NONE;
            if (code == schema::ErrorCode::NONE) {
              self->delivered(id);
              return;
            }
            if (self->state_.retry_refused(id, code == schema::ErrorCode::UNAVAILABLE)) {
              again();  // the scheduler is recovering and has not taken the invocation back yet
              return;
            }
            self->log().error("the scheduler refused an outcome",
                              {{"invocation", id}, {"error", response.getError().getMessage().cStr()}});
            self->calls_.erase(id);
          },
          [again](kj::Exception&&) { again(); }));
    } else {
      again();
    }
  }

  kj::AsyncIoContext& io_;
  kj::TaskSet& tasks_;
  std::shared_ptr<WorkerAgentSetup> setup_;
  actors::WorkerState state_;  ///< the protocol's state and decisions; this class carries them out
  std::string hostname_;
  kj::Own<Connection> connection_;
  bool reported_unreachable_ = false;
  bool stopped_ = false;
  uint64_t heartbeat_generation_ = 0;
  std::string last_refusal_;  ///< the registration refusal last logged
  std::string shutdown_reason_;  ///< the signal that started the shutdown
  actors::task_port bridge_;  ///< where the executor reports this worker's invocations
  std::unordered_map<std::string, Calls> calls_;  ///< by invocation id, for every invocation state_ holds
  actors::HostedSessions sessions_;  ///< the sessions open here; decides their actions' order
  /// openSession and closeSession calls waiting for an env action, by HostedSessions' call number.
  std::map<uint64_t, kj::Own<kj::PromiseFulfiller<SessionOutcome>>> session_calls_;
};

kj::Promise<void> WorkerControlImpl::getRunningTasks(GetRunningTasksContext context) {
  auto ids = agent_->running_ids();
  auto ended = agent_->ended_ids();
  auto results = context.getResults();
  auto list = results.initInvocationIds(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) list.set(i, ids[i]);
  auto ended_list = results.initEndedIds(ended.size());
  for (size_t i = 0; i < ended.size(); ++i) ended_list.set(i, ended[i]);
  auto sessions = agent_->open_sessions();
  auto session_list = results.initOpenSessions(sessions.size());
  for (size_t i = 0; i < sessions.size(); ++i) session_list.set(i, sessions[i]);
  return kj::READY_NOW;
}

kj::Promise<void> WorkerControlImpl::runTask(RunTaskContext context) {
  auto params = context.getParams();
  auto started = agent_->run_task(params.getInvocation(), fence_of(params.getNotifySequence(), params),
                                  params.getReporter(), params.getOutcomeInAnswer());
  if (!started) {
    set_error(context.getResults().initError(), started.error());
    return kj::READY_NOW;
  }
  return started->then([context](Agent::RunAnswer answer) mutable {
    auto results = context.getResults(message_size(answer.outcome ? outcome_bytes(*answer.outcome) : 0));
    results.setEnded(answer.ended);
    if (answer.outcome) fill(results.initOutcome(), *answer.outcome, Duration::zero());  // it just ended
  });
}

kj::Promise<void> WorkerControlImpl::acknowledge(AcknowledgeContext context) {
  std::vector<std::string> ids;
  for (auto id : context.getParams().getInvocationIds()) ids.push_back(text(id));
  agent_->acknowledge(ids);
  return kj::READY_NOW;
}

kj::Promise<void> WorkerControlImpl::notifyIfTasksNotRunning(NotifyIfTasksNotRunningContext context) {
  auto params = context.getParams();
  std::vector<std::string> ids;
  for (auto id : params.getInvocationIds()) ids.push_back(text(id));
  auto out = agent_->not_running(ids, fence_of(params.getNotifySequence(), params));
  auto list = context.getResults().initNotRunning(out.size());
  for (size_t i = 0; i < out.size(); ++i) list.set(i, out[i]);
  return kj::READY_NOW;
}

kj::Promise<void> WorkerControlImpl::cancelTask(CancelTaskContext context) {
  auto params = context.getParams();
  agent_->cancel(text(params.getInvocationId()), std::chrono::milliseconds(params.getGraceMs()));
  return kj::READY_NOW;
}

kj::Promise<void> WorkerControlImpl::interruptTask(InterruptTaskContext context) {
  auto params = context.getParams();
  agent_->interrupt(text(params.getInvocationId()), std::chrono::milliseconds(params.getGraceMs()),
                    text(params.getReason()));
  return kj::READY_NOW;
}

kj::Promise<void> WorkerControlImpl::requestStop(RequestStopContext context) {
  agent_->stop_on_request(text(context.getParams().getReason()));
  return kj::READY_NOW;
}

/// A session action's outcome as openSession's or closeSession's answer; none ran: succeeded.
void fill_session_outcome(schema::Outcome::Builder out, const std::optional<TaskReport>& outcome) {
  if (outcome) {
    fill(out, *outcome, Duration::zero());
  } else {
    out.setSucceeded(capnp::Data::Reader());
  }
}

kj::Promise<void> WorkerControlImpl::openSession(OpenSessionContext context) {
  return agent_->open_session(context.getParams().getSession()).then([context](Agent::SessionOutcome outcome) mutable {
    fill_session_outcome(context.getResults().initOutcome(), outcome);
  });
}

kj::Promise<void> WorkerControlImpl::closeSession(CloseSessionContext context) {
  return agent_->close_session(text(context.getParams().getSessionId())).then([context](Agent::SessionOutcome outcome) mutable {
    auto results = context.getResults();
    results.setRan(outcome.has_value());
    fill_session_outcome(results.initOutcome(), outcome);
  });
}

kj::Promise<void> WorkerControlImpl::readLog(ReadLogContext context) {
  auto params = context.getParams();
  if (params.getStream() != schema::LogStream::COMBINED) {
    set_error(context.getResults().initError(),
              fail(Errc::UNIMPLEMENTED, "this worker keeps a task's stdout and stderr in one log, interleaved as "
                                        "written: read the combined stream"));
    return kj::READY_NOW;
  }
  constexpr size_t default_read_bytes = 64 * 1024;
  const size_t max_bytes = params.getMaxBytes() == 0 ? default_read_bytes : params.getMaxBytes();
  auto read = agent_->read_log(text(params.getInvocationId()), params.getOffset(), max_bytes);
  auto results = context.getResults(message_size(read ? read->range.data.size() : 256));
  if (!read) {
    set_error(results.initError(), read.error());
    return kj::READY_NOW;
  }
  results.setData(as_data(read->range.data));
  results.setNextOffset(read->range.next_offset);
  results.setSize(read->range.size);
  results.setComplete(read->complete);
  return kj::READY_NOW;
}

kj::Promise<void> WorkerControlImpl::requestSuicide(RequestSuicideContext context) {
  agent_->suicide(text(context.getParams().getReason()));
  return kj::READY_NOW;
}

}  // namespace

Result<WorkerAgentHandle> start_worker_agent(kj::AsyncIoContext& io, kj::TaskSet& tasks,
                                            std::shared_ptr<WorkerAgentSetup> setup) {
  RpcThread* rpc = setup->rpc;
  auto agent = std::make_shared<Agent>(io, tasks, std::move(setup));
  agent->start();
  WorkerAgentHandle handle;
  handle.stop = [agent] { agent->stop(); };
  handle.shut_down = [rpc, weak = std::weak_ptr<Agent>(agent)](const std::string& why) {
    rpc->post([weak, why] {
      if (auto agent = weak.lock()) agent->shut_down(why);
    });
  };
  return handle;
}

}  // namespace troupe::runtime
