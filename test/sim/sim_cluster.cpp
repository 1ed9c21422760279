// The simulated cluster: scheduler incarnations, worker supervisors and the client.
#include "test/sim/sim_cluster.hpp"

namespace troupe::sim {

/// How often the client looks for submissions to send again.
constexpr Duration client_retry = 500ms;

Cluster::Cluster(World& world, ClusterOptions options, std::function<RunPlan(const actors::Invocation&)> plan)
    : world_(world), options_(std::move(options)), plan_(std::move(plan)) {}

Cluster::~Cluster() {
  world_.stop();
  *alive_ = false;
  workers_.clear();
  up_ = nullptr;
  // Newest first: an old incarnation's actors may still hold links to connections.
  while (!incarnations_.empty()) incarnations_.pop_back();
}

void Cluster::start() {
  start_scheduler();
  for (const auto& [shard, lists] : options_.workers) start_worker(shard);
  client_loop();
}

SchedulerNode* Cluster::scheduler() { return up_ != nullptr && up_->up() ? up_ : nullptr; }

std::vector<std::string> Cluster::shards() const {
  std::vector<std::string> out;
  for (const auto& [shard, lists] : options_.workers) out.push_back(shard);
  return out;
}

void Cluster::start_scheduler() {
  const uint64_t epoch = incarnations_.size() + 1;
  // What a restarted node finds on disk: everything its predecessor wrote, whatever the
  // predecessor's abandoned actors would do afterwards.
  if (!incarnations_.empty()) store_ = store_->snapshot();
  world_.note("scheduler epoch " + std::to_string(epoch) + " starts");
  ledger_.scheduler_started(world_.now());
  incarnations_.push_back(std::make_unique<SchedulerNode>(world_, store_, epoch, options_.scheduler));
  up_ = incarnations_.back().get();
  world_.set_actors(up_);
  send_submissions();
}

void Cluster::crash_scheduler(Duration downtime) {
  if (up_ == nullptr) return;
  up_->crash();
  ledger_.scheduler_crashed(world_.now());
  up_ = nullptr;
  world_.set_actors(nullptr);
  world_.after(downtime, [this] { start_scheduler(); });
}

void Cluster::start_worker(const std::string& shard) {
  if (auto current = worker(shard)) return;  // started already
  WorkerEnvironment env;
  env.world = &world_;
  env.ledger = &ledger_;
  env.network = &options_.network;
  env.scheduler = [this] { return scheduler(); };
  env.plan = plan_;
  env.exited = [this](const std::string& s, const std::string&) {
    world_.after(world_.between(options_.worker_restart_min, options_.worker_restart_max),
                 [this, s] { start_worker(s); });
  };
  const std::string instance = shard + "." + std::to_string(++starts_[shard]);
  auto process = std::make_shared<WorkerProcess>(std::move(env), shard, instance, options_.workers.at(shard));
  workers_[shard] = process;
  process->start();
}

void Cluster::crash_worker(const std::string& shard, Duration downtime) {
  auto process = worker(shard);
  if (!process) return;
  process->kill("crashed");
  world_.after(downtime, [this, shard] { start_worker(shard); });
}

std::shared_ptr<WorkerProcess> Cluster::worker(const std::string& shard) {
  auto it = workers_.find(shard);
  if (it == workers_.end() || !it->second->alive()) return nullptr;
  return it->second;
}

void Cluster::submit(const std::string& id, const std::string& json) {
  submissions_.emplace(id, json);
  send_submissions();
}

void Cluster::send_submissions() {
  if (SchedulerNode* node = scheduler()) {
    for (const auto& [id, json] : submissions_) {
      if (acknowledged_.count(id)) continue;
      auto asked = asked_.find(id);
      if (asked != asked_.end() && asked->second == node->epoch()) continue;  // still waiting
      asked_[id] = node->epoch();
      node->submit(id, json, [this, alive = alive_, id = id, epoch = node->epoch()](Result<std::string> answer) {
        if (!*alive) return;
        // A finished workflow was acknowledged before, to a call whose answer was lost.
        const bool finished = !answer && answer.error().code == Errc::ALREADY_EXISTS &&
                              answer.error().message.find("finished") != std::string::npos;
        if (answer || finished) {
          acknowledged_.insert(id);
        } else if (asked_[id] == epoch) {
          asked_.erase(id);  // refused for now: ask again
        }
      });
    }
  }
}

void Cluster::client_loop() {
  send_submissions();
  world_.after(client_retry, [this] { client_loop(); });
}

bool Cluster::all_closed() {
  if (acknowledged_.size() < submissions_.size()) return false;
  for (const auto& [id, json] : submissions_) {
    if (closed_.count(id)) continue;
    auto record = store_->find_workflow(id);
    if (!record || !*record || (*record)->status != storage::WorkflowStatus::CLOSED) return false;
    closed_.insert(id);
  }
  return true;
}

}  // namespace troupe::sim
