// run_node: builds, runs and stops a node's components.
#include "runtime/node.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/executor/local_executor.hpp"
#include "actors/system/directory.hpp"
#include "actors/invocation_id.hpp"
#include "actors/matching/wait_board.hpp"
#include "actors/meters.hpp"
#include "actors/system/actor_roster.hpp"
#include "actors/system/dispatcher.hpp"
#include "actors/system/history_writer.hpp"
#include "actors/worker/worker_book.hpp"
#include "runtime/auth/task_token.hpp"
#include "runtime/identity/worker_id.hpp"
#include "runtime/incarnation.hpp"
#include "runtime/metrics/node_metrics.hpp"
#include "runtime/metrics/server.hpp"
#include "runtime/net/tls.hpp"
#include "runtime/process/process_supervisor.hpp"
#include "runtime/retention.hpp"
#include "runtime/rpc_thread.hpp"
#include "runtime/scheduler_rpc.hpp"
#include "runtime/shell_runner.hpp"
#include "runtime/worker_agent.hpp"
#include "storage/rocks_history_store.hpp"
#include "schema/duration.hpp"

namespace troupe::runtime {
namespace {

/// The exit code of a scheduler whose history store failed a write (a full disk).
constexpr int exit_store_failed = 4;

/// Why the RPC side of `node` could not start, for its user: a listen address in use says
/// what to do about it rather than what the socket call said.
std::string rpc_start_failure(const NodeConfig& node, const Error& error) {
  if (node.scheduler && error.message.find(std::strerror(EADDRINUSE)) != std::string::npos) {
    return "cannot listen on " + node.listen.to_string() +
           ": address already in use; another troupe may be running there; choose another port with "
           "--listen (troupe dev) or the node's listen address in the config";
  }
  return error.message;
}

/// Why the node stops: a signal, a worker that must die, or a failed history store.
class StopSignal {
 public:
  void stop(int code, std::string why) {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    code_ = code;
    why_ = std::move(why);
    cv_.notify_all();
  }
  int wait(std::string& why) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return stopped_; });
    why = why_;
    return code_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;
  int code_ = 0;
  std::string why_;
};

/// What a signal does on a node with the worker role: the first starts the worker's graceful
/// shutdown, the second ends its grace; only a third (or a signal before the worker is up, or on
/// a node without the role) stops the node at once.
class GracefulShutdown {
 public:
  void arm(std::function<void(const std::string&)> shut_down) {
    std::lock_guard lock(mutex_);
    shut_down_ = std::move(shut_down);
  }
  /// False if the signal should stop the node at once.
  bool signalled(const std::string& signal) {
    std::lock_guard lock(mutex_);
    if (!shut_down_ || ++signals_ > 2) return false;
    shut_down_(signal);
    return true;
  }

 private:
  std::mutex mutex_;
  std::function<void(const std::string&)> shut_down_;
  int signals_ = 0;
};

/// Raises the soft limit on open files so that max_connections fit beside what the node opens
/// itself (the history store's files, task logs); warns when the hard limit is too low: then
/// accept() fails (and backs off) before the connection limit is reached.
void fit_descriptor_limit(const ConnectionLimits& limits, const NodeLog& log) {
  constexpr rlim_t own_files = 1024;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t wanted = limits.max_connections + own_files;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
    log.warn("the open-files limit is below what [connections] max_connections needs",
             {{"limit", static_cast<uint64_t>(limit.rlim_cur)},
              {"max_connections", limits.max_connections},
              {"needed", static_cast<uint64_t>(wanted)}});
  }
}

/// The node's actor threads: as configured, else one per core but one.
uint32_t actor_threads(const NodeConfig& node) {
  if (node.actor_threads > 0) return node.actor_threads;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 1 ? cores - 1 : 1;
}

}  // namespace

