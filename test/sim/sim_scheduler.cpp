// A scheduler incarnation: a node's actors on the test coordinator, on simulated time.
#include "test/sim/sim_scheduler.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

namespace troupe::sim {
namespace {

/// Sends `xs` to `to` from a short-lived actor and hands the answer to `done`, as an RPC
/// server's request to an actor does.
template <class T, class Handle, class... Ts>
void ask(caf::actor_system& system, const Handle& to, std::function<void(Result<T>)> done, Ts... xs) {
  system.spawn([to, done, xs...](caf::event_based_actor* self) {
    self->request(to, caf::infinite, xs...)
        .then([done](T& value) { done(std::move(value)); },
              [done](caf::error& error) { done(actors::from_caf(error)); });
  });
}

}  // namespace

SchedulerNode::SchedulerNode(World& world, std::shared_ptr<storage::MemoryHistoryStore> store, uint64_t epoch,
                             const SchedulerOptions& options)
    : world_(world), epoch_(epoch), fx_({}, std::move(store)), created_(world.now()),
      clock_start_(fx_.sched.clock().now()) {
  auto fences = std::make_shared<actors::FenceCounter>(epoch);
  // Event times follow the simulation across incarnations, as a wall clock would.
  fx_.wiring.now_us = [&world] { return test::ActorFixture::epoch_us + world.now().count(); };
  fx_.wiring.fences = fences;
  fx_.wiring.kill_grace = options.kill_grace;
  fx_.wiring.workflow_cache = options.workflow_cache;
  actors::DispatcherOptions dispatch;
  dispatch.timeouts = options.timeouts;
  dispatch.fences = fences;
  dispatch.recovery_window = options.timeouts.lease;  // a node's default: the lease
  fx_.wiring.recovery_window = dispatch.recovery_window;
  dispatcher_ = fx_.own(actors::spawn_dispatcher(fx_.sys, dispatch));
  fx_.wiring.executor = caf::actor_cast<actors::executor_actor>(dispatcher_);
  directory_ = fx_.own(actors::spawn_directory(fx_.sys, fx_.store, fx_.wiring));
  // As a node does once it listens: revive what is open, then tell the dispatcher how much.
  auto dispatcher = dispatcher_;
  auto& system = fx_.sys;
  ask<uint64_t>(system, directory_, [&system, dispatcher](Result<uint64_t> revived) {
    caf::anon_send(dispatcher, actors::recovered_atom::value, revived ? *revived : uint64_t{0});
  }, actors::revive_atom::value);
  fx_.run();
}

SchedulerNode::~SchedulerNode() = default;

void SchedulerNode::crash() {
  if (!up_) return;
  up_ = false;
  world_.note("scheduler epoch " + std::to_string(epoch_) + " crashes");
  for (auto& connection : connections_) connection->close("the scheduler crashed");
  connections_.clear();
}

void SchedulerNode::register_worker(actors::WorkerInfo info, std::shared_ptr<actors::WorkerLink> link,
                                    actors::Reply<actors::RegistrationOutcome> reply) {
  caf::anon_send(dispatcher_, actors::register_atom::value, std::move(info), std::move(link), std::move(reply));
}

void SchedulerNode::submit(const std::string& id, const std::string& json,
                           std::function<void(Result<std::string>)> done) {
  ask<std::string>(fx_.sys, directory_, std::move(done), actors::submit_atom::value, id, json, std::string("{}"),
                   std::string());
}

Time SchedulerNode::next_due() const {
  const auto& schedule = fx_.sched.clock().schedule();
  if (schedule.empty()) return never;
  return created_ + std::chrono::ceil<Duration>(schedule.begin()->first - clock_start_);
}

void SchedulerNode::advance_to(Time t) {
  auto& clock = fx_.sched.clock();
  const auto target = clock_start_ + std::chrono::duration_cast<caf::timespan>(t - created_);
  const auto step = target > clock.now() ? target - clock.now() : caf::timespan(0);
  fx_.sched.advance_time(step);
  fx_.run();
}

}  // namespace troupe::sim
