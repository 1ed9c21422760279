// The board where the matching actors post why their task lists' tasks wait, and the dispatcher
// why sessions wait for a worker, for the status path to read when a client asks: the dispatch
// path never waits for a reader, and a status request sends no message to those actors.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "actors/matching/list_wait.hpp"

namespace troupe::actors {

/// The latest ListWait of each task list. Thread-safe: matching actors post from their threads,
/// describe reads from its own. Shared (std::shared_ptr) by the dispatcher, which hands it to
/// the matching actors it spawns, and the scheduler's client bridge.
class WaitBoard {
 public:
  /// Replaces `task_list`'s entry. Called by its matching actor when the value changes.
  void post(std::string_view task_list, const ListWait& wait);
  /// `task_list`'s latest entry; empty if its matching actor never posted one.
  std::optional<ListWait> find(std::string_view task_list) const;
  /// Why a task of `task_list` waits (see wait_reason); empty when nothing is known to hold it.
  std::string reason_for(std::string_view task_list) const;

  /// Why session `key` (WORKFLOW/SESSION) waits for a worker; empty: it does not (forgotten).
  void post_session(std::string_view key, std::string why);
  /// What was posted for session `key`; empty when nothing is.
  std::string session_reason(std::string_view key) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, ListWait, std::less<>> lists_;
  std::map<std::string, std::string, std::less<>> sessions_;
};

}  // namespace troupe::actors
