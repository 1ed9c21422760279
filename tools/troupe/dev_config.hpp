// The one-node cluster config that `troupe dev` writes and runs, emitted with toml++ so that
// no value given on the command line (an address, a path, a task list name) can change the
// file's structure: every string is written as a TOML string, escaped as TOML requires.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "schema/result.hpp"

namespace troupe::cli {

struct DevConfig {
  std::string listen;  ///< HOST:PORT as given; the config's own validation checks it
  std::string dir;     ///< the data directory, absolute
  std::vector<std::pair<std::string, int64_t>> task_lists;  ///< name and slots, in the order given
  bool sync = true;
  std::string token_file;   ///< absolute; empty: none
  std::string definitions;  ///< absolute; empty: none
  std::string metrics;      ///< HOST:PORT as given; empty: no metrics server
};

/// "default=8,io=2" as (name, slots) pairs; INVALID_ARGUMENT naming the entry that is not
/// NAME=SLOTS. Names are checked by the config's own validation.
Result<std::vector<std::pair<std::string, int64_t>>> parse_task_lists(const std::string& list);

/// The TOML text of `config`: one node named "dev" with the scheduler and worker roles, its
/// histories in DIR and task logs in DIR/logs.
std::string dev_config_toml(const DevConfig& config);

}  // namespace troupe::cli
