// The node's collectors. Counters and histograms are read from the meters the actors and the
// store update as they go; gauges of what the actors' state already knows (live workflows,
// workers) are asked of those actors at the scrape, so nothing on the dispatch path pays for
// them.
//
// To add a metric: read it in one of the collectors below, or add a collector to
// node_registry() (a part of the node it reads joins NodeMetricsSources, set in
// runtime/node.cpp), and list it in README.md's "Metrics" table. Names follow Prometheus'
// conventions: prefix troupe_, base units (_seconds, _bytes), _total on counters.
#include "runtime/metrics/node_metrics.hpp"

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/meters.hpp"
#include "actors/worker/health_machine.hpp"
#include "actors/worker/worker_view.hpp"
#include "runtime/metrics/actor_metrics.hpp"
#include "runtime/scheduler_rpc.hpp"
#include "storage/rocks_history_store.hpp"

namespace troupe::runtime {
namespace {

using metrics::Registry;
using metrics::Scrape;

/// How long a scrape waits for an actor's answer: well inside Prometheus' default scrape
/// timeout (10 s), and long enough for a busy scheduler's mailbox.
constexpr auto ask_timeout = std::chrono::seconds(3);

/// Microseconds per second, for histograms observed in µs.
constexpr double us_per_second = 1e6;

double as_double(uint64_t v) { return static_cast<double>(v); }

void node_info(Scrape& scrape, const NodeConfig& node) {
  std::string roles = node.scheduler ? "scheduler" : "";
  if (node.worker) roles += roles.empty() ? "worker" : ",worker";
  scrape.gauge("troupe_node_info", "Always 1; its labels name this node and its roles.", 1,
               {{"node", node.name}, {"roles", roles}});
}

// --- scheduler --------------------------------------------------------------------------------

void workflows(Scrape& scrape, const actors::SchedulerMeters& m) {
  scrape.counter("troupe_workflows_started_total",
                 "Workflow runs started: submissions acknowledged, and reruns of finished workflows.",
                 as_double(m.workflows_started.value()));
  for (auto state : {actors::WorkflowState::SUCCESS, actors::WorkflowState::FAILED, actors::WorkflowState::STOPPED}) {
    scrape.counter("troupe_workflows_closed_total", "Workflow runs closed, by the state they closed in.",
                   as_double(m.workflows_closed[static_cast<size_t>(state)].value()),
                   {{"state", std::string(actors::WorkflowMachineTraits::name(state))}});
  }
}

void tasks(Scrape& scrape, const actors::SchedulerMeters& m) {
  for (auto state : {actors::TaskState::SUCCESS, actors::TaskState::FAILURE, actors::TaskState::KILLED,
                     actors::TaskState::FORCED_SUCCESS}) {
    scrape.counter("troupe_tasks_ended_total", "Task instances that reached a terminal state, by that state.",
                   as_double(m.tasks_ended[static_cast<size_t>(state)].value()),
                   {{"outcome", std::string(actors::TaskMachineTraits::name(state))}});
  }
  scrape.histogram("troupe_task_schedule_to_start_seconds",
                   "From an attempt joining its task list to its dispatch to a worker (what scheduleToStart limits).",
                   m.schedule_to_start_us.snapshot(), us_per_second);
  scrape.histogram("troupe_task_start_to_close_seconds",
                   "From an invocation's dispatch to its end, whatever the outcome (what startToClose limits).",
                   m.start_to_close_us.snapshot(), us_per_second);
  for (const auto& [list, depth] : m.queue_depths.snapshot()) {
    scrape.gauge("troupe_dispatch_queue_depth", "Tasks waiting in a task list's queue for a worker slot.",
                 static_cast<double>(depth), {{"task_list", list}});
  }
}

/// The scrape could not ask an actor: the collector fails, which the scrape counts.
[[noreturn]] void no_answer(const char* who) { throw std::runtime_error(std::string(who) + " did not answer the scrape"); }

void directory(Scrape& scrape, const NodeMetricsSources& s) {
  caf::scoped_actor self{*s.system};
  bool answered = false;
  self->request(s.directory, ask_timeout, actors::describe_atom::value)
      .receive(
          [&](uint64_t live, uint64_t passivated) {
            answered = true;
            scrape.gauge("troupe_workflows_live", "Workflows with an actor in the scheduler's memory.", as_double(live));
            scrape.gauge("troupe_workflows_passivated",
                         "Open workflows without an actor, to be woken from their histories (beyond workflow_cache).",
                         as_double(passivated));
          },
          [](const caf::error&) {});
  if (!answered) no_answer("the directory");
}

/// Counts of workers by health and by status. Every value is written, 0 included, so that a
/// series does not vanish while no worker has it.
void count_workers(Scrape& scrape, const std::vector<actors::WorkerView>& views) {
  std::map<std::string, uint64_t> health;
  for (auto state : {actors::HealthState::NEW, actors::HealthState::HEALTHY, actors::HealthState::UNHEALTHY,
                     actors::HealthState::MUST_DIE, actors::HealthState::STOPPING}) {
    health[std::string(actors::HealthMachineTraits::name(state))] = 0;
  }
  std::map<std::string, uint64_t> status;
  for (const char* name : {"STARTED", "NOT_RESPONDING", "STOPPING", "STOPPED", "DRAINING", "DRAINED", "QUARANTINED"}) {
    status[name] = 0;
  }
  for (const auto& view : views) {
    if (view.live && !view.health.empty()) ++health[view.health];
    ++status[view.status];
  }
  for (const auto& [name, count] : health) {
    scrape.gauge("troupe_workers_by_health", "Workers with a live instance, by Bistro's health of it.",
                 as_double(count), {{"health", name}});
  }
  for (const auto& [name, count] : status) {
    scrape.gauge("troupe_workers_by_status", "Workers that ever registered, by their status (as troupe workers shows).",
                 as_double(count), {{"status", name}});
  }
}

void workers(Scrape& scrape, const NodeMetricsSources& s) {
  caf::scoped_actor self{*s.system};
  bool answered = false;
  self->request(s.dispatcher, ask_timeout, actors::view_atom::value, std::string())
      .receive(
          [&](std::vector<actors::WorkerView>& views) {
            answered = true;
            count_workers(scrape, views);
          },
          [](const caf::error&) {});
  if (!answered) no_answer("the dispatcher");
}

void store(Scrape& scrape, const storage::RocksHistoryStore& store) {
  const auto& meters = store.commit_meters();
  scrape.histogram("troupe_history_commit_batch_size", "Operations (appends, closes...) per group commit.",
                   meters.batch_operations.snapshot());
  scrape.histogram("troupe_history_commit_sync_seconds",
                   "How long each group commit's write took, its sync included (only the write with sync = false).",
                   meters.write_us.snapshot(), us_per_second);
  const auto stats = store.stats();
  scrape.counter("troupe_history_events_total", "History events appended.", as_double(stats.events));
  scrape.counter("troupe_history_written_bytes_total", "Bytes of keys and values written to the history store.",
                 as_double(stats.bytes_written));
  const auto sizes = store.sizes();
  scrape.gauge("troupe_history_sst_bytes", "Bytes of the history store's table files on disk.",
               as_double(sizes.sst_bytes));
  scrape.gauge("troupe_history_memtable_bytes", "Bytes of the history store's memtables (not yet in table files).",
               as_double(sizes.memtable_bytes));
}

void rpc(Scrape& scrape, const RpcMeters& m) {
  scrape.gauge("troupe_rpc_connections", "Connections open to the scheduler's gateway (clients and workers).",
               static_cast<double>(m.open.value()));
  scrape.counter("troupe_rpc_connections_accepted_total", "Connections the scheduler's gateway accepted.",
                 as_double(m.accepted.value()));
  for (size_t i = 0; i < connection_closed_names.size(); ++i) {
    scrape.counter("troupe_rpc_connections_closed_total",
                   "Connections the scheduler closed itself, by why (the [connections] limits, a refused credential, a failed TLS handshake).",
                   as_double(m.closed[i].value()), {{"reason", std::string(connection_closed_names[i])}});
  }
}

// --- worker -----------------------------------------------------------------------------------

void worker(Scrape& scrape, const NodeConfig& node, const actors::WorkerMeters& m) {
  scrape.gauge("troupe_worker_running_invocations", "Invocations this worker runs now (tasks and env actions).",
               static_cast<double>(m.running_invocations.value()));
  for (const auto& [list, slots] : node.task_lists) {
    scrape.gauge("troupe_worker_slots", "This worker's slots per task list (task_lists in the config).", slots,
                 {{"task_list", list}});
  }
  scrape.gauge("troupe_worker_open_sessions", "Sessions open on this worker now.",
               static_cast<double>(m.open_sessions.value()));
  scrape.gauge("troupe_worker_max_sessions", "Sessions this worker may hold at once (max_concurrent_sessions).",
               node.max_concurrent_sessions);
}

}  // namespace

std::shared_ptr<metrics::Registry> node_registry(const NodeMetricsSources& sources) {
  // Captured by value: the registry holds its own references to what it reads.
  auto registry = std::make_shared<Registry>();
  registry->add([node = sources.node](Scrape& s) { node_info(s, node); });
  if (auto m = sources.scheduler) {
    registry->add([m](Scrape& s) { workflows(s, *m); });
    registry->add([m](Scrape& s) { tasks(s, *m); });
  }
  if (sources.system != nullptr && sources.directory) {
    registry->add([sources](Scrape& s) { directory(s, sources); });
  }
  if (sources.system != nullptr && sources.dispatcher) {
    registry->add([sources](Scrape& s) { workers(s, sources); });
  }
  if (auto roster = sources.roster) {
    registry->add([roster](Scrape& s) { count_actors(s, *roster); });
    if (sources.system != nullptr) {
      // The probe's answers are in within the time any collector may wait for an actor.
      MailboxProbeOptions probe;
      probe.deadline = ask_timeout - std::chrono::seconds(1);
      probe.hand_over = std::chrono::milliseconds(500);
      registry->add([roster, system = sources.system, probe](Scrape& s) {
        largest_mailboxes(s, *system, *roster, probe);
      });
    }
  }
  if (auto st = sources.store) registry->add([st](Scrape& s) { store(s, *st); });
  if (auto m = sources.rpc) registry->add([m](Scrape& s) { rpc(s, *m); });
  if (auto m = sources.worker) registry->add([m, node = sources.node](Scrape& s) { worker(s, node, *m); });
  return registry;
}

}  // namespace troupe::runtime