int run_node(const ClusterConfig& cluster, const NodeConfig& node) {
  // Every thread started below inherits this mask, so SIGINT and SIGTERM reach only sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto log = std::make_shared<NodeLog>(node.name, node.log_level, node.log_format);
  auto stop = std::make_shared<StopSignal>();
  auto graceful = std::make_shared<GracefulShutdown>();
  std::thread signal_thread([signals, stop, graceful] {
    for (;;) {
      int signal = 0;
      sigwait(&signals, &signal);
      const std::string name = signal == SIGINT ? "SIGINT" : "SIGTERM";
      if (graceful->signalled(name)) continue;
      stop->stop(0, name);
      return;
    }
  });
  signal_thread.detach();

  caf::actor_system_config caf_config;
  caf_config.set("logger.file-verbosity", caf::atom("quiet"));
  // One shared queue whose threads sleep until work arrives: CAF's default (work stealing,
  // polling with short sleeps) spends a core on spinning and adds wake-up latency on small
  // machines; measured with `troupe bench chain` on 2 cores it halves a task's latency at low
  // load and cuts CPU per task by a sixth at C=64.
  caf_config.set("scheduler.policy", caf::atom("sharing"));
  caf_config.set("scheduler.max-threads", static_cast<size_t>(actor_threads(node)));
  // Declared before the actor system so that it is destroyed after it: actors that outlive the
  // node's stop (a worker actor ending as the system shuts down) still hold worker links that
  // use the RPC thread, stopped by then (posts are dropped) but not freed.
  std::unique_ptr<RpcThread> rpc_thread;
  caf::actor_system system(caf_config);

  actors::HealthTimeouts timeouts;
  timeouts.heartbeat_interval = cluster.heartbeat_interval;
  timeouts.unhealthy_after = cluster.unhealthy_after;
  timeouts.must_die_after = cluster.must_die_after;
  timeouts.lease = cluster.worker_lease;

  std::string cluster_token;
  if (cluster.token_file) {
    auto read = read_token_file(*cluster.token_file);
    if (!read) {
      log->error("cannot start", {{"error", read.error().message}});
      return 3;
    }
    cluster_token = std::move(*read);
  }

  // What a scheduler presents in its TLS handshakes, read before anything starts.
  std::shared_ptr<TlsEndpoint> scheduler_tls;
  if (node.scheduler && !cluster.plaintext) {
    auto tls = TlsEndpoint::server({cluster.tls_ca, node.tls_certificate, node.tls_key},
                                   cluster.require_client_certificates);
    if (!tls) {
      log->error("cannot start", {{"error", tls.error().message}});
      return 3;
    }
    scheduler_tls = std::move(*tls);
  }
  // And what a worker trusts (and presents, with a certificate of its own) connecting to it.
  std::shared_ptr<TlsEndpoint> worker_tls;
  if (node.worker && !cluster.plaintext) {
    auto tls = TlsEndpoint::client({cluster.tls_ca, node.tls_certificate, node.tls_key});
    if (!tls) {
      log->error("cannot start", {{"error", tls.error().message}});
      return 3;
    }
    worker_tls = std::move(*tls);
  }

  // Counted only on a node that serves its metrics: elsewhere the actors skip a null pointer.
  const bool metered = !node.metrics.empty();
  std::shared_ptr<storage::RocksHistoryStore> store;
  auto scheduler = std::make_shared<SchedulerServices>();
  actors::Wiring wiring;
  if (node.scheduler) {
    storage::StoreOptions store_options;
    store_options.sync = node.sync;
    // A failed write fail-stops the store, and the node with it, saying why and what to do.
    store_options.on_fail_stop = [stop](const Error& error) {
      stop->stop(exit_store_failed, "the history store failed: " + error.message);
    };
    auto opened = storage::RocksHistoryStore::open(node.data_dir + "/history", store_options);
    if (!opened) {
      log->error("cannot start", {{"error", opened.error().message}});
      return 3;
    }
    store = std::move(*opened);
    // Before anything is served: every fence this incarnation sends outranks the last one's.
    auto incarnation = next_incarnation(node.data_dir);
    if (!incarnation) {
      log->error("cannot start", {{"error", incarnation.error().message}});
      return 3;
    }
    auto fences = std::make_shared<actors::FenceCounter>(*incarnation);
    scheduler->cluster_token = cluster_token;
    auto key = read_or_create_key_file(node.data_dir + "/task-token.key");
    if (!key) {
      log->error("cannot start", {{"error", key.error().message}});
      return 3;
    }
    scheduler->task_token_key = std::move(*key);
    if (!node.definitions_dir.empty()) {
      scheduler->definitions = std::make_shared<DefinitionRegistry>(node.definitions_dir);
    }
    wiring.now_us = wall_clock_us;
    actors::DispatcherOptions dispatch;
    dispatch.timeouts = timeouts;
    dispatch.book = std::make_shared<actors::WorkerBook>(store, wiring.now_us, log);
    dispatch.quarantine = {cluster.quarantine_failures, cluster.quarantine_backoff, cluster.quarantine_max_backoff};
    dispatch.kill_grace = cluster.kill_grace;
    dispatch.fences = fences;
    // A point lookup in the workflows index, made when a worker says what it runs.
    dispatch.workflow_closed = [store](const std::string& invocation_id) {
      auto parts = actors::parse_invocation_id(invocation_id);
      if (!parts) return false;
      auto record = store->find_workflow(parts->workflow_id);
      return record && *record && (*record)->status == storage::WorkflowStatus::CLOSED;
    };
    dispatch.replace_unhealthy = cluster.replace_unhealthy_workers;
    dispatch.recovery_window = cluster.recovery_window;
    for (const auto& [list, limits] : cluster.task_lists) {
      dispatch.task_lists[list] = actors::MatchingLimits{limits.rate, limits.burst};
    }
    for (const auto& n : cluster.nodes) {
      if (n.worker && n.rate) dispatch.worker_rates[n.name] = *n.rate;
    }
    scheduler->waits = std::make_shared<actors::WaitBoard>();
    dispatch.waits = scheduler->waits;
    scheduler->roster = std::make_shared<actors::ActorRoster>();
    dispatch.roster = scheduler->roster;
    wiring.roster = scheduler->roster;
    wiring.log = log;
    dispatch.log = log;
    if (metered) {
      wiring.meters = std::make_shared<actors::SchedulerMeters>();
      dispatch.meters = wiring.meters;
      scheduler->rpc_meters = std::make_shared<RpcMeters>();
    }
    scheduler->system = &system;
    scheduler->log = log;
    scheduler->connection_limits = cluster.connections;
    scheduler->tls = std::move(scheduler_tls);
    fit_descriptor_limit(cluster.connections, *log);
    scheduler->store = store;
    scheduler->dispatcher = actors::spawn_dispatcher(system, dispatch);
    wiring.definitions = std::make_shared<DefinitionCache>();
    wiring.writer = actors::HistoryWriter(store);
    wiring.executor = caf::actor_cast<actors::executor_actor>(scheduler->dispatcher);
    wiring.sessions = caf::actor_cast<actors::session_host>(scheduler->dispatcher);
    wiring.fences = fences;
    wiring.kill_grace = cluster.kill_grace;
    wiring.recovery_window = cluster.recovery_window;
    wiring.workflow_cache = node.workflow_cache;
    wiring.limits = cluster.limits;
    scheduler->limits = cluster.limits;
    scheduler->directory = actors::spawn_directory(system, store, wiring);
    RetentionOptions retention;
    retention.retention = cluster.retention;
    retention.now_us = wiring.now_us;
    retention.on_purged = [log, retention_period = format_duration(*cluster.retention)](uint64_t purged, int64_t) {
      log->info("purged closed workflows past the retention", {{"workflows", purged}, {"retention", retention_period}});
    };
    scheduler->retention = std::make_shared<Retention>(store, std::move(retention));
  }

  std::shared_ptr<ProcessSupervisor> processes;
  auto agent = std::make_shared<WorkerAgentSetup>();
  actors::executor_actor local_executor;
  if (node.worker) {
    // The worker's identity, its records of running tasks and their logs live in log_dir, a
    // directory of this node that outlives it (log_dir defaults to data_dir/NAME). The identity
    // comes first: a damaged id file stops the node before it touches anything, rather than
    // give it a new identity.
    auto worker_id = load_or_create_worker_id(node.log_dir);
    if (!worker_id) {
      log->error("cannot start", {{"error", worker_id.error().message}});
      return 3;
    }
    log->info("worker identity", {{"worker_id", *worker_id}, {"log_dir", node.log_dir}});
    // Starting kills what a previous instance left running, before this one registers and is
    // given tasks.
    SupervisorOptions supervisor_options;
    supervisor_options.record_dir = node.log_dir + "/.running";
    auto supervisor = ProcessSupervisor::start(supervisor_options);
    if (!supervisor) {
      log->error("cannot start", {{"error", supervisor.error().message}});
      return 3;
    }
    processes = std::move(*supervisor);
    if (const size_t killed = processes->leftovers_killed(); killed > 0) {
      log->warn("killed processes that tasks of a previous instance left running", {{"processes", killed}});
    }
    actors::LocalExecutorOptions executor_options;
    executor_options.name = node.name;
    executor_options.shell = make_shell_runner(processes, ShellRunnerOptions{node.log_dir, node.log_cap_bytes});
    std::shared_ptr<meters::Gauge> running;
    if (metered) {
      agent->meters = std::make_shared<actors::WorkerMeters>();
      // An aliasing pointer: the executor sets the gauge, the agent's meters own it.
      running = std::shared_ptr<meters::Gauge>(agent->meters, &agent->meters->running_invocations);
    }
    auto handlers = std::make_shared<const actors::HandlerRegistry>(actors::HandlerRegistry::with_builtins());
    local_executor = actors::spawn_local_executor(system, handlers, executor_options, std::move(running));
    agent->system = &system;
    agent->executor = local_executor;
    agent->node = node;
    agent->cluster_token = cluster_token;
    agent->tls = worker_tls;
    agent->worker_id = *worker_id;
    if (agent->node.scheduler_address.empty()) agent->node.scheduler_address = node.listen;
    agent->exit = [stop](const std::string& reason) { stop->stop(1, reason); };
    agent->stopped = [stop](const std::string& how) { stop->stop(0, how); };
    agent->shutdown_grace = cluster.shutdown_grace;
    agent->log = log;
    agent->may_stop_on_request = !node.scheduler;
    // The keepers enforce the lease on their own, even while this process is frozen.
    agent->extend_lease = [weak = std::weak_ptr<ProcessSupervisor>(processes)](auto deadline) {
      if (auto supervisor = weak.lock()) supervisor->extend_lease(deadline);
    };
  }

  // Started before the RPC side, so that a metrics address in use stops the node before it
  // serves anything. Scrapes may come at once: the actors and the store they read are up.
  std::unique_ptr<metrics::Server> metrics_server;
  if (metered) {
    NodeMetricsSources sources;
    sources.node = node;
    if (node.scheduler) {
      sources.system = &system;
      sources.directory = scheduler->directory;
      sources.dispatcher = scheduler->dispatcher;
      sources.roster = scheduler->roster;
      sources.scheduler = wiring.meters;
      sources.store = store;
      sources.rpc = scheduler->rpc_meters;
    }
    sources.worker = agent->meters;
    auto served = metrics::Server::start(node.metrics, node_registry(sources));
    if (!served) {
      log->error("cannot start", {{"error", served.error().message}});
      return 3;
    }
    metrics_server = std::move(*served);
    log->lifecycle("serving metrics", {{"address", metrics_server->bound().to_string()}});
  }
  uint16_t bound_port = 0;
  auto rpc = RpcThread::start(log, [&](RpcThread& self, kj::AsyncIoContext& io,
                                                              kj::TaskSet& tasks) -> Result<std::function<void()>> {
    // Before anything is served: a worker may register (and its link post) at once.
    scheduler->rpc = &self;
    agent->rpc = &self;
    std::function<void()> stop_scheduler, stop_worker;
    if (node.scheduler) {
      auto served = serve_scheduler(io, tasks, scheduler, node.listen, &bound_port);
      if (!served) return served.error();
      stop_scheduler = std::move(*served);
    }
    if (node.worker) {
      auto started = start_worker_agent(io, tasks, agent);
      if (!started) return started.error();
      stop_worker = std::move(started->stop);
      graceful->arm(std::move(started->shut_down));
    }
    return std::function<void()>([stop_scheduler, stop_worker] {
      if (stop_worker) stop_worker();
      if (stop_scheduler) stop_scheduler();
    });
  });
  if (!rpc) {
    log->error("cannot start", {{"error", rpc_start_failure(node, rpc.error())}});
    return 3;
  }
  rpc_thread = std::move(*rpc);

  if (node.scheduler) {
    log->lifecycle("scheduler listening", {{"address", Address{node.listen.host, bound_port}.to_string()}});
    // The scheduler's failover: every open workflow comes back from its history, page by page.
    const int64_t recovery_started_us = wall_clock_us();
    caf::scoped_actor self(system);
    self->request(scheduler->directory, caf::infinite, actors::revive_atom::value)
        .receive(
            [&](uint64_t revived) {
              if (revived > 0) {
                log->info("resumed open workflows",
                          {{"workflows", revived}, {"duration_ms", (wall_clock_us() - recovery_started_us) / 1000}});
              }
              self->send(scheduler->dispatcher, actors::recovered_atom::value, revived);
            },
            [&](const caf::error& e) { log->error("recovery failed", {{"error", actors::from_caf(e).message}}); });
  }
  log->lifecycle("ready", {{"roles", node.scheduler && node.worker ? "scheduler,worker" : node.scheduler ? "scheduler" : "worker"}});

  std::string why;
  const int code = stop->wait(why);
  if (code == 0) {
    log->lifecycle("stopping", {{"reason", why}, {"exit_code", code}});
  } else {
    log->error("stopping", {{"reason", why}, {"exit_code", code}});
  }
  // First: a scrape asks the actors stopped below.
  metrics_server.reset();
  rpc_thread->stop();
  {
    caf::scoped_actor self(system, true);
    if (node.scheduler) {
      self->send_exit(scheduler->directory, caf::exit_reason::user_shutdown);
      self->send_exit(scheduler->dispatcher, caf::exit_reason::user_shutdown);
    }
    if (node.worker) self->send_exit(local_executor, caf::exit_reason::user_shutdown);
  }
  processes.reset();
  // Before the store goes: a purge in progress finishes, queued requests are answered.
  scheduler->retention.reset();
  log->flush();  // what the shutdown said, even if an actor's state still holds the log
  return code;
}

}  // namespace troupe::runtime
