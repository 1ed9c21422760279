// `troupe dev`: the whole runtime in one process, for trying troupe and developing workflows.
#pragma once

#include "tools/troupe/args.hpp"

namespace troupe::cli {

/// `troupe dev [--listen HOST:PORT] [--dir D] [--task-lists NAME=SLOTS,...] [--sync BOOL]`:
/// one node with the scheduler and worker roles, its history and task logs under D
/// (./.troupe), serving clients on 127.0.0.1:7700. Runs until SIGINT or SIGTERM; started
/// again on the same directory it resumes the open workflows from their histories.
int dev_command(const Args& args);

/// The usage lines of `dev`.
inline constexpr const char* dev_usage =
    "  dev             scheduler and worker in this process, until Ctrl-C; its histories and task\n"
    "                  logs are kept under --dir, and a restart resumes the open workflows\n"
    "                  --listen HOST:PORT   where clients connect (default 127.0.0.1:7700)\n"
    "                  --dir D              data directory (default ./.troupe)\n"
    "                  --task-lists LIST    task lists served and their slots (default\n"
    "                                       default=8,io=2: the lists the examples use)\n"
    "                  --sync BOOL          sync the history before acknowledging (default true)\n"
    "                  --token-file F       require clients and workers to present this secret\n"
    "                  --definitions DIR    definitions (*.json) clients may submit by name\n";

}  // namespace troupe::cli
