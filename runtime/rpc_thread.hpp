// The node's one KJ event-loop thread. Every Cap'n Proto object lives and dies on it; other
// threads (CAF's) hand it work through post(), which never blocks on RPC.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "schema/result.hpp"

namespace kj {
struct AsyncIoContext;
class TaskSet;
}  // namespace kj

namespace troupe {
class NodeLog;
}  // namespace troupe

namespace troupe::runtime {

class RpcThread {
 public:
  /// Runs first on the RPC thread: listen, connect, build servers. Whatever it creates must be
  /// owned by the returned teardown closure (or by `tasks`), which runs on the thread at stop.
  /// `self` is the thread being started, already able to post: what setup builds may be called
  /// (and post) as soon as setup returns, before start() has returned to its caller.
  using Setup =
      std::function<Result<std::function<void()>>(RpcThread& self, kj::AsyncIoContext& io, kj::TaskSet& tasks)>;

  /// Starts the thread and waits for `setup`; its error is start()'s error. Failures of the
  /// loop's detached work go to `log` (nullptr: nowhere).
  static Result<std::unique_ptr<RpcThread>> start(std::shared_ptr<NodeLog> log, Setup setup);
  ~RpcThread();

  RpcThread(const RpcThread&) = delete;
  RpcThread& operator=(const RpcThread&) = delete;

  /// Thread-safe: runs `work` on the RPC thread soon, in posting order. Dropped after stop().
  void post(std::function<void()> work);
  /// Runs the teardown, stops the loop and joins. Idempotent; not from the RPC thread.
  void stop();
  /// Whether the caller is on the RPC thread.
  bool on_thread() const;

  struct Impl;

 private:
  explicit RpcThread(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe::runtime
