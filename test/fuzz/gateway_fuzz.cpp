// Fuzz target: the scheduler's gateway, fed the bytes of one connection. Everything a client or
// a worker sends arrives this way, before and after authentication: the input is the byte
// stream of a Cap'n Proto RPC connection (framed messages: Bootstrap, Call, Finish, ...), sent
// to a gateway that runtime::serve_scheduler serves, as a node does: its listener on
// 127.0.0.1 with the connection limits, GuardedStream and BufferedStream, capnp's
// TwoPartyVatNetwork and RpcSystem, then the Gateway, ClientService, AdminService,
// WorkerSession and TaskReporter servers.
//
// Why this shape: the servers are only reachable through capnp's RPC layer, and their calls go
// on to the scheduler's actors (the directory starts workflows, the dispatcher registers
// workers), which answer through the CAF<->KJ bridge. So behind the gateway is a real scheduler
// composed as runtime/node.cpp composes one, with two changes for repeatability: the actors run
// on CAF's test coordinator (no threads of their own, no timers firing) and the history is a
// MemoryHistoryStore. A loopback socket rather than an in-memory pipe: then the whole path a
// peer's bytes take is production's, accept included, and nothing in it had to change for the
// fuzzer. Everything runs on a real RpcThread, as in a node; the fuzzer's thread only posts the
// steps of a run (open, a message and the turns it takes, end of input, teardown) and waits for
// each, so work that actors post to the RPC thread (a worker link's calls) runs between steps,
// in order, as it would between turns of the node's loop. A turn lets the RPC side run what is
// ready, then the actors; a message's turns go on until one leaves the actors nothing to do.
// Each input gets a fresh scheduler, so an input that crashes does so again on its own.
//
// The cluster has a token (gateway_fuzz.hpp), which the seeds present: calls without it are
// refused, those with it reach every service. Seeds: test/fuzz/make_seeds.cpp. Not repeatable:
// a purge runs on the retention thread, and workflow ids a client leaves out are random.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include <sys/socket.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <kj/async-io.h>

#include "actors/matching/wait_board.hpp"
#include "actors/system/actor_roster.hpp"
#include "actors/system/directory.hpp"
#include "actors/system/dispatcher.hpp"
#include "actors/system/history_writer.hpp"
#include "actors/worker/fence.hpp"
#include "actors/worker/worker_book.hpp"
#include "runtime/config/cluster_config.hpp"
#include "runtime/retention.hpp"
#include "runtime/rpc_thread.hpp"
#include "runtime/scheduler_rpc.hpp"
#include "schema/definition_cache.hpp"
#include "storage/memory_history_store.hpp"
#include "test/fuzz/gateway_fuzz.hpp"

namespace {

using namespace troupe;

/// Turns after which a run is cut short: a conversation of a few hundred calls settles in far
/// fewer, and an input must not run for long.
constexpr int max_turns = 5000;

/// Microseconds since the epoch at the test clock's start, as the actor tests have it.
constexpr int64_t epoch_us = 1'700'000'000'000'000;

caf::actor_system_config& testing_config(caf::actor_system_config& config) {
  config.set("scheduler.policy", caf::atom("testing"));
  config.set("logger.file-verbosity", caf::atom("quiet"));
  config.set("logger.console-verbosity", caf::atom("quiet"));
  return config;
}

/// A scheduler as runtime/node.cpp composes one, on the test coordinator and a memory store,
/// serving its gateway on 127.0.0.1 (a port of its own). Built, run and destroyed on the RPC
/// thread. Each input gets an actor system of its own too: the test clock keeps the timers of
/// ended actors (time never moves here), and one system for the whole process slowed every
/// input down as they piled up.
struct Scheduler {
  caf::actor_system_config config;
  caf::actor_system system;
  caf::scheduler::test_coordinator& coordinator;
  std::shared_ptr<storage::MemoryHistoryStore> store = std::make_shared<storage::MemoryHistoryStore>();
  std::shared_ptr<runtime::SchedulerServices> services = std::make_shared<runtime::SchedulerServices>();
  std::function<void()> stop_serving;
  uint16_t port = 0;

