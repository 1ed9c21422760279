// A simulated worker process: the real WorkerState, carried out as runtime/worker_agent.cpp
// carries it out (registration, heartbeats, WorkerControl, outcome delivery through the
// reporter and then the session), with a simulated executor whose invocations run for planned
// simulated times and end as planned, unless cancelled or killed. Process-supervisor keepers
// kill its runs when its lease runs out; its death kills them at once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/agent/worker_state.hpp"
#include "actors/system/dispatcher.hpp"
#include "test/sim/sim_ledger.hpp"
#include "test/sim/sim_network.hpp"
#include "test/sim/sim_world.hpp"

namespace troupe::sim {

class SchedulerNode;

/// How an invocation behaves on a worker: planned by the workload from its task and attempt.
struct RunPlan {
  Duration duration{0};  ///< 0: it ends within runTask, before the answer
  actors::TaskReport::Kind outcome = actors::TaskReport::SUCCEEDED;  ///< SUCCEEDED or FAILED
  std::string reason;    ///< of a failure
  bool non_retryable = false;
  Duration heartbeat_every{0};  ///< 0: it does not heartbeat
};

/// What a worker process needs from the simulated cluster around it.
struct WorkerEnvironment {
  World* world = nullptr;
  Ledger* ledger = nullptr;
  const NetworkProfile* network = nullptr;
  /// The scheduler that accepts connections now; nullptr while none is up.
  std::function<SchedulerNode*()> scheduler;
  std::function<RunPlan(const actors::Invocation&)> plan;
  /// The process exited (it decided to die): the supervisor may start another.
  std::function<void(const std::string& shard, const std::string& why)> exited;
};

class WorkerProcess : public std::enable_shared_from_this<WorkerProcess> {
 public:
  WorkerProcess(WorkerEnvironment env, std::string shard, std::string instance,
                std::map<std::string, uint32_t> task_lists);

  const std::string& shard() const { return state_.shard_id(); }
  const std::string& instance() const { return state_.instance_id(); }
  bool alive() const { return alive_; }

  void start();
  /// The process dies now (kill -9, or its own exit): its runs stop, its connection breaks.
  void kill(const std::string& why);
  /// The current connection, if any (for faults).
  const std::shared_ptr<Connection>& connection() const { return connection_; }

  // --- WorkerControl: the scheduler's calls, as they arrive ------------------------------
  /// runTask. `answer` is called once: at once when it is refused, else when the executor
  /// says it started or how it ended.
  void run_task(const actors::Invocation& invocation, std::shared_ptr<Connection> on, actors::worker_actor reporter,
                std::function<void(Result<actors::RunAnswer>)> answer);
  /// What it runs; the simulated worker holds no sessions.
  actors::RunningTasks running_tasks() { return {state_.running_ids(), state_.ended_ids(), {}}; }
  std::vector<std::string> not_running(const std::vector<std::string>& ids, actors::Fence fence) {
    return state_.not_running(ids, fence);
  }
  void acknowledge(const std::vector<std::string>& ids);
  void cancel(const std::string& id, Duration grace);
  void suicide(const std::string& reason) { die("the scheduler asked this worker to exit: " + reason); }

 private:
  using TimePoint = actors::WorkerState::TimePoint;
  /// The reporter capability and runTask's answer of an invocation the state holds.
  struct Calls {
    std::shared_ptr<Connection> connection;  ///< the one runTask came on, which the reporter uses
    actors::worker_actor reporter;
    std::function<void(Result<actors::RunAnswer>)> answer;  ///< until given
  };
  /// An invocation on the executor.
  struct Execution {
    RunPlan plan;
    uint64_t generation = 0;
  };

  TimePoint clock() const;
  World& world() const { return *env_.world; }
  /// An outcome sent `ago` after the invocation ended, as the scheduler reads it on arrival
  /// (called there).
  std::function<actors::TaskReport()> dated(const actors::TaskReport& outcome, Duration ago) const;
  Duration interval() const { return state_.timeouts().heartbeat_interval; }
  /// `fn` later, if this process is still alive then.
  void later(Duration d, std::function<void(WorkerProcess&)> fn);

  // the agent (mirrors runtime/worker_agent.cpp)
  void connect();
  void registered(std::shared_ptr<Connection> connection, SchedulerNode* scheduler);
  void drop_connection();
  void heartbeat_loop(uint64_t generation);
  void beat();
  void die(const std::string& reason);
  void extend_lease();
  void on_report(actors::TaskReport report);
  void answer(Calls& calls, actors::RunAnswer answer);
  void deliver(const std::string& id);
  void deliver_through_session(const std::string& id);
  void heartbeat_through_session(const std::string& id, const std::string& progress);
  void delivered(const std::string& id);

  // the executor
  void execute(const actors::Invocation& invocation);
  void executor_heartbeat(const std::string& id, uint64_t generation, int beats);
  void end_run(const std::string& id, actors::TaskReport report, const std::string& how);

  WorkerEnvironment env_;
  actors::WorkerState state_;
  std::map<std::string, uint32_t> task_lists_;
  bool alive_ = true;
  std::shared_ptr<Connection> connection_;
  std::optional<actors::worker_actor> session_;
  uint64_t heartbeat_generation_ = 0;
  std::map<std::string, Calls> calls_;
  std::map<std::string, Execution> executions_;
  uint64_t next_generation_ = 0;
  TimePoint lease_end_{};
};

}  // namespace troupe::sim
