#include "runtime/admin/admin_rpc.hpp"
#include "runtime/counted_calls.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <chrono>

#include <caf/actor_system.hpp>

#include "actors/system/actor_roster.hpp"
#include "actors/system/prober.hpp"
#include "runtime/admin/diagnosis.hpp"
#include "runtime/caf_kj.hpp"
#include "runtime/scheduler_rpc.hpp"
#include "runtime/wire.hpp"
#include "storage/codec.hpp"

namespace troupe::runtime {
namespace {

/// How long an actor has to answer a probe: one that takes longer is busy in one long step, or
/// stuck, and is listed as such.
constexpr std::chrono::milliseconds probe_timeout{2000};
constexpr uint32_t default_limit = 1000;
/// The events `actor ID` shows.
constexpr size_t shown_events = 20;
/// How far back `actor ID` looks for a task's or session's own events in its workflow's history.
constexpr uint64_t event_window = 2000;

uint32_t timer_count(const actors::ProbedActor& a) {
  return a.probe ? static_cast<uint32_t>(a.probe->timers.size()) : 0;
}

void fill_summary(schema::ActorSummary::Builder out, const actors::ProbedActor& a) {
  out.setKind(a.entry.kind);
  out.setId(a.entry.id);
  out.setStartedUs(a.entry.started_us);
  out.setError(a.error);
  if (!a.probe) return;
  out.setState(a.probe->state);
  out.setMailbox(a.probe->mailbox);
  out.setTimers(timer_count(a));
  out.setWaitsFor(a.probe->waits_for);
}

/// The passivated workflows the directory's probe counted; 0 if it did not answer.
uint64_t passivated_of(const std::vector<actors::ProbedActor>& probed) {
  for (const auto& a : probed) {
    if (a.entry.kind == "directory" && a.probe) return a.probe->passivated_workflows;
  }
  return 0;
}

/// Copies `events` (packed) into `out`, skipping none: they were validated when written.
Result<void> fill_events(capnp::List<schema::HistoryEvent>::Builder out, const std::vector<storage::StoredEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    auto decoded = storage::DecodedEvent::decode(events[i].packed);
    if (!decoded) return decoded.error();
    out.setWithCaveats(static_cast<unsigned>(i), decoded->get());
  }
  return ok();
}

/// The last events of the actor's own history: a workflow's, or its task's or session's events
/// within it; a worker's journal.
Result<std::vector<storage::StoredEvent>> last_events(storage::HistoryStore& store, const actors::ActorRoster::Entry& entry) {
  if (entry.kind == "worker") {
    auto journal = store.read_worker_journal(entry.id, 1, storage::default_worker_journal_entries);
    if (!journal) return journal.error();
    if (journal->size() > shown_events) journal->erase(journal->begin(), journal->end() - shown_events);
    return journal;
  }
  if (entry.kind != "workflow" && entry.kind != "task" && entry.kind != "session") {
    return std::vector<storage::StoredEvent>{};
  }
  const auto slash = entry.id.find('/');
  const std::string workflow = entry.id.substr(0, slash);
  const std::string own = slash == std::string::npos ? "" : entry.id.substr(slash + 1);
  auto last = store.last_sequence(workflow);
  if (!last) return last.error();
  const uint64_t window = own.empty() ? shown_events : event_window;
  const uint64_t from = *last > window ? *last - window + 1 : 1;
  auto read = store.read(workflow, from, static_cast<size_t>(window));
  if (!read) return read.error();
  if (own.empty()) return read;
  const auto kind = entry.kind == "task" ? schema::ActorKind::TASK : schema::ActorKind::SESSION;
  std::vector<storage::StoredEvent> mine;
  for (auto& event : *read) {
    auto decoded = storage::DecodedEvent::decode(event.packed);
    if (!decoded) return decoded.error();
    auto e = decoded->get();
    if (e.getActorKind() == kind && text(e.getActorId()) == own) mine.push_back(std::move(event));
  }
  if (mine.size() > shown_events) mine.erase(mine.begin(), mine.end() - shown_events);
  return mine;
}

class AdminServiceImpl : public schema::AdminService::Server {
 public:
  explicit AdminServiceImpl(std::shared_ptr<SchedulerServices> services) : services_(std::move(services)) {}

