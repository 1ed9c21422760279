// Registered definitions: a directory of workflow definition files (*.json) that clients start
// by name instead of sending the JSON, as Airflow's DAG folder. A file's definition is named by
// its "name" field. Files are read when asked for, so an edited file takes effect on the next
// start, and a new one is found by rescanning the directory when a name is not known yet.
// Single-threaded: one owner calls it (the scheduler's client bridge).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "schema/result.hpp"

namespace troupe::runtime {

/// Whether `text` names a registered definition rather than holding JSON: it is not blank and
/// does not start (after whitespace) with '{', '[' or '"'.
bool is_definition_name(std::string_view text);

class DefinitionRegistry {
 public:
  /// Definitions in `dir` (its *.json files, not its subdirectories).
  explicit DefinitionRegistry(std::string dir);

  /// The JSON of the definition named `name`, read from its file now. NOT_FOUND (naming the
  /// directory, and files that did not parse) when no file defines it; INVALID_ARGUMENT when
  /// two files do, or its file no longer parses.
  Result<std::string> json_of(const std::string& name);

  struct Entry {
    std::string name;
    std::string path;
  };
  /// Every definition the directory holds now, by name; files that do not parse are left out.
  Result<std::vector<Entry>> list();

  const std::string& dir() const { return dir_; }

 private:
  /// Reads every file of the directory again.
  Result<void> rescan();

  std::string dir_;
  std::map<std::string, std::vector<std::string>> paths_;  // name -> the files defining it
  std::vector<std::string> unreadable_;                    // "file: first problem"
};

}  // namespace troupe::runtime
