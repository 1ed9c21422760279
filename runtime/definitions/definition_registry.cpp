// The registry of definition files.
#include "runtime/definitions/definition_registry.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "schema/definition.hpp"

namespace troupe::runtime {
namespace {

namespace fs = std::filesystem;

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Errc::NOT_FOUND, "cannot read definition file " + path);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

}  // namespace

bool is_definition_name(std::string_view text) {
  // A name is never blank. Text that opens an object, an array or a string is JSON, so that
  // JSON which is no definition (a file holding []) is refused as such, not looked up.
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] != '{' && text[first] != '[' && text[first] != '"';
}

DefinitionRegistry::DefinitionRegistry(std::string dir) : dir_(std::move(dir)) {}

Result<void> DefinitionRegistry::rescan() {
  std::error_code ec;
  fs::directory_iterator it(dir_, ec);
  if (ec) return fail(Errc::UNAVAILABLE, "cannot list the definitions directory " + dir_ + ": " + ec.message());
  std::vector<std::string> files;
  for (const auto& entry : it) {
    if (entry.path().extension() == ".json" && entry.is_regular_file(ec)) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  paths_.clear();
  unreadable_.clear();
  for (const auto& path : files) {
    auto text = read_file(path);
    auto spec = text ? parse_definition(*text) : Result<WorkflowSpec>(text.error());
    if (!spec) {
      const auto& message = spec.error().message;
      unreadable_.push_back(fs::path(path).filename().string() + ": " + message.substr(0, message.find('\n')));
      continue;
    }
    paths_[spec->name].push_back(path);
  }
  return ok();
}

Result<std::string> DefinitionRegistry::json_of(const std::string& name) {
  auto not_found = [&] {
    std::string message = "no definition named '" + name + "' in " + dir_;
    if (!unreadable_.empty()) {
      message += " (" + std::to_string(unreadable_.size()) + (unreadable_.size() == 1 ? " file" : " files") +
                 " there did not parse: " + unreadable_.front() + (unreadable_.size() > 1 ? "; ..." : "") + ")";
    }
    return fail(Errc::NOT_FOUND, message);
  };
  // What the last scan found may be stale (a file added, moved or renamed since): on any
  // surprise, scan once more and look again.
  for (bool rescanned = false;; rescanned = true) {
    if (rescanned) {
      if (auto scanned = rescan(); !scanned) return scanned.error();
    }
    auto known = paths_.find(name);
    if (known == paths_.end()) {
      if (rescanned) return not_found();
      continue;
    }
    if (known->second.size() > 1) {
      std::string files;
      for (const auto& p : known->second) files += (files.empty() ? "" : ", ") + p;
      return fail(Errc::INVALID_ARGUMENT,
                  "definition '" + name + "' is defined by more than one file (" + files + "): keep one");
    }
    const std::string& path = known->second.front();
    auto text = read_file(path);
    if (!text) {
      if (rescanned) return text.error();
      continue;
    }
    auto spec = parse_definition(*text);
    if (!spec) {
      return fail(Errc::INVALID_ARGUMENT, "definition file " + path + " does not parse:\n" + spec.error().message);
    }
    if (spec->name == name) return std::move(*text);
    if (rescanned) return not_found();  // the file now defines another name
  }
}

Result<std::vector<DefinitionRegistry::Entry>> DefinitionRegistry::list() {
  if (auto scanned = rescan(); !scanned) return scanned.error();
  std::vector<Entry> out;
  for (const auto& [name, files] : paths_) out.push_back(Entry{name, files.front()});
  return out;
}

}  // namespace troupe::runtime
