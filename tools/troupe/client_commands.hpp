// The client commands of the troupe CLI: talk to a scheduler's Gateway through the C++ client.
// Each takes its parsed arguments (the command table in command_table.cpp says which) and
// returns an exit code of exit_codes.hpp.
#pragma once

#include <string>

#include "tools/troupe/args.hpp"

namespace troupe::cli {

/// `troupe submit FILE.json|NAME [--id ID] [--input JSON|@FILE] [--wait] [--timeout D] [--json]`
int submit_command(const Args& args);

/// `troupe result ID [--timeout D] [--json]`
int result_command(const Args& args);

/// `troupe status ID [--json]`: the workflow's state and a table of its tasks.
int status_command(const Args& args);

/// `troupe pause|resume|stop|kill ID [--json]`: prints the state the workflow is in once durable.
int control_command(const std::string& action, const Args& args);

/// `troupe rerun ID [--from TASK] [--wait] [--timeout D] [--json]`: reopens a finished workflow
/// and runs the task and its descendants again (no --from: every task that did not succeed).
int rerun_command(const Args& args);

/// `troupe retry WF TASK [--json]`: a new attempt of a failed task while the workflow runs.
int retry_command(const Args& args);

/// `troupe skip WF TASK [--reason TEXT] [--json]`: the task FORCED_SUCCESS, its downstream runs.
int skip_command(const Args& args);

/// `troupe update WF TASK [--task-list NAME] [--priority N] [--timeout KIND=DURATION]...
/// [--retry JSON|none] [--json]`: the task's options from its next dispatch.
int update_command(const Args& args);

/// `troupe list [--state S] [--name N] [--since D] [--until D] [--limit N] [--sort created|id]
/// [--after CURSOR] [--json]`
int list_command(const Args& args);

/// `troupe purge --before D|TIME [--json]`: deletes the workflows closed before that time.
int purge_command(const Args& args);

/// `troupe watch ID [--from SEQ] [--json]`: the live task table until the workflow ends (a
/// line per event when stdout is not a terminal, a JSON object per event with --json).
int watch_command(const Args& args);

/// `troupe logs WORKFLOW [TASK] [--attempt N] [--follow]`: a task attempt's log from the worker
/// that ran it (every task's that started, each after a header, without TASK).
int logs_command(const Args& args);

/// `troupe describe WORKFLOW [--format dot|svg]`: the workflow's DAG, coloured by task state.
int describe_workflow_command(const Args& args);

/// `troupe complete TOKEN RESULT [--json]`: RESULT is checked as JSON before it is sent.
int complete_command(const Args& args);

/// `troupe fail TOKEN REASON [--details TEXT] [--json]`
int fail_command(const Args& args);

}  // namespace troupe::cli
