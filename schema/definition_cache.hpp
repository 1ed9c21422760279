// Parsed definitions shared by every workflow instance of the same definition text: a
// definition is parsed and validated once, and a thousand instances of it hold one spec.
// Thread-safe; bounded (least recently used entries are dropped, and parsed again if needed).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "schema/definition.hpp"

namespace troupe {

/// A parsed definition with the exact text it was parsed from.
struct SharedDefinition {
  std::shared_ptr<const std::string> json;
  std::shared_ptr<const WorkflowSpec> spec;
};

class DefinitionCache {
 public:
  /// At most `capacity` definitions are kept. Default: 1024.
  explicit DefinitionCache(size_t capacity = 1024) : capacity_(capacity) {}

  /// The parsed `json`, from the cache or parsed now. Errors as parse_definition (invalid
  /// definitions are not cached).
  Result<SharedDefinition> get(std::string_view json);

  /// get(), for a definition a user submits: its text is checked against `limits` and the
  /// strict JSON rules first (a text over the size limit is never parsed), its spec against
  /// `limits` after. Errors as parse_definition(json, limits). A text that passed the strict
  /// rules once is not walked again while it is cached: the thousandth submission of a
  /// definition costs a lookup, as its parse does.
  Result<SharedDefinition> get(std::string_view json, const InputLimits& limits);

  size_t size() const;

 private:
  struct Entry {
    SharedDefinition shared;
    bool strict_json = false;  ///< its text keeps the strict JSON rules (definition_text_problems)
  };
  using Lru = std::list<Entry>;
  const size_t capacity_;
  mutable std::mutex mutex_;
  Lru lru_;  // most recently used first
  std::unordered_map<std::string_view, Lru::iterator> index_;  // keys view into lru_ entries
};

}  // namespace troupe
