// Small files replaced atomically and durably: after a crash a file holds its old content or
// the new one, never a part, and a written file survives a power loss.
#pragma once

#include <string>
#include <sys/types.h>

#include "schema/result.hpp"

namespace troupe::runtime {

/// Writes `text` to `path` (in directory `dir`) through a temporary file beside it: write,
/// fsync, rename over `path`, fsync `dir`. The file gets permission bits `mode` (before the
/// umask). UNAVAILABLE, naming the file and the system's reason, when a step fails.
Result<void> write_durably(const std::string& dir, const std::string& path, const std::string& text,
                           mode_t mode = 0644);

}  // namespace troupe::runtime
