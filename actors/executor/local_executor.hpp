// The in-process executor: runs registered C++ handlers for task actors in the same process,
// with a fixed number of slots. A worker node's agent uses it too, behind RPC.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/executor/handler.hpp"
#include "actors/ports.hpp"

namespace troupe::meters {
class Gauge;
}  // namespace troupe::meters

namespace troupe::actors {

/// Starts a shell invocation (argv, env, cwd in `invocation`) and reports through `context`.
using ShellRunner = std::function<void(const Invocation& invocation, std::shared_ptr<TaskContext> context)>;

struct LocalExecutorOptions {
  /// Its name, reported as the worker an invocation ran on. Default: "local".
  std::string name = "local";
  /// Invocations running at once; tasks wait in priority order for a slot. Default: no limit.
  size_t slots = std::numeric_limits<size_t>::max();
  /// Runs shell invocations (those without a handler); it must only start the process and
  /// report through the context later. Default: none, and shell invocations fail as Unsupported.
  ShellRunner shell;
};

/// Spawns the executor. Handlers run on the executor actor itself: they must only start work
/// (a thread, an `after` timer, I/O) and return. `running`, if given, is set to the number of
/// invocations running whenever it changes, for the node's metrics.
executor_actor spawn_local_executor(caf::actor_system& system,
                                    std::shared_ptr<const HandlerRegistry> handlers,
                                    LocalExecutorOptions options = {},
                                    std::shared_ptr<meters::Gauge> running = nullptr);

}  // namespace troupe::actors
