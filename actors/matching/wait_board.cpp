// The wait board: a map under a mutex.
#include "actors/matching/wait_board.hpp"

namespace troupe::actors {

void WaitBoard::post(std::string_view task_list, const ListWait& wait) {
  std::lock_guard lock(mutex_);
  auto it = lists_.find(task_list);
  if (it == lists_.end()) {
    lists_.emplace(std::string(task_list), wait);
  } else {
    it->second = wait;
  }
}

std::optional<ListWait> WaitBoard::find(std::string_view task_list) const {
  std::lock_guard lock(mutex_);
  auto it = lists_.find(task_list);
  if (it == lists_.end()) return std::nullopt;
  return it->second;
}

std::string WaitBoard::reason_for(std::string_view task_list) const {
  auto wait = find(task_list);
  return wait ? wait_reason(task_list, *wait) : std::string();
}

void WaitBoard::post_session(std::string_view key, std::string why) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(key);
  if (why.empty()) {
    if (it != sessions_.end()) sessions_.erase(it);
  } else if (it == sessions_.end()) {
    sessions_.emplace(std::string(key), std::move(why));
  } else {
    it->second = std::move(why);
  }
}

std::string WaitBoard::session_reason(std::string_view key) const {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(key);
  return it == sessions_.end() ? std::string() : it->second;
}

}  // namespace troupe::actors
