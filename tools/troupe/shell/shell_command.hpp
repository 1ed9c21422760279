// `troupe shell [-c COMMAND] [--json]`: the admin shell over a scheduler's live actors.
#pragma once

#include "tools/troupe/args.hpp"

namespace troupe::cli {

int shell_command(const Args& args);

}  // namespace troupe::cli
