// Fuzz target: what the history store hands back, decoded as the scheduler and the CLI decode
// it. The input is a workflow's history as stored values (each a packed HistoryEvent, framed
// below); it goes through replay (storage's DecodedEvent, the models applying each event, then
// describe's snapshot and result's final outputs, as a restarted scheduler and `troupe status`
// do) and through `troupe logs`' reading of the same events. The whole input is also read as a
// key and as each record kind the store keeps. A damaged store must give CORRUPTION or
// INVALID_ARGUMENT, never a crash.
//
// Framing: events one after another, each a LEB128 length and that many bytes (the last one
// takes what is left if the input ends early). Seeds: test/fuzz/make_seeds.cpp.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/system/replay.hpp"
#include "runtime/logs/task_runs.hpp"
#include "storage/codec.hpp"
#include "storage/keys.hpp"
#include "test/fuzz/fuzz_check.hpp"

namespace {

using namespace troupe;

std::vector<storage::StoredEvent> split_events(std::string_view input) {
  std::vector<storage::StoredEvent> events;
  size_t at = 0;
  while (at < input.size()) {
    uint64_t length = 0;
    for (int shift = 0; at < input.size() && shift < 64; shift += 7) {
      const auto byte = static_cast<uint8_t>(input[at++]);
      length |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) break;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(length, input.size() - at));
    events.push_back({events.size() + 1, std::string(input.substr(at, take))});
    at += take;
  }
  return events;
}

/// Replays `history` as a scheduler does; the tasks describe shows (none if it does not replay).
std::vector<std::string> replay_history(const std::vector<storage::StoredEvent>& history) {
  auto replayed = actors::replay("wf-fuzz", history);
  if (!replayed) {
    TROUPE_FUZZ_CHECK(replayed.error().code == Errc::CORRUPTION, "a history that does not replay is corrupt");
    return {};
  }
  const auto status = actors::snapshot(*replayed);
  const auto outputs = actors::final_outputs(*replayed);
  std::vector<std::string> tasks;
  if (replayed->workflow.spec) {
    TROUPE_FUZZ_CHECK(status.tasks.size() == replayed->workflow.spec->tasks.size(), "describe shows every task");
    TROUPE_FUZZ_CHECK(outputs.size() <= status.tasks.size(), "final outputs are tasks' outputs");
    for (const auto& task : status.tasks) tasks.push_back(task.name);
  }
  return tasks;
}

/// Reads `history` as `troupe logs` does (through the scheduler's taskLogs), asking after `tasks`.
void read_logs_view(const std::vector<storage::StoredEvent>& history, const std::vector<std::string>& tasks) {
  runtime::TaskRuns runs;
  for (const auto& stored : history) {
    auto event = storage::DecodedEvent::decode(stored.packed);
    if (!event) {
      TROUPE_FUZZ_CHECK(event.error().code == Errc::INVALID_ARGUMENT, "a malformed event is refused");
      return;
    }
    if (auto added = runs.add(event->get()); !added) {
      TROUPE_FUZZ_CHECK(added.error().code == Errc::CORRUPTION, "an event that does not fold is corrupt");
      return;
    }
  }
  for (const auto& task : tasks) {
    for (uint32_t attempt = 1; attempt <= runs.last_attempt(task) && attempt <= 4; ++attempt) {
      for (const auto& run : runs.runs_of_attempt(task, attempt)) {
        TROUPE_FUZZ_CHECK(run.attempt == attempt, "an attempt's runs are of that attempt");
      }
    }
    (void)runs.runs_handler(task);
  }
}

void read_as_records(std::string_view bytes) {
  (void)storage::decode_workflow_record(bytes);
  (void)storage::decode_worker_record(bytes);
  if (auto key = storage::parse_event_key(bytes)) {
    TROUPE_FUZZ_CHECK(storage::event_key(key->workflow_id, key->sequence) == bytes, "an events key reads back");
  }
  if (auto key = storage::parse_created_key(bytes)) {
    TROUPE_FUZZ_CHECK(storage::created_key(key->created_us, key->workflow_id) == bytes, "a created key reads back");
  }
  (void)storage::describe_event_key(bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto history = split_events(input);
  const auto tasks = replay_history(history);
  read_logs_view(history, tasks);
  read_as_records(input);
  return 0;
}
