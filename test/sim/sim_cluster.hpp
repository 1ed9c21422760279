// The simulated cluster of one schedule: the scheduler's incarnations over one history, the
// worker processes of each shard (a supervisor starts a new one when one dies), the network
// between them, and a client that submits workflows and retries until each is acknowledged.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "test/sim/sim_ledger.hpp"
#include "test/sim/sim_network.hpp"
#include "test/sim/sim_scheduler.hpp"
#include "test/sim/sim_worker.hpp"
#include "test/sim/sim_world.hpp"

namespace troupe::sim {

struct ClusterOptions {
  NetworkProfile network;
  SchedulerOptions scheduler;
  /// The worker shards and the slots of each of their task lists.
  std::map<std::string, std::map<std::string, uint32_t>> workers;
  /// How long a supervisor waits before starting a worker whose process ended.
  Duration worker_restart_min = 100ms;
  Duration worker_restart_max = 2s;
};

class Cluster {
 public:
  Cluster(World& world, ClusterOptions options, std::function<RunPlan(const actors::Invocation&)> plan);
  /// Tears the actors down with the world stopped, so late callbacks schedule nothing.
  ~Cluster();

  void start();

  /// The scheduler that is up; nullptr while it is down.
  SchedulerNode* scheduler();
  /// kill -9 of the scheduler; the next incarnation starts after `downtime` on what it wrote.
  void crash_scheduler(Duration downtime);
  /// kill -9 of a worker process; its supervisor starts a new one after `downtime`.
  void crash_worker(const std::string& shard, Duration downtime);
  /// The live process of `shard`, if any.
  std::shared_ptr<WorkerProcess> worker(const std::string& shard);
  std::vector<std::string> shards() const;

  /// Submits a workflow, again and again until the scheduler acknowledges it.
  void submit(const std::string& id, const std::string& json);
  bool acknowledged(const std::string& id) const { return acknowledged_.count(id) > 0; }
  /// Every submitted workflow is acknowledged and closed in the history.
  bool all_closed();

  /// The history as the latest incarnation has it.
  const std::shared_ptr<storage::MemoryHistoryStore>& store() const { return store_; }
  const Ledger& ledger() const { return ledger_; }
  const ClusterOptions& options() const { return options_; }
  /// How many incarnations of the scheduler ran.
  size_t incarnations() const { return incarnations_.size(); }

 private:
  void start_scheduler();
  void start_worker(const std::string& shard);
  /// Sends every submission not acknowledged and not waiting for an answer from this incarnation.
  void send_submissions();
  /// The client's loop: sends again every while, until every submission is acknowledged.
  void client_loop();

  World& world_;
  ClusterOptions options_;
  std::function<RunPlan(const actors::Invocation&)> plan_;
  Ledger ledger_;
  std::shared_ptr<storage::MemoryHistoryStore> store_ = std::make_shared<storage::MemoryHistoryStore>();
  std::vector<std::unique_ptr<SchedulerNode>> incarnations_;
  SchedulerNode* up_ = nullptr;
  std::map<std::string, std::shared_ptr<WorkerProcess>> workers_;
  std::map<std::string, uint64_t> starts_;  ///< processes started per shard, for instance ids
  std::map<std::string, std::string> submissions_;  ///< id -> definition
  std::map<std::string, uint64_t> asked_;           ///< id -> the epoch last asked
  std::set<std::string> acknowledged_;
  std::set<std::string> closed_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  ///< false once torn down
};

}  // namespace troupe::sim
