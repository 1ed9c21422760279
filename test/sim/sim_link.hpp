// The scheduler's line to a simulated worker process: WorkerLink over a simulated connection,
// as runtime/scheduler_rpc.cpp's CapnpWorkerLink is over Cap'n Proto. A call that fails with
// its connection is UNAVAILABLE (its outcome unknown); a runTask the worker refuses is
// NOT_ALLOWED_IN_STATE.
#pragma once

#include <memory>

#include "actors/worker/worker_actor.hpp"
#include "test/sim/sim_network.hpp"

namespace troupe::sim {

class WorkerProcess;

class SimWorkerLink final : public actors::WorkerLink {
 public:
  SimWorkerLink(std::shared_ptr<Connection> connection, std::weak_ptr<WorkerProcess> worker)
      : connection_(std::move(connection)), worker_(std::move(worker)) {}

  /// The worker actor its registration was given: the invocations' reporters report to it.
  void bind(actors::worker_actor actor) { actor_ = std::move(actor); }

  void get_running_tasks(std::function<void(Result<actors::RunningTasks>)> done) override;
  void run_task(const actors::Invocation& invocation, std::function<void(Result<actors::RunAnswer>)> done) override;
  void acknowledge(std::vector<std::string> invocation_ids) override;
  void notify_if_not_running(std::vector<std::string> invocation_ids, actors::Fence fence,
                             std::function<void(Result<std::vector<std::string>>)> done) override;
  void cancel_task(const std::string& invocation_id, Duration grace) override;
  void request_suicide(const std::string& reason) override;
  // The simulated cluster is never drained: these exist for the interface only, and behave as
  // the nearest calls the simulated worker has.
  void interrupt_task(const std::string& invocation_id, Duration grace, const std::string&) override {
    cancel_task(invocation_id, grace);
  }
  void request_stop(const std::string& reason) override { request_suicide(reason); }
  // The simulated workflows have no sessions.
  void open_session(const actors::SessionOpen&, std::function<void(Result<actors::TaskReport>)> done) override {
    done(fail(Errc::UNIMPLEMENTED, "the simulated worker holds no sessions"));
  }
  void close_session(const std::string&, std::function<void(Result<std::optional<actors::TaskReport>>)> done) override {
    done(std::optional<actors::TaskReport>());
  }

 private:
  std::shared_ptr<Connection> connection_;
  std::weak_ptr<WorkerProcess> worker_;
  actors::worker_actor actor_;
};

}  // namespace troupe::sim
