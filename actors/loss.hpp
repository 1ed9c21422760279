// What is known of an invocation lost with its executor (mirrors schema::FailoverKind in
// history.capnp). It decides whether the task's attempt is used up: only an invocation that
// provably never started, or that its worker interrupted to shut down, is dispatched again under
// the same attempt.
#pragma once

#include <cstdint>
#include <string_view>

namespace troupe::actors {

enum class Loss : uint8_t {
  MAY_HAVE_STARTED,  ///< lost before the executor confirmed the start
  NEVER_STARTED,     ///< provably never reached an executor (refused, or never sent)
  WHILE_RUNNING,     ///< started, and lost before it finished
  RESULT_LOST,       ///< finished, and lost before its outcome was durable
  INTERRUPTED,       ///< its worker stopped it to shut down: run again, the attempt kept
};

inline std::string_view loss_name(Loss loss) {
  switch (loss) {
    case Loss::MAY_HAVE_STARTED: return "may have started";
    case Loss::NEVER_STARTED: return "never started";
    case Loss::WHILE_RUNNING: return "lost while running";
    case Loss::RESULT_LOST: return "finished, result lost";
    case Loss::INTERRUPTED: return "interrupted";
  }
  return "?";
}

}  // namespace troupe::actors
