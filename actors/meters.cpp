// QueueDepths: the task lists' gauges under one mutex, taken when a matching actor is spawned
// and when the metrics are scraped, never on the dispatch path.
#include "actors/meters.hpp"

namespace troupe::actors {

std::shared_ptr<meters::Gauge> QueueDepths::gauge(const std::string& task_list) {
  std::lock_guard lock(mutex_);
  auto& gauge = gauges_[task_list];
  if (!gauge) gauge = std::make_shared<meters::Gauge>();
  return gauge;
}

std::map<std::string, int64_t> QueueDepths::snapshot() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, int64_t> out;
  for (const auto& [list, gauge] : gauges_) out.emplace(list, gauge->value());
  return out;
}

}  // namespace troupe::actors