  Scheduler(runtime::RpcThread& rpc, kj::AsyncIoContext& io, kj::TaskSet& tasks)
      : system(testing_config(config)),
        coordinator(dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler())) {
    const auto start = coordinator.clock().now();
    auto now_us = [clock = &coordinator.clock(), start] {
      return epoch_us + std::chrono::duration_cast<std::chrono::microseconds>(clock->now() - start).count();
    };
    const runtime::ClusterConfig defaults;
    auto fences = std::make_shared<actors::FenceCounter>(1);
    services->system = &system;
    services->rpc = &rpc;
    services->store = store;
    services->cluster_token = std::string(fuzz::cluster_token);
    services->task_token_key = std::string(fuzz::task_token_key);
    services->waits = std::make_shared<actors::WaitBoard>();
    services->roster = std::make_shared<actors::ActorRoster>();
    services->rpc_meters = std::make_shared<runtime::RpcMeters>();
    services->connection_limits = defaults.connections;
    services->limits = defaults.limits;

    actors::DispatcherOptions dispatch;
    dispatch.fences = fences;
    dispatch.book = std::make_shared<actors::WorkerBook>(store, now_us, nullptr);
    dispatch.now_us = now_us;
    dispatch.waits = services->waits;
    dispatch.roster = services->roster;
    services->dispatcher = actors::spawn_dispatcher(system, dispatch);

    actors::Wiring wiring;
    wiring.now_us = now_us;
    wiring.definitions = std::make_shared<DefinitionCache>();
    wiring.writer = actors::HistoryWriter(store);
    wiring.executor = caf::actor_cast<actors::executor_actor>(services->dispatcher);
    wiring.sessions = caf::actor_cast<actors::session_host>(services->dispatcher);
    wiring.fences = fences;
    wiring.roster = services->roster;
    wiring.limits = defaults.limits;
    services->directory = actors::spawn_directory(system, store, wiring);

    runtime::RetentionOptions retention;
    retention.now_us = now_us;
    services->retention = std::make_shared<runtime::Retention>(store, std::move(retention));
    auto served = runtime::serve_scheduler(io, tasks, services, runtime::Address{"127.0.0.1", 0}, &port);
    if (!served) {
      std::fprintf(stderr, "gateway fuzz: cannot serve: %s\n", served.error().message.c_str());
      std::abort();
    }
    stop_serving = std::move(*served);
    // As a node does once it listens: nothing to revive in a new store, which closes the
    // dispatcher's recovery window.
    caf::anon_send(services->dispatcher, actors::recovered_atom::value, uint64_t{0});
    coordinator.run();
  }

  ~Scheduler() {
    stop_serving();
    {
      caf::scoped_actor self(system, true);
      self->send_exit(services->client_bridge, caf::exit_reason::user_shutdown);
      self->send_exit(services->directory, caf::exit_reason::user_shutdown);
      self->send_exit(services->dispatcher, caf::exit_reason::user_shutdown);
    }
    coordinator.run();
    services->retention.reset();  // joins its thread, after any purge in progress
  }
};

/// One input's connection and the scheduler behind it. RPC thread only.
struct Run {
  std::unique_ptr<Scheduler> scheduler;
  kj::Own<kj::AsyncIoStream> client;  ///< the peer's end of the connection
  kj::Array<kj::byte> input;
  kj::byte sink[4096];
  kj::Promise<void> writing = nullptr;
  bool written = true;        ///< the last write is over: the gateway read all of it
  bool write_failed = false;  ///< the gateway stopped reading (it dropped the connection)
  kj::Promise<void> reading = nullptr;

  /// Reads and drops what the gateway answers, so that its writes never wait for the peer.
  kj::Promise<void> discard_answers() {
    return client->tryRead(sink, 1, sizeof sink).then([this](size_t n) -> kj::Promise<void> {
      if (n == 0) return kj::READY_NOW;
      return discard_answers();
    });
  }
};

/// The RPC thread the gateway lives on, for the life of the process.
struct Host {
  std::unique_ptr<runtime::RpcThread> rpc;
  kj::AsyncIoContext* io = nullptr;
  kj::TaskSet* tasks = nullptr;
  std::unique_ptr<Run> run;  ///< the input being run, if any
};

Host& host() {
  static Host* host = [] {
    auto* h = new Host;  // lives until exit: the RPC thread must not stop under a run
    auto started = runtime::RpcThread::start(nullptr, [h](runtime::RpcThread&, kj::AsyncIoContext& io,
                                                          kj::TaskSet& tasks) -> Result<std::function<void()>> {
      h->io = &io;
      h->tasks = &tasks;
      return std::function<void()>([h] { h->run.reset(); });
    });
    if (!started) {
      std::fprintf(stderr, "gateway fuzz: cannot start the RPC thread: %s\n", started.error().message.c_str());
      std::abort();
    }
    h->rpc = std::move(*started);
    return h;
  }();
  return *host;
}

/// Runs `step` on the RPC thread and waits for it; its result. What it throws is reported as a
/// crash: nothing in a step should throw.
template <class Step>
auto on_rpc_thread(Host& h, Step step) {
  std::promise<decltype(step())> done;
  auto result = done.get_future();
  h.rpc->post([&done, &step] {
    KJ_IF_MAYBE(exception, kj::runCatchingExceptions([&] { done.set_value(step()); })) {
      std::fprintf(stderr, "gateway fuzz: a step threw: %s\n", exception->getDescription().cStr());
      std::abort();
    }
  });
  return result.get();
}

/// Turns until the actors are idle after the RPC side ran what was ready, or the run's turns
/// are spent.
void settle(Host& h, int& turns) {
  while (turns < max_turns) {
    ++turns;
    const size_t handled = on_rpc_thread(h, [&h] {
      h.io->waitScope.poll();
      return h.run->scheduler->coordinator.run();
    });
    if (handled == 0) return;
  }
}

uint32_t little_endian_32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

