// One incarnation of the scheduler in the simulation: the real directory, dispatcher, matching,
// worker, workflow and task actors on CAF's test coordinator, over the shared history store, as
// a node wires them. A crash leaves its actors as they are (they never run again) and breaks
// its connections; the next incarnation starts on a copy of the store with the next epoch and
// revives the open workflows, as a restarted node does.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/system/directory.hpp"
#include "actors/system/dispatcher.hpp"
#include "test/sim/sim_network.hpp"
#include "test/sim/sim_world.hpp"
#include "test/support/actor_fixture.hpp"

namespace troupe::sim {

struct SchedulerOptions {
  actors::HealthTimeouts timeouts;
  Duration kill_grace = std::chrono::seconds(10);
  size_t workflow_cache = 10000;
};

/// A Reply for an actor that calls `deliver` with its answer, or `dropped` if the message is
/// destroyed unanswered (its actor had ended), as the RPC bridge then fails the call.
template <class T>
actors::Reply<T> reply_to(std::function<void(Result<T>)> deliver, std::function<void()> dropped) {
  struct Box {
    std::function<void(Result<T>)> deliver;
    std::function<void()> dropped;
    bool answered = false;
    ~Box() {
      if (!answered && dropped) dropped();
    }
  };
  auto box = std::make_shared<Box>();
  box->deliver = std::move(deliver);
  box->dropped = std::move(dropped);
  return actors::Reply<T>{[box](Result<T> r) {
    if (box->answered) return;
    box->answered = true;
    box->deliver(std::move(r));
  }};
}

class SchedulerNode final : public ActorClock {
 public:
  /// Starts on `store` as incarnation `epoch` and revives what is open in it.
  SchedulerNode(World& world, std::shared_ptr<storage::MemoryHistoryStore> store, uint64_t epoch,
                const SchedulerOptions& options);
  ~SchedulerNode() override;

  uint64_t epoch() const { return epoch_; }
  bool up() const { return up_; }
  const std::shared_ptr<storage::MemoryHistoryStore>& store() const { return fx_.store; }

  /// kill -9: its actors stop where they are and its connections break.
  void crash();
  /// A connection a worker opened to it (broken if it crashes).
  void accept(std::shared_ptr<Connection> connection) { connections_.push_back(std::move(connection)); }

  // --- what arrives over the network -----------------------------------------------------
  void register_worker(actors::WorkerInfo info, std::shared_ptr<actors::WorkerLink> link,
                       actors::Reply<actors::RegistrationOutcome> reply);
  /// A client's submission; `done` gets the directory's answer (the state once durable).
  void submit(const std::string& id, const std::string& json, std::function<void(Result<std::string>)> done);

  // --- ActorClock -------------------------------------------------------------------------
  Time next_due() const override;
  void advance_to(Time t) override;
  void run() override { fx_.run(); }

 private:
  World& world_;
  uint64_t epoch_;
  test::ActorFixture fx_;
  Time created_;
  caf::actor_clock::time_point clock_start_;
  actors::dispatcher_actor dispatcher_;
  actors::directory_actor directory_;
  bool up_ = true;
  std::vector<std::shared_ptr<Connection>> connections_;
};

}  // namespace troupe::sim
