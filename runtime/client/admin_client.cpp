// AdminClient: one connection to a scheduler's AdminService.
#include "runtime/client/admin_client.hpp"

#include "runtime/client/client_rpc.hpp"
#include "schema/admin.capnp.h"

namespace troupe::client {
namespace {

using runtime::text;

ActorRow actor_row(schema::ActorSummary::Reader a) {
  return ActorRow{text(a.getKind()), text(a.getId()),   text(a.getState()),    a.getMailbox(),
                  a.getTimers(),     a.getStartedUs(), text(a.getWaitsFor()), text(a.getError())};
}

}  // namespace

struct AdminClient::Impl {
  std::string address;
  std::shared_ptr<ThreadIo> thread_io = ThreadIo::of_this_thread();
  kj::AsyncIoContext& io = thread_io->io;
  std::shared_ptr<runtime::TlsEndpoint> tls;  ///< nullptr: plaintext
  kj::Own<Connection> connection;
  schema::Gateway::Client gateway;
  capnp::RemotePromise<schema::Gateway::AdminResults> handshake;
  schema::AdminService::Client service;

  Impl(const std::string& host, uint16_t port, const std::string& token, std::shared_ptr<runtime::TlsEndpoint> endpoint)
      : address(host + ":" + std::to_string(port)),
        tls(std::move(endpoint)),
        gateway(connect_gateway(io, host, port, tls.get(), connection)),
        handshake(ask(gateway, token)),
        service(handshake.getAdmin()) {}

  static capnp::RemotePromise<schema::Gateway::AdminResults> ask(schema::Gateway::Client& gateway,
                                                                 const std::string& token) {
    auto request = gateway.adminRequest();
    request.setToken(token);
    return request.send();
  }