/// Where the Cap'n Proto message starting at `at` ends, read from its stream framing (segment
/// count less one, each segment's size in words, padding to a word, the segments); `size` if
/// the framing does not fit in what is left (capnp then has the rest to make sense of).
size_t message_end(const uint8_t* data, size_t size, size_t at) {
  if (size - at < 4) return size;
  const uint64_t segments = uint64_t{little_endian_32(data + at)} + 1;
  const uint64_t header = (4 + 4 * segments + 7) / 8 * 8;
  if (header > size - at) return size;
  uint64_t words = 0;
  for (uint64_t i = 0; i < segments; ++i) words += little_endian_32(data + at + 4 + 4 * i);
  if (words > (size - at - header) / 8) return size;
  return at + static_cast<size_t>(header + words * 8);
}

/// With TROUPE_FUZZ_VERBOSE set, says how far an input got: whether a new seed reaches past the
/// gateway shows here. RPC thread.
void report_run(const Run& run, int turns, size_t messages) {
  static const bool verbose = std::getenv("TROUPE_FUZZ_VERBOSE") != nullptr;
  if (!verbose) return;
  auto& store = *run.scheduler->store;
  std::fprintf(stderr, "gateway fuzz: %zu messages, %d turns\n", messages, turns);
  if (auto page = store.list_workflows(storage::ListQuery{})) {
    for (const auto& entry : page->entries) {
      auto events = store.read(entry.id, 1, 100000);
      std::string tasks;
      if (auto status = runtime::describe_workflow(store, entry.id, nullptr)) {
        for (const auto& task : status->tasks) tasks += " " + task.name + ":" + task.state;
      }
      std::fprintf(stderr, "  workflow %s: %s, %zu events;%s\n", entry.id.c_str(),
                   entry.record.status == storage::WorkflowStatus::CLOSED ? entry.record.final_state.c_str()
                                                                           : entry.record.live_state.c_str(),
                   events ? events->size() : size_t{0}, tasks.c_str());
    }
  }
  if (auto workers = store.list_workers()) {
    for (const auto& worker : *workers) {
      std::fprintf(stderr, "  worker %s: %s %s\n", worker.shard_id.c_str(), worker.record.status.c_str(),
                   worker.record.standing.c_str());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Host& h = host();
  on_rpc_thread(h, [&h] {
    h.run = std::make_unique<Run>();
    Run& run = *h.run;
    auto& io = *h.io;
    run.scheduler = std::make_unique<Scheduler>(*h.rpc, io, *h.tasks);
    auto address = io.provider->getNetwork().parseAddress("127.0.0.1", run.scheduler->port).wait(io.waitScope);
    run.client = address->connect().wait(io.waitScope);
    const struct linger reset{1, 0};  // closing resets the connection
    run.client->setsockopt(SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    run.reading = run.discard_answers().eagerlyEvaluate([](kj::Exception&&) {});
    return true;
  });
  // One message at a time, each once the scheduler has done what the ones before asked, as a
  // peer that waits for its answers sends: a worker's report then finds the task it was given.
  int turns = 0;
  size_t messages = 0;
  for (size_t at = 0; at < size; ++messages) {
    const size_t end = message_end(data, size, at);
    const bool sent = on_rpc_thread(h, [&h, piece = kj::heapArray<kj::byte>(data + at, end - at)]() mutable {
      Run& run = *h.run;
      if (run.write_failed || !run.written) return false;
      run.written = false;
      run.input = kj::mv(piece);
      // evalNow: a socket the gateway closed refuses the write at once (EPIPE).
      run.writing = kj::evalNow([&run] { return run.client->write(run.input.begin(), run.input.size()); })
                        .then([&run] { run.written = true; }, [&run](kj::Exception&&) { run.write_failed = true; })
                        .eagerlyEvaluate(nullptr);
      return true;
    });
    if (!sent) break;
    settle(h, turns);
    at = end;
  }
  // Then the peer goes, resetting the connection (no TIME_WAIT left behind: a million runs must
  // not use up the ports), and what it leaves behind (calls in flight, a registered worker's
  // link) is cleaned up.
  on_rpc_thread(h, [&h, turns, messages] {
    Run& run = *h.run;
    report_run(run, turns, messages);
    run.writing = nullptr;  // a write the gateway stopped reading is abandoned
    run.reading = nullptr;
    run.client = nullptr;
    return true;
  });
  settle(h, turns);
  on_rpc_thread(h, [&h] {
    Run& run = *h.run;
    h.io->waitScope.poll();  // the gateway's side of the connection ends
    std::weak_ptr<runtime::SchedulerServices> services = run.scheduler->services;
    run.scheduler.reset();
    h.io->waitScope.poll();
    h.run.reset();
    // Found without LeakSanitizer too: what the gateway holds goes with it and its connections,
    // whatever a peer passed it (a reference cycle through a capability keeps it).
    if (!services.expired()) {
      std::fprintf(stderr, "gateway fuzz: the scheduler's services outlive its gateway and connections\n");
      std::abort();
    }
    return true;
  });
  return 0;
}
