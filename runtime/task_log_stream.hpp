// ClientService.taskLogs on the scheduler: finds where a task's attempt ran from the workflow's
// history, reads its log from that worker (WorkerControl.readLog) a chunk at a time and pushes
// the chunks to the client's LogSink; with follow, goes on while the attempt runs. Everything
// here runs on the RPC thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <kj/async.h>
#include <kj/timer.h>

#include "schema/gateway.capnp.h"
#include "schema/result.hpp"
#include "schema/worker.capnp.h"
#include "schema/workflow_status.hpp"
#include "storage/history_store.hpp"

namespace troupe::runtime {

/// What a log stream needs of its scheduler. Each is called on the RPC thread.
struct TaskLogPorts {
  /// Read for the workflow's history (a page at a time).
  std::shared_ptr<storage::HistoryStore> store;
  /// The workflow's durable state (describe); NOT_FOUND for an unknown id.
  std::function<kj::Promise<Result<WorkflowStatus>>(const std::string& workflow_id)> describe;
  /// Worker `shard`'s control capability while it is registered on a connection; nullopt when
  /// none is.
  std::function<std::optional<schema::WorkerControl::Client>(const std::string& shard)> worker;
  /// The host worker `shard` last registered from; empty when unknown.
  std::function<kj::Promise<std::string>(const std::string& shard)> hostname;
};

/// What a client asked for (gateway.capnp taskLogs).
struct TaskLogRequest {
  std::string workflow_id;
  std::string task;      ///< empty: every task that started, in definition order
  uint32_t attempt = 0;  ///< 0: the last
  bool follow = false;
};

/// Streams the logs `request` names to `sink`. The promise resolves once they were delivered
/// (or the sink said stop), or with the error that ended the stream: NOT_FOUND (workflow),
/// INVALID_ARGUMENT (task, attempt), NOT_ALLOWED_IN_STATE (not started, a handler task),
/// DISCONNECTED (the worker that ran it is not connected), or the worker's own refusal.
/// `timer` paces a follow's polls; it must outlive the promise.
kj::Promise<Result<void>> stream_task_logs(TaskLogPorts ports, TaskLogRequest request, schema::LogSink::Client sink,
                                           kj::Timer& timer);

}  // namespace troupe::runtime
