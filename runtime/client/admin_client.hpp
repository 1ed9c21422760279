// The C++ client of a scheduler's AdminService (schema/admin.capnp): the live actors, a
// workflow's diagnosis, histories, task lists and the store, as plain values. What `troupe
// shell` speaks. One AdminClient is one connection, driven by the thread that uses it; no Cap'n
// Proto or KJ types in this header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/client/gateway_client.hpp"

namespace troupe::client {

/// One live actor as its probe answered (admin.capnp ActorSummary has every field's meaning).
struct ActorRow {
  std::string kind;
  std::string id;
  std::string state;
  uint64_t mailbox = 0;
  uint32_t timers = 0;
  int64_t started_us = 0;
  std::string waits_for;
  std::string error;  ///< why it did not answer; empty when it did
};

struct ActorList {
  std::vector<ActorRow> actors;
  std::vector<std::pair<std::string, uint64_t>> counts;  ///< live actors by kind
  uint64_t passivated_workflows = 0;
};

enum class ActorSort { KIND, MAILBOX, AGE };

struct ActorTimer {
  std::string what;
  int64_t at_us = 0;
};

struct ActorDetail {
  ActorRow summary;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<ActorTimer> timers;
  std::vector<WatchedEvent> events;  ///< the last of its history, oldest first
};

struct Blocker {
  std::string subject;
  std::string state;
  std::string waits_for;
};

struct WorkflowDiagnosis {
  std::string workflow_id;
  std::string state;
  bool live = false;
  std::string summary;
  std::vector<Blocker> blockers;
};

struct HistoryPage {
  std::vector<WatchedEvent> events;
  uint64_t last_sequence = 0;
};

struct TaskListRow {
  std::string name;
  std::vector<std::pair<int32_t, uint64_t>> queued;  ///< by priority, higher first
  uint64_t session_queued = 0;
  std::vector<WorkerTaskListUse> workers;  ///< name, slots, in use
  double rate = 0;
  uint32_t burst = 0;
  std::string wait_reason;
};

struct StoreSummary {
  std::vector<std::pair<std::string, std::string>> engine;
  uint64_t batches = 0;
  uint64_t operations = 0;
  uint64_t largest_batch = 0;
  uint64_t events = 0;
  uint64_t bytes_written = 0;
};

class AdminClient {
 public:
  /// Connects to the scheduler at host:port and obtains its admin service, as
  /// GatewayClient::connect does its client service.
  static Result<std::unique_ptr<AdminClient>> connect(const std::string& host, uint16_t port,
                                                     const ConnectOptions& options = {});
  ~AdminClient();
  AdminClient(const AdminClient&) = delete;
  AdminClient& operator=(const AdminClient&) = delete;

  /// The live actors of `kind` (empty: all), probed now. INVALID_ARGUMENT for an unknown kind.
  Result<ActorList> actors(const std::string& kind, ActorSort sort, uint32_t limit);
  /// The sorted ids of live actors of `kind` (empty: any) starting with `prefix`, at most
  /// `limit` (0: 1000), none probed. INVALID_ARGUMENT for an unknown kind.
  Result<std::vector<std::string>> ids(const std::string& kind, const std::string& prefix, uint32_t limit);
  /// One live actor by id. NOT_FOUND when none has it.
  Result<ActorDetail> actor(const std::string& id);
  /// Why a workflow is not moving. NOT_FOUND for an unknown id.
  Result<WorkflowDiagnosis> diagnose(const std::string& workflow_id);
  /// A workflow's events from `from` (1: the first), at most `limit`.
  Result<HistoryPage> history(const std::string& workflow_id, uint64_t from, uint32_t limit);
  Result<std::vector<TaskListRow>> task_lists();
  Result<StoreSummary> store();

 private:
  struct Impl;
  explicit AdminClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe::client
