// Limits on what a scheduler takes from its users: the size of a workflow definition and how many
// tasks it has, the lengths of workflow ids and names, the sizes of inputs and results. Each is
// refused where it enters (the gateway for ids, inputs and results; the directory for
// definitions, once a registered one is read) with a message naming the limit, the size given
// and what to do. The cluster config's [limits] table sets them (runtime/config/README.md).
// Std-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe {

/// The limits, as one value. The defaults fit every example and benchmark, the 100,000-way
/// fan-out among them; the maxima (InputLimits::most) keep a submission (definition and input
/// together) and the history event that records it within one RPC message of the default size
/// (64 MiB), so that what was taken can also be read back. (The cluster config checks the two
/// against the size it sets, [connections] max_message_bytes.)
struct InputLimits {
  /// Bytes of a workflow definition's JSON. Larger definitions take longer to check and to
  /// replay and are stored whole in the workflow's first history event.
  /// Default: 32 MiB; at most 48 MiB.
  uint64_t definition_bytes = uint64_t{32} << 20;
  /// Tasks in one workflow. Every task is checked, recorded and (while it runs) an actor; status
  /// describes them all in one answer. Default: 200,000; at most 1,000,000.
  uint64_t tasks = 200'000;
  /// Bytes of a workflow id a client gives. The history store keys on it, so it can be no longer
  /// than storage::max_id_bytes. Default: 512; at least 64, at most 512.
  uint64_t workflow_id_bytes = 512;
  /// Bytes of each name in a definition: the workflow's, its tasks', sessions' and task lists',
  /// handler names and session resource ids. Default: 200; at least 16, at most 1024.
  uint64_t name_bytes = 200;
  /// Bytes of a workflow's input and of each task's own `input`; both go to a task with each
  /// attempt. Default: 4 MiB; at least 1 KiB, at most 8 MiB.
  uint64_t input_bytes = uint64_t{4} << 20;
  /// Bytes of a task's result (from its worker, or completeTask) and of a failure's details
  /// (failTask). Default: 4 MiB; at least 1 KiB, at most 8 MiB.
  uint64_t result_bytes = uint64_t{4} << 20;

  /// The largest value of each limit a config may set. The CLI refuses what exceeds these
  /// before sending it: no scheduler would take it.
  static InputLimits most();
  /// The smallest value of each limit a config may set.
  static InputLimits least();

  friend bool operator==(const InputLimits&, const InputLimits&) = default;
};

/// "4194304 bytes (4 MiB)": a byte count for a message, with its size in IEC units from 1 KiB.
std::string describe_bytes(uint64_t bytes);

/// The message for a value over a limit: "WHAT is SIZE; the limit is LIMIT (limits.KEY in the
/// cluster config): ADVICE". `size` and `limit` are already described ("4096 bytes", "3 tasks").
std::string over_limit(std::string_view what, std::string_view size, std::string_view limit, std::string_view key,
                       std::string_view advice);

/// A workflow id a client gives: at most limits.workflow_id_bytes bytes, UTF-8, no control
/// characters (an id is printed in lists and logs). Empty passes: the scheduler makes one up.
/// INVALID_ARGUMENT saying which rule it breaks.
Result<void> check_workflow_id(std::string_view id, const InputLimits& limits);

/// A workflow's input: at most limits.input_bytes, JSON with UTF-8 strings. INVALID_ARGUMENT.
Result<void> check_workflow_input(std::string_view json, const InputLimits& limits);

/// A task's result from a client (completeTask): at most limits.result_bytes, JSON with UTF-8
/// strings (empty: no result). INVALID_ARGUMENT.
Result<void> check_task_result(std::string_view json, const InputLimits& limits);

/// A task failure from a client (failTask): a reason of at most limits.name_bytes and details of
/// at most limits.result_bytes, both UTF-8. INVALID_ARGUMENT.
Result<void> check_task_failure(std::string_view reason, std::string_view details, const InputLimits& limits);

}  // namespace troupe
