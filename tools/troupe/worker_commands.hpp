// The worker commands of the troupe CLI: list and show workers, drain, undrain and forgive.
#pragma once

#include "tools/troupe/args.hpp"

namespace troupe::cli {

/// `troupe workers [--json]`: every worker that ever registered, one line each.
int workers_command(const Args& args);
/// `troupe worker NAME [--history] [--json]`: one worker in full, with what it ran lately.
int worker_command(const Args& args);
/// `troupe worker drain NAME [--immediate] [--deadline D] [--exit] [--json]`.
int worker_drain_command(const Args& args);
/// `troupe worker undrain NAME [--json]`.
int worker_undrain_command(const Args& args);
/// `troupe worker forgive NAME [--json]`.
int worker_forgive_command(const Args& args);

}  // namespace troupe::cli
