// The in-process executor: runs registered C++ handlers for task actors in the same process,
// with a fixed number of slots. A worker node's agent uses it too, behind RPC.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/executor/handler.hpp"
#include "actors/ports.hpp"

namespace troupe::actors {

struct LocalExecutorOptions {
  /// Its name, reported as the worker an invocation ran on. Default: "local".
  std::string name = "local";
  /// Invocations running at once; tasks wait in priority order for a slot. Default: no limit.
  size_t slots = std::numeric_limits<size_t>::max();
};

/// Spawns the executor. Handlers run on the executor actor itself: they must only start work
/// (a thread, an `after` timer, I/O) and return.
executor_actor spawn_local_executor(caf::actor_system& system,
                                    std::shared_ptr<const HandlerRegistry> handlers,
                                    LocalExecutorOptions options = {});

}  // namespace troupe::actors
