// A simulated worker process. The agent part follows runtime/worker_agent.cpp step for step
// (the decisions are WorkerState's); the executor part stands in for the local executor and
// the process supervisor.
#include "test/sim/sim_worker.hpp"

#include <caf/send.hpp>

#include "test/sim/sim_link.hpp"
#include "test/sim/sim_scheduler.hpp"

namespace troupe::sim {
namespace {

using actors::TaskReport;

/// How long the executor takes to tell the agent something (an actor hop and a post).
constexpr Duration report_delay = 1ms;
/// How long connecting takes (a round trip), refused or not.
constexpr Duration connect_delay = 2ms;
/// The grace of a cancel that names none (as the agent's).
constexpr Duration default_cancel_grace = std::chrono::seconds(10);

TaskReport report_of(const std::string& id, uint8_t kind) {
  TaskReport r;
  r.invocation_id = id;
  r.kind = kind;
  return r;
}

}  // namespace

WorkerProcess::WorkerProcess(WorkerEnvironment env, std::string shard, std::string instance,
                             std::map<std::string, uint32_t> task_lists)
    : env_(std::move(env)),
      state_(std::move(shard), std::move(instance), TimePoint(env_.world->now())),
      task_lists_(std::move(task_lists)) {}

WorkerProcess::TimePoint WorkerProcess::clock() const { return TimePoint(world().now()); }

void WorkerProcess::later(Duration d, std::function<void(WorkerProcess&)> fn) {
  world().after(d, [weak = weak_from_this(), fn = std::move(fn)] {
    auto self = weak.lock();
    if (self && self->alive_) fn(*self);
  });
}

void WorkerProcess::start() {
  env_.ledger->process_started(shard(), instance(), world().now());
  world().note("worker " + instance() + " starts");
  connect();
}

void WorkerProcess::kill(const std::string& why) {
  if (!alive_) return;
  alive_ = false;
  world().note("worker " + instance() + " dies: " + why);
  for (const auto& [id, execution] : executions_) env_.ledger->run_ended(id, instance(), world().now(), "killed:" + why);
  executions_.clear();
  env_.ledger->process_died(instance(), world().now(), why);
  if (connection_) connection_->close("worker " + instance() + " died");
  connection_.reset();
  session_.reset();
  calls_.clear();
}

// --- the agent -------------------------------------------------------------------------------

void WorkerProcess::connect() {
  if (!state_.may_connect()) return;
  later(connect_delay, [](WorkerProcess& self) {
    SchedulerNode* scheduler = self.env_.scheduler();
    if (scheduler == nullptr || !scheduler->up()) {
      // Refused: nobody listens. Retried every interval.
      self.drop_connection();
      self.later(self.interval(), [](WorkerProcess& w) { w.connect(); });
      return;
    }
    auto connection = std::make_shared<Connection>(
        self.world(), *self.env_.network, self.instance() + "/epoch" + std::to_string(scheduler->epoch()));
    scheduler->accept(connection);
    self.registered(std::move(connection), scheduler);
  });
}

void WorkerProcess::drop_connection() {
  connection_.reset();
  session_.reset();
  state_.disconnected();
}

void WorkerProcess::registered(std::shared_ptr<Connection> connection, SchedulerNode* scheduler) {
  connection_ = connection;
  session_.reset();
  state_.connecting();
  actors::WorkerInfo info;
  info.shard_id = shard();
  info.hostname = "sim";
  info.pid = 1;
  info.instance_id = instance();
  info.task_lists = task_lists_;
  info.registrations = state_.registrations();
  auto link = std::make_shared<SimWorkerLink>(connection, weak_from_this());
  const TimePoint sent = clock();
  auto weak = weak_from_this();
  // A refusal or a failed call: connect again after an interval.
  auto retry = [weak, connection] {
    auto self = weak.lock();
    if (!self || !self->alive_ || self->connection_ != connection) return;
    self->drop_connection();
    self->later(self->interval(), [](WorkerProcess& w) { w.connect(); });
  };
  connection->call(
      Side::WORKER,
      [scheduler, info, link, weak, connection, sent, retry](Connection::Responder respond) {
        scheduler->register_worker(
            info, link,
            reply_to<actors::RegistrationOutcome>(
                [respond, link, weak, connection, sent, retry](Result<actors::RegistrationOutcome> outcome) {
                  if (outcome) {
                    link->bind(outcome->worker);
                    // From now on the scheduler may send it tasks, whenever the answer arrives.
                    if (auto self = weak.lock()) self->env_.ledger->process_registered(self->instance(), self->world().now());
                  }
                  respond([weak, connection, sent, retry, outcome] {
                    auto self = weak.lock();
                    if (!self || !self->alive_ || self->connection_ != connection) return;
                    if (!outcome) {
                      self->world().note("worker " + self->instance() + ": registration refused: " +
                                         outcome.error().message);
                      retry();
                      return;
                    }
                    actors::Registration accepted;
                    accepted.timeouts = outcome->timeouts;
                    accepted.fence = outcome->fence;
                    self->session_ = outcome->worker;
                    const auto undelivered = self->state_.registered(accepted, sent);
                    self->extend_lease();
                    self->world().note("worker " + self->instance() + " registered (fence " +
                                       outcome->fence.to_string() + (outcome->start_clean ? ", start clean)" : ")"));
                    self->heartbeat_loop(++self->heartbeat_generation_);
                    for (const auto& id : undelivered) self->deliver(id);
                    connection->on_disconnect = [weak, connection] {
                      auto w = weak.lock();
                      if (!w || !w->alive_ || w->connection_ != connection) return;
                      w->drop_connection();
                      w->connect();
                    };
                  });
                },
                [respond, retry] { respond(retry); }));
      },
      retry);
}

void WorkerProcess::heartbeat_loop(uint64_t generation) {
  later(interval(), [generation](WorkerProcess& self) {
    if (generation != self.heartbeat_generation_) return;
    self.beat();
    self.heartbeat_loop(generation);
  });
}

void WorkerProcess::beat() {
  if (auto lost = state_.lease_lost(clock())) {
    die(*lost);
    return;
  }
  if (!connection_ || !session_) return;
  const TimePoint sent = clock();
  auto weak = weak_from_this();
  auto answered = [weak, sent](actors::HealthState health) {
    auto self = weak.lock();
    if (!self || !self->alive_) return;
    if (health == actors::HealthState::MUST_DIE) {
      self->die("the scheduler declared this worker MUST_DIE");
      return;
    }
    self->state_.heartbeat_acknowledged(sent);
    self->extend_lease();
  };
  connection_->call(
      Side::WORKER,
      [actor = *session_, answered](Connection::Responder respond) {
        // As the session serves it: an ended worker actor drops the reply, which means MUST_DIE.
        caf::anon_send(actor, actors::heartbeat_atom::value,
                       reply_to<actors::HealthState>(
                           [respond, answered](Result<actors::HealthState> health) {
                             const auto h = health ? *health : actors::HealthState::MUST_DIE;
                             respond([answered, h] { answered(h); });
                           },
                           [respond, answered] { respond([answered] { answered(actors::HealthState::MUST_DIE); }); }));
      },
      [] {}, true);
}

void WorkerProcess::die(const std::string& reason) {
  auto cancels = state_.die();
  if (!cancels) return;
  world().note("worker " + instance() + ": " + reason);
  for (const auto& id : *cancels) cancel(id, default_cancel_grace);
  // The node exits; its keepers kill what still runs.
  kill("exit: " + reason);
  if (env_.exited) env_.exited(shard(), reason);
}

void WorkerProcess::extend_lease() {
  lease_end_ = state_.lease_ends();
  const TimePoint deadline = lease_end_;
  // The keepers enforce it on their own: at the deadline, unless extended meanwhile.
  world().at(std::chrono::duration_cast<Duration>(deadline.time_since_epoch()),
             [weak = weak_from_this(), deadline] {
               auto self = weak.lock();
               if (!self || !self->alive_ || self->lease_end_ != deadline) return;
               self->env_.ledger->lease_ran_out(self->instance(), self->world().now());
               std::vector<std::string> ids;
               for (const auto& [id, execution] : self->executions_) ids.push_back(id);
               if (!ids.empty()) self->world().note("worker " + self->instance() + ": keepers kill its runs, the lease ran out");
               for (const auto& id : ids) {
                 auto killed = report_of(id, TaskReport::FAILED);
                 killed.reason = "Killed:lease";
                 self->end_run(id, killed, "killed:lease");
               }
             });
}

void WorkerProcess::run_task(const actors::Invocation& invocation, std::shared_ptr<Connection> on,
                             actors::worker_actor reporter, std::function<void(Result<actors::RunAnswer>)> answer) {
  const std::string id = invocation.invocation_id;
  // The scheduler's link always asks for an outcome known by then in the answer.
  if (auto accepted = state_.accept(id, invocation.fence, true, clock()); !accepted) {
    answer(accepted.error());
    return;
  }
  calls_.insert_or_assign(id, Calls{std::move(on), std::move(reporter), std::move(answer)});
  execute(invocation);
}

void WorkerProcess::acknowledge(const std::vector<std::string>& ids) {
  for (const auto& id : state_.acknowledge(ids)) calls_.erase(id);
}

void WorkerProcess::cancel(const std::string& id, Duration grace) {
  if (!state_.holds(id)) return;
  auto it = executions_.find(id);
  if (it == executions_.end()) return;
  const uint64_t generation = it->second.generation;
  // It stops within its grace: a simulated task exits soon after SIGTERM.
  later(world().between(Duration::zero(), std::min<Duration>(grace, 100ms)), [id, generation](WorkerProcess& self) {
    auto e = self.executions_.find(id);
    if (e == self.executions_.end() || e->second.generation != generation) return;
    self.end_run(id, report_of(id, TaskReport::CANCELLED), "cancelled");
  });
}

void WorkerProcess::on_report(TaskReport report) {
  const std::string id = report.invocation_id;
  if (!state_.holds(id)) return;
  auto& calls = calls_.at(id);
  switch (report.kind) {
    case TaskReport::STARTED:
      answer(calls, actors::RunAnswer{});
      return;
    case TaskReport::HEARTBEAT: {
      if (state_.reporter_lost(id)) {
        heartbeat_through_session(id, report.payload);
        return;
      }
      auto weak = weak_from_this();
      auto lost = [weak, id, progress = report.payload] {
        // The reporter went with its connection: this and later heartbeats use the session.
        auto self = weak.lock();
        if (!self || !self->alive_ || !self->state_.lose_reporter(id)) return;
        self->heartbeat_through_session(id, progress);
      };
      calls.connection->call(
          Side::WORKER,
          [actor = calls.reporter, report, weak, id, lost](Connection::Responder respond) {
            caf::anon_send(actor, actors::report_atom::value, report,
                           reply_to<bool>(
                               [respond, weak, id, lost](Result<bool> cancel_requested) {
                                 // The reporter's heartbeat fails the call on an error.
                                 if (!cancel_requested) {
                                   respond(lost);
                                   return;
                                 }
                                 respond([weak, id, cancel = *cancel_requested] {
                                   auto self = weak.lock();
                                   if (self && self->alive_ && cancel) self->cancel(id, default_cancel_grace);
                                 });
                               },
                               [respond, lost] { respond(lost); }));
          },
          lost, true);
      return;
    }
    default: {
      const bool awaited = calls.answer != nullptr && calls.connection->open();
      auto outcome = std::make_shared<const TaskReport>(std::move(report));
      if (state_.ended(id, outcome, awaited, clock()) == actors::EndAnswer::WITH_OUTCOME) {
        answer(calls, actors::RunAnswer{true, outcome});
        return;
      }
      answer(calls, actors::RunAnswer{true, nullptr});
      deliver(id);
    }
  }
}

void WorkerProcess::answer(Calls& calls, actors::RunAnswer answer) {
  // A runTask whose connection broke is no longer awaited (its call was cancelled).
  if (calls.answer == nullptr || !calls.connection->open()) return;
  auto fulfil = std::move(calls.answer);
  calls.answer = nullptr;
  fulfil(std::move(answer));
}

std::function<TaskReport()> WorkerProcess::dated(const TaskReport& outcome, Duration ago) const {
  // As the scheduler's RPC layer dates an outcome: on arrival, minus how long ago it ended.
  return [outcome, ago, &world = world()] {
    TaskReport report = outcome;
    report.ended_at_us = test::ActorFixture::epoch_us + (world.now() - ago).count();
    return report;
  };
}

void WorkerProcess::delivered(const std::string& id) {
  state_.delivered(id);
  calls_.erase(id);
}

void WorkerProcess::deliver(const std::string& id) {
  auto outcome = state_.outcome(id);
  if (outcome == nullptr) return;
  auto& calls = calls_.at(id);
  auto weak = weak_from_this();
  const Duration ago = state_.ended_ago(id, clock());
  auto retry = [weak, id] {
    auto self = weak.lock();
    if (!self || !self->alive_) return;
    // The reporter failed (its connection is gone): use the session from now on.
    self->later(self->interval(), [id](WorkerProcess& w) { w.deliver_through_session(id); });
  };
  calls.connection->call(
      Side::WORKER,
      [actor = calls.reporter, outcome = dated(*outcome, ago), weak, id, retry](Connection::Responder respond) {
        caf::anon_send(actor, actors::update_atom::value, outcome(),
                       reply_to<bool>(
                           [respond, weak, id, retry](Result<bool> acknowledged) {
                             // The reporter's complete fails the call on an error.
                             if (!acknowledged) {
                               respond(retry);
                               return;
                             }
                             respond([weak, id] {
                               auto self = weak.lock();
                               if (self && self->alive_) self->delivered(id);
                             });
                           },
                           [respond, retry] { respond(retry); }));
      },
      retry, true);
}

void WorkerProcess::deliver_through_session(const std::string& id) {
  auto outcome = state_.outcome(id);
  if (outcome == nullptr) return;
  auto weak = weak_from_this();
  auto again = [weak, id] {
    auto self = weak.lock();
    if (!self || !self->alive_) return;
    self->later(self->interval(), [id](WorkerProcess& w) { w.deliver_through_session(id); });
  };
  if (!connection_ || !session_) {
    again();
    return;
  }
  connection_->call(
      Side::WORKER,
      [actor = *session_, outcome = dated(*outcome, state_.ended_ago(id, clock())), weak, id,
       again](Connection::Responder respond) {
        caf::anon_send(
            actor, actors::update_atom::value, outcome(),
            reply_to<bool>(
                [respond, weak, id, again](Result<bool> acknowledged) {
                  // updateStatus carries an error in its results rather than failing.
                  const std::optional<Error> error =
                      acknowledged ? std::nullopt : std::optional<Error>(acknowledged.error());
                  respond([weak, id, again, error] {
                    auto self = weak.lock();
                    if (!self || !self->alive_) return;
                    if (!error) {
                      self->delivered(id);
                      return;
                    }
                    if (self->state_.retry_refused(id, error->code == Errc::UNAVAILABLE)) {
                      again();
                      return;
                    }
                    self->world().note("worker " + self->instance() + ": the scheduler refused the outcome of " + id +
                                       ": " + error->message);
                    self->calls_.erase(id);
                  });
                },
                [respond, again] { respond(again); }));
      },
      again, true);
}

void WorkerProcess::heartbeat_through_session(const std::string& id, const std::string& progress) {
  if (!connection_ || !session_) return;
  auto weak = weak_from_this();
  connection_->call(
      Side::WORKER,
      [actor = *session_, id, progress, weak](Connection::Responder respond) {
        auto beat = report_of(id, TaskReport::HEARTBEAT);
        beat.payload = progress;
        caf::anon_send(actor, actors::report_atom::value, beat,
                       reply_to<bool>(
                           [respond, weak, id](Result<bool> cancel_requested) {
                             const bool cancel = cancel_requested && *cancel_requested;
                             respond([weak, id, cancel] {
                               auto self = weak.lock();
                               if (self && self->alive_ && cancel) self->cancel(id, default_cancel_grace);
                             });
                           },
                           [] {}));
      },
      [] {}, true);
}

// --- the executor ----------------------------------------------------------------------------

void WorkerProcess::execute(const actors::Invocation& invocation) {
  const std::string id = invocation.invocation_id;
  const RunPlan plan = env_.plan(invocation);
  const uint64_t generation = ++next_generation_;
  executions_[id] = Execution{plan, generation};
  env_.ledger->run_started(id, shard(), instance(), world().now());
  auto ended = report_of(id, plan.outcome);
  ended.reason = plan.reason;
  ended.non_retryable = plan.non_retryable;
  if (ended.kind == TaskReport::SUCCEEDED) ended.payload = "done";
  const std::string how = plan.outcome == TaskReport::SUCCEEDED ? "succeeded" : "failed:" + plan.reason;
  if (plan.duration > Duration::zero()) {
    later(report_delay, [id, generation](WorkerProcess& self) {
      auto e = self.executions_.find(id);
      if (e == self.executions_.end() || e->second.generation != generation) return;
      self.on_report(report_of(id, TaskReport::STARTED));
    });
    if (plan.heartbeat_every > Duration::zero()) executor_heartbeat(id, generation, 1);
  }
  later(plan.duration, [id, generation, ended, how](WorkerProcess& self) {
    auto e = self.executions_.find(id);
    if (e == self.executions_.end() || e->second.generation != generation) return;
    self.end_run(id, ended, how);
  });
}

void WorkerProcess::executor_heartbeat(const std::string& id, uint64_t generation, int beats) {
  auto it = executions_.find(id);
  if (it == executions_.end() || it->second.generation != generation) return;
  later(it->second.plan.heartbeat_every, [id, generation, beats](WorkerProcess& self) {
    auto e = self.executions_.find(id);
    if (e == self.executions_.end() || e->second.generation != generation) return;
    auto beat = report_of(id, TaskReport::HEARTBEAT);
    beat.payload = "beat " + std::to_string(beats);
    self.on_report(std::move(beat));
    self.executor_heartbeat(id, generation, beats + 1);
  });
}

void WorkerProcess::end_run(const std::string& id, TaskReport report, const std::string& how) {
  if (executions_.erase(id) == 0) return;
  env_.ledger->run_ended(id, instance(), world().now(), how);
  later(report_delay, [report = std::move(report)](WorkerProcess& self) { self.on_report(report); });
}

}  // namespace troupe::sim
