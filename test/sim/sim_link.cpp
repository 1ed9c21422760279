// WorkerLink calls carried to the simulated worker process and their answers carried back.
#include "test/sim/sim_link.hpp"

#include "test/sim/sim_worker.hpp"

namespace troupe::sim {
namespace {

Error disconnected() { return fail(Errc::UNAVAILABLE, "the connection to the worker broke"); }

}  // namespace

void SimWorkerLink::get_running_tasks(std::function<void(Result<actors::RunningTasks>)> done) {
  connection_->call(
      Side::SCHEDULER,
      [worker = worker_, done](Connection::Responder respond) {
        auto w = worker.lock();
        if (!w || !w->alive()) return;
        respond([done, running = w->running_tasks()] { done(running); });
      },
      [done] { done(disconnected()); });
}

void SimWorkerLink::run_task(const actors::Invocation& invocation,
                             std::function<void(Result<actors::RunAnswer>)> done) {
  auto connection = connection_;
  connection_->call(
      Side::SCHEDULER,
      [worker = worker_, connection, reporter = actor_, invocation, done](Connection::Responder respond) {
        auto w = worker.lock();
        if (!w || !w->alive()) return;
        w->run_task(invocation, connection, reporter, [respond, done](Result<actors::RunAnswer> answer) {
          respond([done, answer] {
            // As CapnpWorkerLink reads runTask's answer: an error in it is a refusal.
            if (!answer) {
              done(fail(Errc::NOT_ALLOWED_IN_STATE, answer.error().message));
            } else {
              done(*answer);
            }
          });
        });
      },
      [done] { done(disconnected()); });
}

void SimWorkerLink::acknowledge(std::vector<std::string> invocation_ids) {
  connection_->call(
      Side::SCHEDULER,
      [worker = worker_, ids = std::move(invocation_ids)](Connection::Responder respond) {
        auto w = worker.lock();
        if (!w || !w->alive()) return;
        w->acknowledge(ids);
        respond([] {});
      },
      [] {});
}

void SimWorkerLink::notify_if_not_running(std::vector<std::string> invocation_ids, actors::Fence fence,
                                          std::function<void(Result<std::vector<std::string>>)> done) {
  connection_->call(
      Side::SCHEDULER,
      [worker = worker_, ids = std::move(invocation_ids), fence, done](Connection::Responder respond) {
        auto w = worker.lock();
        if (!w || !w->alive()) return;
        respond([done, not_running = w->not_running(ids, fence)] { done(not_running); });
      },
      [done] { done(disconnected()); });
}

void SimWorkerLink::cancel_task(const std::string& invocation_id, Duration grace) {
  connection_->call(
      Side::SCHEDULER,
      [worker = worker_, invocation_id, grace](Connection::Responder respond) {
        auto w = worker.lock();
        if (!w || !w->alive()) return;
        w->cancel(invocation_id, grace);
        respond([] {});
      },
      [] {});
}

void SimWorkerLink::request_suicide(const std::string& reason) {
  connection_->call(
      Side::SCHEDULER,
      [worker = worker_, reason](Connection::Responder respond) {
        auto w = worker.lock();
        if (!w || !w->alive()) return;
        respond([] {});
        w->suicide(reason);
      },
      [] {});
}

}  // namespace troupe::sim