  kj::Promise<void> actors(ActorsContext context) override {
    auto params = context.getParams();
    const std::string kind = text(params.getKind());
    if (auto unknown = unknown_kind(kind)) {
      set_error(context.getResults().initError(), *unknown);
      return kj::READY_NOW;
    }
    auto entries = roster().entries(kind);
    // The directory counts the passivated workflows: asked along, listed only if wanted.
    const bool directory_listed = kind.empty() || kind == "directory";
    if (!directory_listed) {
      for (auto& e : roster().entries("directory")) entries.push_back(std::move(e));
    }
    const auto sort = params.getSort();
    const uint32_t limit = params.getLimit() ? params.getLimit() : default_limit;
    auto counts = roster().counts();
    return probe(std::move(entries)).then([context, kind, directory_listed, sort, limit, counts](
                                               Result<std::vector<actors::ProbedActor>> probed) mutable {
      auto results = context.getResults();
      if (!probed) {
        set_error(results.initError(), probed.error());
        return;
      }
      results.setPassivatedWorkflows(passivated_of(*probed));
      if (!directory_listed) std::erase_if(*probed, [](const auto& a) { return a.entry.kind == "directory"; });
      auto& list = *probed;
      std::sort(list.begin(), list.end(), [sort](const actors::ProbedActor& a, const actors::ProbedActor& b) {
        switch (sort) {
          case schema::ActorSort::MAILBOX: {
            const uint64_t ma = a.probe ? a.probe->mailbox : 0, mb = b.probe ? b.probe->mailbox : 0;
            if (ma != mb) return ma > mb;
            break;
          }
          case schema::ActorSort::AGE:
            if (a.entry.started_us != b.entry.started_us) return a.entry.started_us < b.entry.started_us;
            break;
          default: break;
        }
        return std::tie(a.entry.kind, a.entry.id) < std::tie(b.entry.kind, b.entry.id);
      });
      const size_t shown = std::min<size_t>(list.size(), limit);
      auto out = results.initActors(static_cast<unsigned>(shown));
      for (size_t i = 0; i < shown; ++i) fill_summary(out[static_cast<unsigned>(i)], list[i]);
      auto out_counts = results.initCounts(static_cast<unsigned>(counts.size()));
      unsigned i = 0;
      for (const auto& [k, n] : counts) {
        out_counts[i].setKind(k);
        out_counts[i].setLive(n);
        ++i;
      }
    });
  }

  kj::Promise<void> actor(ActorContext context) override {
    const std::string id = text(context.getParams().getId());
    auto entry = roster().find(id);
    if (!entry) {
      set_error(context.getResults().initError(),
                Error{Errc::NOT_FOUND, "no live actor has id '" + id +
                                           "' (ids: a workflow id, WORKFLOW/TASK, WORKFLOW/SESSION, a worker's name, "
                                           "a task list, directory, dispatcher; a passivated workflow has no actor: "
                                           "try diagnose)"});
      return kj::READY_NOW;
    }
    auto store = services_->store;
    return probe({*entry}).then([context, store, entry = *entry](Result<std::vector<actors::ProbedActor>> probed) mutable {
      auto results = context.getResults();
      if (!probed) {
        set_error(results.initError(), probed.error());
        return;
      }
      if (probed->empty()) {
        set_error(results.initError(), Error{Errc::NOT_FOUND, "actor '" + entry.id + "' ended meanwhile"});
        return;
      }
      const auto& a = probed->front();
      auto out = results.initActor();
      fill_summary(out.initSummary(), a);
      if (a.probe) {
        auto fields = out.initFields(static_cast<unsigned>(a.probe->fields.size()));
        for (unsigned i = 0; i < fields.size(); ++i) {
          fields[i].setName(a.probe->fields[i].first);
          fields[i].setValue(a.probe->fields[i].second);
        }
        auto timers = out.initTimers(static_cast<unsigned>(a.probe->timers.size()));
        for (unsigned i = 0; i < timers.size(); ++i) {
          timers[i].setWhat(a.probe->timers[i].what);
          timers[i].setAtUs(a.probe->timers[i].at_us);
        }
      }
      auto events = last_events(*store, entry);
      if (!events) {
        set_error(results.initError(), events.error());
        return;
      }
      if (auto filled = fill_events(out.initEvents(static_cast<unsigned>(events->size())), *events); !filled) {
        set_error(results.initError(), filled.error());
      }
    });
  }