  /// Sends `call`, waits, and reads a response without error with `read`.
  template <class T, class Request, class Read>
  Result<T> call(Request&& request, Read&& read) {
    try {
      return request.send()
          .then(
              [read](auto&& response) -> Result<T> {
                if (has_error(response)) return error_of(response);
                return read(response);
              },
              [address = address](kj::Exception&& e) -> Result<T> { return lost(address, e); })
          .wait(io.waitScope);
    } catch (const kj::Exception& e) {
      return lost(address, e);
    }
  }
};

AdminClient::AdminClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AdminClient::~AdminClient() = default;

Result<std::unique_ptr<AdminClient>> AdminClient::connect(const std::string& host, uint16_t port,
                                                         const ConnectOptions& options) {
  const std::string address = host + ":" + std::to_string(port);
  try {
    auto tls = client_tls(host, options);
    if (!tls) return tls.error();
    auto impl = std::make_unique<Impl>(host, port, options.token, std::move(*tls));
    auto expired = impl->io.provider->getTimer()
                       .afterDelay(options.timeout.count() * kj::MICROSECONDS)
                       .then([address]() -> Result<bool> {
                         return fail(Errc::UNAVAILABLE, "no answer from the scheduler at " + address);
                       });
    auto ready = kj::mv(impl->handshake)
                     .then(
                         [](capnp::Response<schema::Gateway::AdminResults>&& response) -> Result<bool> {
                           if (has_error(response)) return error_of(response);
                           return true;
                         },
                         [address](kj::Exception&& e) -> Result<bool> {
                           return fail(Errc::UNAVAILABLE,
                                       "cannot reach the scheduler at " + address + ": " + e.getDescription().cStr());
                         })
                     .exclusiveJoin(kj::mv(expired))
                     .wait(impl->io.waitScope);
    if (!ready) return ready.error();
    return std::unique_ptr<AdminClient>(new AdminClient(std::move(impl)));
  } catch (const kj::Exception& e) {
    return fail(Errc::UNAVAILABLE, "cannot reach the scheduler at " + address + ": " + e.getDescription().cStr());
  }
}

Result<ActorList> AdminClient::actors(const std::string& kind, ActorSort sort, uint32_t limit) {
  auto request = impl_->service.actorsRequest();
  request.setKind(kind);
  request.setSort(sort == ActorSort::MAILBOX ? schema::ActorSort::MAILBOX
                  : sort == ActorSort::AGE   ? schema::ActorSort::AGE
                                             : schema::ActorSort::KIND);
  request.setLimit(limit);
  return impl_->call<ActorList>(kj::mv(request), [](auto& r) {
    ActorList out;
    for (auto a : r.getActors()) out.actors.push_back(actor_row(a));
    for (auto c : r.getCounts()) out.counts.emplace_back(text(c.getKind()), c.getLive());
    out.passivated_workflows = r.getPassivatedWorkflows();
    return out;
  });
}

Result<std::vector<std::string>> AdminClient::ids(const std::string& kind, const std::string& prefix, uint32_t limit) {
  auto request = impl_->service.idsRequest();
  request.setKind(kind);
  request.setPrefix(prefix);
  request.setLimit(limit);
  return impl_->call<std::vector<std::string>>(kj::mv(request), [](auto& r) {
    std::vector<std::string> out;
    for (auto id : r.getIds()) out.push_back(text(id));
    return out;
  });
}

Result<ActorDetail> AdminClient::actor(const std::string& id) {
  auto request = impl_->service.actorRequest();
  request.setId(id);
  return impl_->call<ActorDetail>(kj::mv(request), [](auto& r) {
    auto a = r.getActor();
    ActorDetail out;
    out.summary = actor_row(a.getSummary());
    for (auto f : a.getFields()) out.fields.emplace_back(text(f.getName()), text(f.getValue()));
    for (auto t : a.getTimers()) out.timers.push_back({text(t.getWhat()), t.getAtUs()});
    for (auto e : a.getEvents()) out.events.push_back(watched_event(e));
    return out;
  });
}

Result<WorkflowDiagnosis> AdminClient::diagnose(const std::string& workflow_id) {
  auto request = impl_->service.diagnoseRequest();
  request.setWorkflowId(workflow_id);
  return impl_->call<WorkflowDiagnosis>(kj::mv(request), [](auto& r) {
    auto d = r.getDiagnosis();
    WorkflowDiagnosis out{text(d.getWorkflowId()), text(d.getState()), d.getLive(), text(d.getSummary()), {}};
    for (auto b : d.getBlockers()) out.blockers.push_back({text(b.getSubject()), text(b.getState()), text(b.getWaitsFor())});
    return out;
  });
}

Result<HistoryPage> AdminClient::history(const std::string& workflow_id, uint64_t from, uint32_t limit) {
  auto request = impl_->service.historyRequest();
  request.setWorkflowId(workflow_id);
  request.setFromSequence(from);
  request.setLimit(limit);
  return impl_->call<HistoryPage>(kj::mv(request), [](auto& r) {
    HistoryPage out;
    for (auto e : r.getEvents()) out.events.push_back(watched_event(e));
    out.last_sequence = r.getLastSequence();
    return out;
  });
}

Result<std::vector<TaskListRow>> AdminClient::task_lists() {
  return impl_->call<std::vector<TaskListRow>>(impl_->service.taskListsRequest(), [](auto& r) {
    std::vector<TaskListRow> out;
    for (auto l : r.getTaskLists()) {
      TaskListRow row;
      row.name = text(l.getName());
      for (auto q : l.getQueued()) row.queued.emplace_back(q.getPriority(), q.getQueued());
      row.session_queued = l.getSessionQueued();
      for (auto w : l.getWorkers()) row.workers.push_back({text(w.getWorker()), w.getSlots(), w.getInUse()});
      row.rate = l.getRate();
      row.burst = l.getBurst();
      row.wait_reason = text(l.getWaitReason());
      out.push_back(std::move(row));
    }
    return out;
  });
}

Result<StoreSummary> AdminClient::store() {
  return impl_->call<StoreSummary>(impl_->service.storeRequest(), [](auto& r) {
    auto s = r.getStore();
    StoreSummary out;
    for (auto f : s.getEngine()) out.engine.emplace_back(text(f.getName()), text(f.getValue()));
    out.batches = s.getBatches();
    out.operations = s.getOperations();
    out.largest_batch = s.getLargestBatch();
    out.events = s.getEvents();
    out.bytes_written = s.getBytesWritten();
    return out;
  });
}

}  // namespace troupe::client
