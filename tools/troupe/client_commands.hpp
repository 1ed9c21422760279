// The client commands of the troupe CLI: talk to a scheduler's Gateway through the C++ client.
// Exit codes: 0 success, 1 the workflow failed or was stopped, 2 usage or input error (a bad
// definition, an unknown workflow id), 3 the scheduler cannot be reached.
#pragma once

#include "tools/troupe/args.hpp"

namespace troupe::cli {

/// `troupe submit FILE.json [--id ID] [--input JSON] [--wait] [--timeout D] [--json]`
int submit_command(const Args& args);

/// `troupe result ID [--timeout D] [--json]`
int result_command(const Args& args);

/// `troupe status ID [--json]`: the workflow's state and a table of its tasks.
int status_command(const Args& args);

/// `troupe pause|resume|stop ID [--json]`: prints the state the workflow is in once durable.
int control_command(const std::string& action, const Args& args);

/// `troupe rerun ID [--from TASK] [--wait] [--json]`: reopens a finished workflow and runs the
/// task and its descendants again (no --from: every task that did not succeed).
int rerun_command(const Args& args);

/// `troupe list [--state S] [--name N] [--since D] [--until D] [--limit N] [--after CURSOR] [--json]`
int list_command(const Args& args);

/// `troupe watch ID [--from SEQ] [--json]`: the live task table until the workflow ends (a
/// line per event when stdout is not a terminal, a JSON object per event with --json).
int watch_command(const Args& args);

/// `troupe complete TOKEN RESULT` and `troupe fail TOKEN REASON [--details TEXT]`.
int task_completion_command(const std::string& action, const Args& args);

/// The options every client command takes, for the usage text.
inline constexpr const char* client_options_usage =
    "                  --address HOST:PORT  the scheduler (default $TROUPE_ADDRESS, else 127.0.0.1:7700)\n"
    "                  --config CLUSTER.toml  take the address from the config's scheduler node,\n"
    "                                       and the token from its token_file\n"
    "                  --token-file F       the cluster's token, when its config names a token_file\n";

}  // namespace troupe::cli
