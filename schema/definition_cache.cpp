// The definition cache.
#include "schema/definition_cache.hpp"

namespace troupe {

Result<SharedDefinition> DefinitionCache::get(std::string_view json) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(json); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->shared;
    }
  }
  auto parsed = parse_definition(json);  // outside the lock: parsing is the expensive part
  if (!parsed) return parsed.error();
  SharedDefinition entry{std::make_shared<const std::string>(json),
                         std::make_shared<const WorkflowSpec>(std::move(*parsed))};
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(json); it != index_.end()) return it->second->shared;  // parsed meanwhile
  lru_.push_front(Entry{entry});
  index_.emplace(std::string_view(*lru_.front().shared.json), lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(std::string_view(*lru_.back().shared.json));
    lru_.pop_back();
  }
  return entry;
}

Result<SharedDefinition> DefinitionCache::get(std::string_view json, const InputLimits& limits) {
  bool strict_json = false;
  if (json.size() <= limits.definition_bytes) {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(json); it != index_.end()) strict_json = it->second->strict_json;
  }
  if (!strict_json) {
    if (auto problems = definition_text_problems(json, limits); !problems.empty()) return definition_refused(problems);
  }
  auto shared = get(json);
  if (!shared) return shared.error();
  if (!strict_json) {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(json); it != index_.end()) it->second->strict_json = true;
  }
  if (auto problems = definition_limit_problems(*shared->spec, limits); !problems.empty()) {
    return definition_refused(problems);
  }
  return shared;
}

size_t DefinitionCache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

}  // namespace troupe
