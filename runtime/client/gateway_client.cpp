// GatewayClient over capnp::EzRpcClient: one connection, one KJ event loop on the caller's thread.
#include "runtime/client/gateway_client.hpp"

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include "runtime/wire.hpp"
#include "schema/gateway.capnp.h"

namespace troupe::client {
namespace {

using runtime::text;

/// The scheduler's error in a response, if it set one.
template <class Response>
bool has_error(Response& response) {
  return response.hasError() && response.getError().getCode() != schema::ErrorCode::NONE;
}

template <class Response>
Error error_of(Response& response) {
  auto e = response.getError();
  return fail(static_cast<Errc>(static_cast<uint16_t>(e.getCode())), text(e.getMessage()));
}

Error lost(const std::string& address, const kj::Exception& e) {
  return fail(Errc::UNAVAILABLE, "lost the scheduler at " + address + ": " + std::string(e.getDescription().cStr()));
}

kj::Duration kj_duration(Duration d) { return d.count() * kj::MICROSECONDS; }

}  // namespace

struct GatewayClient::Impl : kj::TaskSet::ErrorHandler {
  std::string address;
  capnp::EzRpcClient rpc;
  schema::ClientService::Client service;
  kj::TaskSet tasks{*this};
  size_t outstanding = 0;
  kj::Own<kj::PromiseFulfiller<void>> idle;  ///< set while run() waits

  Impl(const std::string& host, uint16_t port)
      : address(host + ":" + std::to_string(port)),
        rpc(host, port),
        service(rpc.getMain<schema::Gateway>().clientRequest().send().getClient()) {}

  // Callbacks catch what they can; anything else is a bug in a callback.
  void taskFailed(kj::Exception&& e) override { KJ_LOG(ERROR, "a client callback threw", e); }

  void finished_one() {
    if (--outstanding == 0 && idle) idle->fulfill();
  }

  kj::Promise<Result<std::string>> start(const StartRequest& request) {
    auto call = service.startWorkflowRequest();
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

  kj::Promise<Result<WorkflowResult>> result(const std::string& workflow_id) {
    auto call = service.resultRequest();
    call.setWorkflowId(workflow_id);
    return call.send().then(
        [](capnp::Response<schema::ClientService::ResultResults>&& response) -> Result<WorkflowResult> {
          if (has_error(response)) return error_of(response);
          auto r = response.getResult();
          return WorkflowResult{text(r.getWorkflowId()), text(r.getState()), text(r.getDetail())};
        },
        [address = address](kj::Exception&& e) -> Result<WorkflowResult> { return lost(address, e); });
  }

  /// `promise`, or TIMED_OUT after `timeout`.
  template <class T>
  kj::Promise<Result<T>> within(kj::Promise<Result<T>> promise, Duration timeout, std::string what) {
    auto expired = rpc.getIoProvider().getTimer().afterDelay(kj_duration(timeout)).then([what]() -> Result<T> {
      return fail(Errc::TIMED_OUT, what);
    });
    return promise.exclusiveJoin(kj::mv(expired));
  }
};

GatewayClient::GatewayClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GatewayClient::~GatewayClient() = default;

Result<std::unique_ptr<GatewayClient>> GatewayClient::connect(const std::string& host, uint16_t port,
                                                               Duration timeout) {
  const std::string address = host + ":" + std::to_string(port);
  try {
    auto impl = std::make_unique<Impl>(host, port);
    // The connection is made lazily: resolve the client service now, so an unreachable
    // scheduler shows here rather than on the first call.
    auto ready = impl->service.whenResolved().then([]() -> Result<bool> { return true; },
                                                   [address](kj::Exception&& e) -> Result<bool> {
                                                     return fail(Errc::UNAVAILABLE, "cannot reach the scheduler at " + address +
                                                                                        ": " + e.getDescription().cStr());
                                                   });
    auto outcome = impl->within(kj::mv(ready), timeout, "no answer from the scheduler at " + address + " within " +
                                                            format_duration(timeout))
                       .wait(impl->rpc.getWaitScope());
    if (!outcome) return fail(Errc::UNAVAILABLE, outcome.error().message);
    return std::unique_ptr<GatewayClient>(new GatewayClient(std::move(impl)));
  } catch (const kj::Exception& e) {
    return fail(Errc::UNAVAILABLE, "cannot reach the scheduler at " + address + ": " + e.getDescription().cStr());
  }
}

Result<std::string> GatewayClient::start(const StartRequest& request) {
  return impl_->start(request).wait(impl_->rpc.getWaitScope());
}

Result<WorkflowResult> GatewayClient::result(const std::string& workflow_id, Duration timeout) {
  return impl_
      ->within(impl_->result(workflow_id), timeout,
               "workflow '" + workflow_id + "' did not end within " + format_duration(timeout))
      .wait(impl_->rpc.getWaitScope());
}

Result<WorkflowStatus> GatewayClient::describe(const std::string& workflow_id) {
  auto call = impl_->service.describeRequest();
  call.setWorkflowId(workflow_id);
  return call.send()
      .then(
          [](capnp::Response<schema::ClientService::DescribeResults>&& response) -> Result<WorkflowStatus> {
            if (has_error(response)) return error_of(response);
            auto d = response.getDescription();
            WorkflowStatus out{text(d.getWorkflowId()), text(d.getState()), text(d.getDetail()), {}};
            for (auto t : d.getTasks()) {
              out.tasks.push_back(TaskStatus{text(t.getName()), text(t.getState()), t.getAttempt(),
                                             text(t.getWorker()), text(t.getFailure()),
                                             runtime::bytes(t.getProgress())});
            }
            return out;
          },
          [address = impl_->address](kj::Exception&& e) -> Result<WorkflowStatus> { return lost(address, e); })
      .wait(impl_->rpc.getWaitScope());
}

Result<std::string> GatewayClient::control(const std::string& workflow_id, Control action) {
  auto call = impl_->service.controlRequest();
  call.setWorkflowId(workflow_id);
  call.setAction(action == Control::PAUSE    ? schema::ControlAction::PAUSE
                 : action == Control::RESUME ? schema::ControlAction::RESUME
                                             : schema::ControlAction::STOP);
  return call.send()
      .then(
          [](capnp::Response<schema::ClientService::ControlResults>&& response) -> Result<std::string> {
            if (has_error(response)) return error_of(response);
            return text(response.getState());
          },
          [address = impl_->address](kj::Exception&& e) -> Result<std::string> { return lost(address, e); })
      .wait(impl_->rpc.getWaitScope());
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

Result<void> GatewayClient::run(Duration timeout) {
  if (impl_->outstanding == 0) return ok();
  auto pair = kj::newPromiseAndFulfiller<void>();
  impl_->idle = kj::mv(pair.fulfiller);
  auto idle = pair.promise.then([]() -> Result<bool> { return true; });
  auto outcome = impl_->within(kj::mv(idle), timeout,
                               std::to_string(impl_->outstanding) + " calls still outstanding after " +
                                   format_duration(timeout))
                     .wait(impl_->rpc.getWaitScope());
  impl_->idle = nullptr;
  if (!outcome) return outcome.error();
  return ok();
}

}  // namespace troupe::client