  kj::Promise<void> diagnose(DiagnoseContext context) override {
    const std::string id = text(context.getParams().getWorkflowId());
    auto status = describe_workflow(*services_->store, id, services_->waits.get());
    if (!status) {
      set_error(context.getResults().initError(), status.error());
      return kj::READY_NOW;
    }
    // The workflow's own actors: the workflow, and its tasks and sessions (WORKFLOW/...).
    std::vector<actors::ActorRoster::Entry> mine;
    for (auto& e : roster().entries()) {
      if (e.id == id || (e.id.size() > id.size() && e.id.compare(0, id.size(), id) == 0 && e.id[id.size()] == '/')) {
        mine.push_back(std::move(e));
      }
    }
    return probe(std::move(mine)).then([context, status = std::move(*status)](
                                           Result<std::vector<actors::ProbedActor>> probed) mutable {
      auto results = context.getResults();
      if (!probed) {
        set_error(results.initError(), probed.error());
        return;
      }
      const Diagnosis d = runtime::diagnose(status, *probed);
      auto out = results.initDiagnosis();
      out.setWorkflowId(d.workflow_id);
      out.setState(d.state);
      out.setLive(d.live);
      out.setSummary(d.summary);
      auto blockers = out.initBlockers(static_cast<unsigned>(d.blockers.size()));
      for (unsigned i = 0; i < blockers.size(); ++i) {
        blockers[i].setSubject(d.blockers[i].subject);
        blockers[i].setState(d.blockers[i].state);
        blockers[i].setWaitsFor(d.blockers[i].waits_for);
      }
    });
  }

  kj::Promise<void> history(HistoryContext context) override {
    auto params = context.getParams();
    const std::string id = text(params.getWorkflowId());
    auto results = context.getResults();
    auto& store = *services_->store;
    auto record = store.find_workflow(id);
    if (!record || !*record) {
      set_error(results.initError(), record ? Error{Errc::NOT_FOUND, "no workflow has id '" + id + "'"} : record.error());
      return kj::READY_NOW;
    }
    const uint64_t from = std::max<uint64_t>(1, params.getFromSequence());
    const uint32_t limit = params.getLimit() ? params.getLimit() : default_limit;
    auto events = store.read(id, from, limit);
    auto last = store.last_sequence(id);
    if (!events || !last) {
      set_error(results.initError(), events ? last.error() : events.error());
      return kj::READY_NOW;
    }
    results.setLastSequence(*last);
    if (auto filled = fill_events(results.initEvents(static_cast<unsigned>(events->size())), *events); !filled) {
      set_error(results.initError(), filled.error());
    }
    return kj::READY_NOW;
  }

