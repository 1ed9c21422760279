// Why the tasks waiting in a task list have no worker yet, as a small value the list's matching
// actor computes, and in the words `troupe status` shows. Plain code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "actors/matching/credit.hpp"

namespace troupe::actors {

/// What holds back the tasks waiting in one task list. It changes only when a task starts or
/// stops waiting, a worker joins, leaves or changes its slots, or the cause moves (slots fill up,
/// a bucket runs dry): not with every dispatch, so the matching actor can post it on each change.
struct ListWait {
  /// NONE while no task waits in the list (or the one that waits is being granted a slot).
  CreditHold hold = CreditHold::NONE;
  uint32_t workers = 0;   ///< workers that joined the list (live, in any health)
  uint32_t offering = 0;  ///< of them, those with slots: the rest are unhealthy or draining
  double list_rate = 0;   ///< the list's limit, tasks started per second; 0: unlimited

  friend bool operator==(const ListWait&, const ListWait&) = default;
};

/// Why a task of `task_list` waits, for people: "no live worker serves task list 'gpu'", "all 2
/// workers of 'gpu' are busy", "rate limited: task list 'gpu' starts at most 2 tasks/s", ...
/// Empty when nothing holds it (hold NONE).
std::string wait_reason(std::string_view task_list, const ListWait& wait);

}  // namespace troupe::actors
