// The words for why a task waits in its task list.
#include "actors/matching/list_wait.hpp"

#include <cstdio>

namespace troupe::actors {
namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

/// "2 tasks/s", "1 task/s", "0.5 tasks/s": a rate as a person reads it.
std::string per_second(double rate) {
  char number[32];
  std::snprintf(number, sizeof number, "%g", rate);
  return std::string(number) + (rate == 1 ? " task/s" : " tasks/s");
}

/// Workers known to the list that offer no slot now.
std::string not_taking(uint32_t count) { return std::to_string(count) + " draining/quarantined/unhealthy"; }

std::string busy(std::string_view list, const ListWait& wait) {
  const uint32_t idle = wait.workers > wait.offering ? wait.workers - wait.offering : 0;
  // Workers that offer no slot are named apart: "the only worker" would be wrong with them.
  const std::string taking = idle > 0 ? " taking tasks" : "";
  const std::string aside = idle > 0 ? " (" + not_taking(idle) + " besides)" : "";
  if (wait.offering == 1) return "the only worker of " + quoted(list) + taking + " is busy" + aside;
  return "all " + std::to_string(wait.offering) + " workers of " + quoted(list) + taking + " are busy" + aside;
}

}  // namespace

std::string wait_reason(std::string_view task_list, const ListWait& wait) {
  switch (wait.hold) {
    case CreditHold::NONE:
      return {};
    case CreditHold::NO_WORKER:
      if (wait.workers == 0) return "no live worker serves task list " + quoted(task_list);
      return "no worker of task list " + quoted(task_list) + " takes tasks now (" + not_taking(wait.workers) + ")";
    case CreditHold::BUSY:
      return busy(task_list, wait);
    case CreditHold::LIST_RATE:
      if (wait.list_rate <= 0) return "rate limited: task list " + quoted(task_list) + " is at its rate limit";
      return "rate limited: task list " + quoted(task_list) + " starts at most " + per_second(wait.list_rate);
    case CreditHold::WORKER_RATE:
      return "rate limited: each worker of " + quoted(task_list) + " with a free slot is at its own rate limit";
  }
  return {};
}

}  // namespace troupe::actors