  kj::Promise<void> taskLists(TaskListsContext context) override {
    return probe(roster().entries("matching")).then([context](Result<std::vector<actors::ProbedActor>> probed) mutable {
      auto results = context.getResults();
      if (!probed) {
        set_error(results.initError(), probed.error());
        return;
      }
      std::vector<const actors::ProbedActor*> lists;
      for (const auto& a : *probed) {
        if (a.probe && a.probe->task_list) lists.push_back(&a);
      }
      std::sort(lists.begin(), lists.end(), [](auto* a, auto* b) { return a->entry.id < b->entry.id; });
      auto out = results.initTaskLists(static_cast<unsigned>(lists.size()));
      for (unsigned i = 0; i < out.size(); ++i) {
        const auto& view = *lists[i]->probe->task_list;
        auto list = out[i];
        list.setName(lists[i]->entry.id);
        auto queued = list.initQueued(static_cast<unsigned>(view.queued.size()));
        for (unsigned j = 0; j < queued.size(); ++j) {
          queued[j].setPriority(view.queued[j].priority);
          queued[j].setQueued(view.queued[j].queued);
        }
        list.setSessionQueued(view.session_queued);
        auto workers = list.initWorkers(static_cast<unsigned>(view.workers.size()));
        for (unsigned j = 0; j < workers.size(); ++j) {
          workers[j].setWorker(view.workers[j].name);
          workers[j].setSlots(view.workers[j].slots);
          workers[j].setInUse(view.workers[j].in_use);
        }
        list.setRate(view.rate);
        list.setBurst(view.burst);
        list.setWaitReason(view.wait_reason);
      }
    });
  }

  kj::Promise<void> store(StoreContext context) override {
    auto& store = *services_->store;
    const auto stats = store.stats();
    const auto engine = store.engine_properties();
    auto out = context.getResults().initStore();
    auto fields = out.initEngine(static_cast<unsigned>(engine.size()));
    for (unsigned i = 0; i < fields.size(); ++i) {
      fields[i].setName(engine[i].first);
      fields[i].setValue(engine[i].second);
    }
    out.setBatches(stats.batches);
    out.setOperations(stats.operations);
    out.setLargestBatch(stats.largest_batch);
    out.setEvents(stats.events);
    out.setBytesWritten(stats.bytes_written);
    return kj::READY_NOW;
  }

  kj::Promise<void> ids(IdsContext context) override {
    auto params = context.getParams();
    const std::string kind = text(params.getKind());
    if (auto unknown = unknown_kind(kind)) {
      set_error(context.getResults().initError(), *unknown);
      return kj::READY_NOW;
    }
    const std::string prefix = text(params.getPrefix());
    const uint32_t limit = params.getLimit() ? params.getLimit() : default_limit;
    std::set<std::string> ids;
    for (const auto& entry : roster().entries(kind)) {
      if (entry.id.compare(0, prefix.size(), prefix) == 0) ids.insert(entry.id);
    }
    auto out = context.getResults().initIds(static_cast<unsigned>(std::min<size_t>(ids.size(), limit)));
    unsigned i = 0;
    for (auto it = ids.begin(); i < out.size(); ++it, ++i) out.set(i, *it);
    return kj::READY_NOW;
  }

 private:
  /// INVALID_ARGUMENT, naming the kinds, unless `kind` is one (or empty: every kind).
  static std::optional<Error> unknown_kind(const std::string& kind) {
    const auto& kinds = actors::actor_kinds();
    if (kind.empty() || std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) return std::nullopt;
    std::string known;
    for (const auto& k : kinds) known += (known.empty() ? "" : ", ") + k;
    return Error{Errc::INVALID_ARGUMENT, "no actor kind '" + kind + "'; the kinds are " + known};
  }

  actors::ActorRoster& roster() {
    static actors::ActorRoster empty;
    return services_->roster ? *services_->roster : empty;
  }

  /// Probes `entries` from the actor system; the answers come back to the RPC thread.
  kj::Promise<Result<std::vector<actors::ProbedActor>>> probe(std::vector<actors::ActorRoster::Entry> entries) {
    auto b = bridge<std::vector<actors::ProbedActor>>();
    actors::probe_actors(*services_->system, std::move(entries), probe_timeout,
                         [resolve = b.resolve](std::vector<actors::ProbedActor> probed) { resolve(std::move(probed)); });
    return kj::mv(b.promise);
  }

  std::shared_ptr<SchedulerServices> services_;
};

}  // namespace

schema::AdminService::Client make_admin_service(std::shared_ptr<SchedulerServices> services,
                                                std::shared_ptr<ConnectionTicket> ticket) {
  return kj::heap<CountedCalls<AdminServiceImpl>>(std::move(ticket), std::move(services));
}

}  // namespace troupe::runtime
