// Every command of the troupe CLI: its arguments, options, help and examples, and the function
// that runs it. The parser, `troupe help` and the README's CLI reference all come from here.
#include "tools/troupe/client_commands.hpp"
#include "tools/troupe/command.hpp"
#include "tools/troupe/dev_command.hpp"
#include "tools/troupe/local_commands.hpp"
#include "tools/troupe/shell/shell_command.hpp"
#include "tools/troupe/worker_commands.hpp"

namespace troupe::cli {
namespace {

const std::string workflows = "Workflows";
const std::string async_tasks = "Tasks that complete asynchronously";
const std::string clusters = "Clusters";
const std::string tools = "Tools";

ExitStatus usage_exit(const std::string& also = "") {
  return {exit_usage, "a usage error" + (also.empty() ? "" : ", " + also)};
}
const ExitStatus unreachable_exit{exit_unreachable, "the scheduler cannot be reached"};

/// The exit codes of a command that waits for a workflow to end.
std::vector<ExitStatus> waiting_exits(const std::string& prefix = "") {
  return {{exit_ok, prefix + "the workflow succeeded"},
          {exit_failed, prefix + "the workflow failed or was stopped"},
          usage_exit("or no workflow with this id"),
          unreachable_exit,
          {exit_timed_out, prefix + "--timeout ran out before the workflow ended (it goes on)"}};
}

/// `troupe pause|resume|stop|kill ID`: the same arguments and options, its own words.
CommandSpec control(const std::string& action, const std::string& summary, const std::string& description,
                    const std::string& example) {
  return {
      .path = action,
      .section = workflows,
      .summary = summary,
      .arguments = {{"ID"}},
      .description = description,
      .options = {{"json", "", "print {\"workflowId\", \"state\"}"}},
      .connects = true,
      .examples = {example},
      .exits = {{exit_ok, "the request is recorded; the state printed is durable"},
                usage_exit("no workflow with this id, or one whose state does not allow it (a finished one)"),
                unreachable_exit},
      .run = [action](const Args& args) { return control_command(action, args); },
  };
}

/// The exit codes of retry, skip and update.
std::vector<ExitStatus> task_operation_exits(const std::string& what) {
  return {{exit_ok, what + " is recorded in the workflow's history; the states printed are durable"},
          usage_exit("no workflow with this id, a task its definition lacks, or a task the operation does not "
                     "apply to now (the message says why and what to do instead)"),
          unreachable_exit};
}

const std::string task_operation_output =
    "Prints \"ID: TASK TASK_STATE (workflow WORKFLOW_STATE)\" once the operation is recorded in the workflow's "
    "history, so a scheduler restarted after it carries it on.";

const OptionSpec task_operation_json{"json", "", "print {\"workflowId\", \"task\", \"workflowState\", \"taskState\"}"};

std::vector<ExitStatus> bench_exits() {
  return {{exit_ok, "the report was printed"}, {exit_failed, "the benchmark failed"}, usage_exit()};
}

}  // namespace

const std::vector<OptionSpec>& connection_options() {
  static const std::vector<OptionSpec> options = {
      {"address", "HOST:PORT", "the scheduler (default: $TROUPE_ADDRESS, else 127.0.0.1:7700)"},
      {"config", "CLUSTER.toml",
       "take the address from the config's scheduler node, the token from its token_file, and TLS as it says"},
      {"token-file", "F", "the cluster's token, when its config names a token_file"},
      {"tls-ca", "FILE", "speak TLS, trusting the CA certificates in FILE (the cluster's tls_ca, certs/ca.pem)"},
      {"tls-certificate", "FILE", "the client certificate to present, where the cluster requires one"},
      {"tls-key", "FILE", "its private key"},
      {"plaintext", "", "no TLS, for a scheduler whose config says plaintext (the default with --address on "
                        "a loopback address; anywhere else TLS is, trusting the system's CAs without --tls-ca)"},
  };
  return options;
}

std::vector<CommandSpec> command_table() {
  return {
      {
          .path = "submit",
          .section = workflows,
          .summary = "start a workflow from a definition file, stdin or a registered name",
          .arguments = {{"FILE.json|NAME"}},
          .description =
              "Starts the workflow defined in FILE.json (- reads stdin), or the definition registered with the "
              "scheduler as NAME (a file in its definitions directory: a word that names no file here), and prints "
              "its id once the submission is durable. A definition read here is checked as JSON first, a syntax "
              "error given as FILE:LINE:COLUMN; the scheduler lists every other problem with its JSON path.\n\n"
              "Submitting the --id of a workflow that is still open returns that run instead of starting another, "
              "so a client that lost the answer can submit again; the id of a finished workflow is refused (run it "
              "again with 'troupe rerun').",
          .options = {{"id", "ID", "the workflow's id (default: the scheduler makes one up)"},
                      {"input", "JSON|@FILE",
                       "the workflow's input, checked as JSON here (default {}); @FILE reads it from FILE, for an "
                       "input larger than a command line takes (128 KiB)"},
                      {"wait", "", "wait for the workflow to end and print how, as 'troupe result' does"},
                      {"timeout", "D", "with --wait: give up waiting after D (e.g. 30s, 10m) and exit 5"},
                      {"json", "", "print {\"workflowId\"}, or with --wait what 'troupe result --json' prints"}},
          .connects = true,
          .examples = {"troupe submit examples/workflows/diamond.json --id diamond-1 --wait  # prints "
                       "\"diamond-1 SUCCESS\"",
                       "troupe submit flow.json --input '{\"n\": 3}'  # prints the new id",
                       "troupe submit flow.json --input @input.json --wait  # the input read from a file",
                       "troupe submit diamond --id diamond-2  # the definition registered as diamond"},
          .exits = {{exit_ok, "submitted (with --wait: the workflow succeeded)"},
                    {exit_failed, "with --wait: the workflow failed or was stopped"},
                    usage_exit("a definition's problems (each with its JSON path or line and column), or bad "
                               "--input JSON (FILE:LINE:COLUMN for @FILE)"),
                    unreachable_exit,
                    {exit_timed_out, "with --wait: --timeout ran out before the workflow ended (it goes on)"}},
          .run = submit_command,
      },
      {
          .path = "result",
          .section = workflows,
          .summary = "wait for a workflow to end and print how it ended",
          .arguments = {{"ID"}},
          .description = "Waits for workflow ID to end and prints \"ID STATE\", with the reason when it did not "
                         "succeed: \"wf-1 FAILED: task 'b' failed: ExitCode:1\". Then the results of its final "
                         "tasks (those no other task depends on) that succeeded, a line each, indented: "
                         "\"TASK: JSON\". The exit code says how it ended.",
          .options = {{"timeout", "D",
                       "give up after D (e.g. 30s, 10m) and exit 5; the workflow goes on (default: wait until it "
                       "ends)"},
                      {"json", "",
                       "print {\"workflowId\", \"state\", \"stateCode\", \"detail\", \"outputs\": [{\"task\", "
                       "\"result\"}]}, each result a JSON value"}},
          .connects = true,
          .examples = {"troupe result diamond-1  # \"diamond-1 SUCCESS\", then \"  join: {...}\"",
                       "troupe result nightly-7 --timeout 10m --json"},
          .exits = waiting_exits(),
          .run = result_command,
      },
      {
          .path = "status",
          .section = workflows,
          .summary = "a workflow's state and a table of its tasks",
          .arguments = {{"ID"}},
          .description =
              "Prints workflow ID's state and a table of its tasks as its history records them, a line each: "
              "TASK; STATE, the task's state (WAITING before it is scheduled, UPSTREAM_FAILED when it will not run "
              "in this run because a task it depends on failed or was killed, or the workflow failed; NEVER_ATTEMPTED "
              "when its session ended (failed or was stopped) before it ran: it has no start or end time); ATTEMPT, "
              "its current or last attempt; WORKER, where that attempt ran; STARTED and ENDED, when it was first "
              "sent to a worker and when it ended (UTC); DURATION, from start to end, or until now while it runs; "
              "and PROGRESS / FAILURE: its current attempt's progress (0.4, 40% or 4/10 drawn as a bar), or, once "
              "it failed or was killed or while it waits to be retried, its last failure's whole message "
              "(\"SpawnFailed: cannot run '/no/such/binary': No such file or directory\"). A task waiting for a "
              "worker (DISPATCHING) says why instead: \"no live worker serves task list 'gpu'\", \"no worker of "
              "task list 'gpu' takes tasks now (2 draining/quarantined/unhealthy)\", \"all 3 workers of 'gpu' are "
              "busy\", or \"rate limited: ...\". A workflow with sessions gets a second table, a line per "
              "session: SESSION; STATE (WAITING, CREATING, ENTERING, OPEN, REESTABLISHING, CLOSING, FAILING, CLOSED "
              "or FAILED); ATTEMPT, its placement (one more per recreation); WORKER, the worker that holds it (and "
              "its resource id); ENV ENTER and ENV EXIT, those actions' outcomes; and FAILURE / WAITING FOR: why it "
              "failed, or while it looks for a worker why none has taken it (\"every worker that fits holds as "
              "many sessions as it takes (1 of 1)\").",
          .options = {{"json", "",
                       "print the same as one object: {\"workflowId\", \"state\", \"stateCode\", \"detail\", "
                       "\"tasks\": [{\"name\", \"state\", \"stateCode\", \"attempt\", \"worker\", \"failure\", "
                       "\"failureDetails\", \"failureMessage\", \"progress\", \"awaitingCompletion\", \"result\", "
                       "\"startedUs\", \"endedUs\", \"durationUs\", \"waitReason\"}], \"sessions\": [{\"name\", "
                       "\"state\", \"attempt\", \"worker\", \"resourceId\", \"envEnter\", \"envExit\", \"failure\", "
                       "\"recreateToken\", \"waitReason\"}]}; times in µs since the epoch, 0 for never, result the "
                       "task's result as a JSON value (null: none), waitReason empty unless the task or session waits "
                       "for a worker"}},
          .connects = true,
          .examples = {"troupe status diamond-1", "troupe status diamond-1 --json"},
          .exits = {{exit_ok, "the status was printed"}, usage_exit("or no workflow with this id"), unreachable_exit},
          .run = status_command,
      },
      {
          .path = "watch",
          .section = workflows,
          .summary = "follow a workflow live until it ends",
          .arguments = {{"ID"}},
          .description =
              "Follows workflow ID's history as it is recorded, until the workflow ends.\n\n"
              "On a terminal it draws the task table on the terminal's alternate screen, redrawn whenever the "
              "scheduler has recorded more, so nothing piles up in the scrollback: the workflow's line, how many "
              "tasks are in each state and the table's header stay on top, and when not every task fits, the ones "
              "that matter now are shown (failed, then active, then waiting) with a line counting the rest. Each "
              "task shows its current attempt: its progress (0.4, 40% or 4/10 is drawn as a bar), or its failure "
              "once it failed. When the workflow ends the screen comes back with the final table printed whole "
              "(Ctrl-C restores the screen too).\n\n"
              "Elsewhere (a pipe, a log file), or with --from, each event is a line; with --json a JSON object.",
          .options = {{"from", "SEQ",
                       "start at this history sequence, to carry on after a lost connection without gaps or "
                       "repeats (default 1)"},
                      {"json", "", "one JSON object per event"}},
          .connects = true,
          .examples = {"troupe watch diamond-1", "troupe watch diamond-1 --json --from 12"},
          .exits = {{exit_ok, "the workflow succeeded"},
                    {exit_failed, "the workflow failed or was stopped"},
                    usage_exit("or no workflow with this id"),
                    unreachable_exit},
          .run = watch_command,
      },
      {
          .path = "logs",
          .section = workflows,
          .summary = "a task's stdout and stderr, from the worker that ran it, live with --follow",
          .arguments = {{"ID"}, {"TASK", true}},
          .description =
              "Prints the log of TASK of workflow ID: what its last attempt (or --attempt N) wrote to stdout and "
              "stderr, interleaved as written, read through the scheduler from the worker that ran it, wherever "
              "that is. Without TASK, the log of every task that started, in definition order, each after a "
              "header line \"==> TASK (attempt N, worker W) <==\". An attempt that moved to another worker (its "
              "worker was lost or drained) shows each worker's part after such a header.\n\n"
              "With --follow it goes on while the attempt runs, printing what the task writes as it writes it, "
              "and exits once the attempt has ended and its whole log is printed; a task that has not started yet "
              "is waited for. Logs are kept on the workers (their log_dir), so a worker that is not connected "
              "cannot send one: the message says where the file is. A handler task writes no log.",
          .options = {{"attempt", "N", "the task's attempt N (default: its last)"},
                      {"follow", "", "go on while the attempt runs, until it ends"}},
          .connects = true,
          .examples = {"troupe logs diamond-1 left  # left's last attempt",
                       "troupe logs train-7 train --follow  # live, until the attempt ends",
                       "troupe logs train-7 train --attempt 2", "troupe logs diamond-1  # every task, each after a header"},
          .exits = {{exit_ok, "the log was printed (with --follow: the attempt has ended)"},
                    {exit_failed, "the worker that ran the attempt is not connected (the message says where its log "
                                  "is), or its worker could not read it"},
                    usage_exit("no workflow with this id, a task its definition lacks, an attempt it has not run, a "
                               "task that has not started (without --follow) or runs a handler"),
                    unreachable_exit},
          .run = logs_command,
      },
      {
          .path = "list",
          .section = workflows,
          .summary = "the scheduler's workflows, a page at a time",
          .description = "Lists workflows from the scheduler's index, newest first (or by id with --sort id), "
                         "without loading any of them: WORKFLOW ID, STATE (an open workflow's state as of its last "
                         "change, or how a closed one ended), CREATED (UTC) and NAME. When more match than --limit, "
                         "a last line gives the command for the next page.",
          .options = {{"state", "S",
                       "only workflows in state S: an open one's SUBMITTED, RUNNING, READY_PAUSE, PAUSED, "
                       "READY_STOP or FAILOVER; OPEN for any of those; a closed one's SUCCESS, FAILED or STOPPED; "
                       "CLOSED for any of those"},
                      {"name", "N", "only workflows of the definition named N"},
                      {"since", "D", "only workflows created within the last D (e.g. 1h)"},
                      {"until", "D", "only workflows created more than D ago"},
                      {"limit", "N", "how many (default 20)"},
                      {"sort", "ORDER", "created: newest first (the default); id: by workflow id"},
                      {"after", "CURSOR", "the page after CURSOR, as the previous page gave it (with the same --sort)"},
                      {"json", "",
                       "print {\"workflows\": [{\"workflowId\", \"name\", \"state\", \"stateCode\", \"createdUs\", "
                       "\"closedUs\"}], \"nextCursor\"}"}},
          .connects = true,
          .examples = {"troupe list --state FAILED --since 1h", "troupe list --state RUNNING --sort id",
                       "troupe list --limit 100 --json"},
          .exits = {{exit_ok, "the list was printed"}, usage_exit(), unreachable_exit},
          .run = list_command,
      },
      {
          .path = "purge",
          .section = workflows,
          .summary = "delete workflows that closed before a time",
          .description =
              "Deletes every workflow that closed before the time --before names: its history and its index "
              "record, as the cluster's `retention` does on its own. Open workflows are never purged. Prints how "
              "many were purged once that is durable. A purged workflow is unknown to status, result and rerun "
              "after, and its id can be used again.",
          .options = {{"before", "D|TIME",
                       "required: closed more than D ago (e.g. 30d), or before TIME, a UTC date or date and time "
                       "(2026-11-01 or 2026-11-01T12:00:00)"},
                      {"json", "", "print {\"purged\": N, \"closedBeforeUs\": T}"}},
          .connects = true,
          .examples = {"troupe purge --before 30d  # closed more than 30 days ago",
                       "troupe purge --before 2026-11-01"},
          .exits = {{exit_ok, "the purge is done and durable"}, usage_exit("--before missing or not a time"),
                    unreachable_exit},
          .run = purge_command,
      },
      control("pause", "start no new task of a workflow; running ones finish",
              "Pauses workflow ID: no new task starts, and running ones finish. Prints \"ID STATE\" once the "
              "pause is durable: READY_PAUSE while tasks still run, PAUSED once none does (pausing a paused "
              "workflow just says PAUSED).",
              "troupe pause diamond-1  # \"diamond-1 READY_PAUSE\""),
      control("resume", "carry on with a paused workflow",
              "Resumes paused workflow ID: its waiting tasks start again. Prints \"ID RUNNING\" once that is "
              "durable.",
              "troupe resume diamond-1"),
      control("stop", "cancel a workflow's tasks, each with a grace period",
              "Stops workflow ID: nothing new starts, and its running tasks are cancelled (SIGTERM, then SIGKILL "
              "after the cluster's kill_grace). Prints \"ID READY_STOP\" once the stop is durable; the workflow is "
              "STOPPED once each task has stopped or its grace ran out ('troupe result ID' waits for that).",
              "troupe stop diamond-1  # \"diamond-1 READY_STOP\""),
      control("kill", "stop a workflow at once",
              "Stops workflow ID at once: its running tasks get SIGKILL and count as KILLED without waiting for "
              "their workers to confirm. Prints \"ID STOPPED\" once that is durable. A kill also cuts short a "
              "stop that is waiting out its grace.",
              "troupe kill diamond-1  # \"diamond-1 STOPPED\""),
      {
          .path = "rerun",
          .section = workflows,
          .summary = "run tasks of a finished workflow again",
          .arguments = {{"ID"}},
          .description =
              "Reopens finished workflow ID (SUCCESS, FAILED or STOPPED) and runs tasks again, as fresh instances "
              "with their own attempts; the other tasks keep their outcome and results. With --from, TASK and every "
              "task downstream of it; without, every task that did not succeed (failed, killed or never run). "
              "Prints \"ID RUNNING\" once that is durable.\n\n"
              "A rerun is refused, with nothing recorded, while the workflow is open, for a task the definition "
              "lacks, when nothing is left to rerun, and when a task of the rerun depends on one outside it that "
              "did not succeed (the message says where to start instead).",
          .options = {{"from", "TASK", "TASK and every task downstream of it (default: every task that did not succeed)"},
                      {"wait", "", "wait for the workflow to end and print how, as 'troupe result' does"},
                      {"timeout", "D", "with --wait: give up waiting after D and exit 5"},
                      {"json", "", "print {\"workflowId\", \"state\"}, or with --wait what 'troupe result --json' prints"}},
          .connects = true,
          .examples = {"troupe rerun diamond-1 --from left --wait  # left and join run again",
                       "troupe rerun diamond-1  # every task that did not succeed"},
          .exits = waiting_exits("with --wait: "),
          .run = rerun_command,
      },
      {
          .path = "retry",
          .section = workflows,
          .summary = "a new attempt of a failed task while the rest of its workflow runs",
          .arguments = {{"ID"}, {"TASK"}},
          .description =
              "Starts a new attempt of TASK, which failed, was killed or ran out of time, while the rest of "
              "workflow ID runs; its downstream tasks, blocked by the failure, run once it succeeds. Its attempt "
              "numbers go on from the failed ones and its retry policy starts a fresh round. A FAILED workflow is "
              "reopened (RUNNING), and nothing that succeeded runs again (unlike 'troupe rerun'); a paused "
              "workflow records the retry and runs it on resume. " + task_operation_output + "\n\n"
              "Refused, with nothing recorded, for a task that is running or waiting (it has not failed), one "
              "that succeeded (rerun the workflow from it), one that has not run because an upstream task failed "
              "(the message names that one), and in a stopped workflow (rerun it).",
          .options = {task_operation_json},
          .connects = true,
          .examples = {"troupe retry diamond-1 left  # \"diamond-1: left SUBMITTED (workflow RUNNING)\""},
          .exits = task_operation_exits("the retry"),
          .run = retry_command,
      },
      {
          .path = "skip",
          .section = workflows,
          .summary = "mark a failed or waiting task FORCED_SUCCESS; its downstream runs",
          .arguments = {{"ID"}, {"TASK"}},
          .description =
              "Records TASK of workflow ID as FORCED_SUCCESS, with the reason given, and its downstream tasks run "
              "as if it had succeeded. For a task that failed or was killed (a FAILED workflow is reopened, as by "
              "'troupe retry'), and for one that is not on a worker: in a retry backoff, waiting in its task "
              "list, paused, or not scheduled yet; such a one becomes FORCED_SUCCESS when it would have been "
              "scheduled (WAITING until then), so what it waits for still runs first. " + task_operation_output +
              "\n\nRefused for a task on a worker (wait for its attempt to end, or stop the workflow) and for one "
              "that succeeded.",
          .options = {{"reason", "TEXT", "why, kept in the history (default: none)"}, task_operation_json},
          .connects = true,
          .examples = {"troupe skip diamond-1 left --reason 'data is cached'  # \"diamond-1: left FORCED_SUCCESS "
                       "(workflow RUNNING)\""},
          .exits = task_operation_exits("the skip"),
          .run = skip_command,
      },
      {
          .path = "update",
          .section = workflows,
          .summary = "change a task's task list, priority, timeouts or retry policy",
          .arguments = {{"ID"}, {"TASK"}},
          .description =
              "Changes the options of TASK of workflow ID from its next dispatch. An attempt on a worker keeps "
              "the timeouts it was sent with, while the new retry policy decides whether it is retried; a task "
              "waiting in its task list moves to the new one at once (how a task stuck in a task list no worker "
              "serves is sent elsewhere). A task not scheduled yet gets them when it is, and a failed task of a "
              "finished workflow for its retry or rerun. The history records what changed. " +
              task_operation_output + "\n\n"
              "The syntax of the values is checked here; what they mean, by the rules of a definition, with every "
              "problem listed (\"timeouts.heartbeat: is longer than startToClose (1m), so it could never fire\"). "
              "Refused for a task that succeeded (it has no next attempt).",
          .options = {{"task-list", "NAME", "dispatch it from this task list"},
                      {"priority", "N", "its priority within its task list (higher is dispatched first)"},
                      {"timeout", "KIND=DURATION",
                       "replace one of its timeouts, KIND scheduleToStart, startToClose, scheduleToClose or "
                       "heartbeat, with DURATION (e.g. 90s, 2h), or none to remove it",
                       true},
                      {"retry", "JSON|none",
                       "its whole new retry policy as a definition writes it ({\"maximumAttempts\": 5}; what it "
                       "leaves out takes a definition's defaults), or none for a single attempt"},
                      task_operation_json},
          .connects = true,
          .examples = {"troupe update diamond-1 train --task-list gpu --priority 5  # moved at once if it waits in "
                       "its task list",
                       "troupe update diamond-1 train --timeout startToClose=2h --retry '{\"maximumAttempts\": 5}'"},
          .exits = task_operation_exits("the update"),
          .run = update_command,
      },
      {
          .path = "complete",
          .section = async_tasks,
          .summary = "end an asyncCompletion task's invocation with a result",
          .arguments = {{"TOKEN"}, {"RESULT"}},
          .description = "Ends the invocation of an asyncCompletion task with RESULT, a JSON value, checked here "
                         "(a syntax error is given with its line and column). TOKEN is what the task was given in "
                         "$TROUPE_TASK_TOKEN. Prints a confirmation once the scheduler has recorded it.",
          .options = {{"json", "", "print {\"outcome\": \"completed\"}"}},
          .connects = true,
          .examples = {"troupe complete \"$(cat approval.token)\" '{\"approved\": true}'"},
          .exits = {{exit_ok, "the result is recorded"},
                    usage_exit("RESULT is not JSON, or the token is not valid or its invocation is no longer "
                               "current"),
                    unreachable_exit},
          .run = complete_command,
      },
      {
          .path = "fail",
          .section = async_tasks,
          .summary = "end an asyncCompletion task's invocation as failed",
          .arguments = {{"TOKEN"}, {"REASON"}},
          .description = "Ends the invocation of an asyncCompletion task as failed with REASON; the task is "
                         "retried per its retry policy. TOKEN is what the task was given in $TROUPE_TASK_TOKEN. "
                         "Prints a confirmation once the scheduler has recorded it.",
          .options = {{"details", "TEXT", "more about the failure, kept in the history"},
                      {"json", "", "print {\"outcome\": \"failed\", \"reason\"}"}},
          .connects = true,
          .examples = {"troupe fail \"$TOKEN\" Rejected --details 'not this week'"},
          .exits = {{exit_ok, "the failure is recorded"},
                    usage_exit("or the token is not valid or its invocation is no longer current"),
                    unreachable_exit},
          .run = fail_command,
      },
      {
          .path = "shell",
          .section = clusters,
          .summary = "the admin shell: live actors, diagnoses, task lists, the store",
          .description =
              "An interactive shell over the scheduler's admin interface, where every workflow, task, session, "
              "worker and task list is a live actor: `actors [KIND] [--sort mailbox|age]` lists them with state, "
              "mailbox depth, timers, age and what each waits for; `actor ID` shows one with its model, timers and "
              "last events; `diagnose WORKFLOW` says why a workflow is not moving; `history WORKFLOW [--from N]`, "
              "`workflows`, `tasklists` (queues by priority, credits per worker, rate limits), `sessions` and "
              "`store` (sizes, memtables, compactions, write stalls, group commit). Every other troupe command "
              "that talks to a scheduler runs in it too, with the shell's connection: status, pause, resume, stop, "
              "workers, worker drain ...\n\n"
              "Lines are edited with libedit: history (kept in ~/.troupe_history), Tab completes commands and ids, "
              "`help COMMAND` explains one. With -c it runs one command and exits with its code, for scripts; with "
              "its standard input not a terminal, it runs each line of it.",
          .options = {{"command", "COMMAND", "run this one command and exit with its exit code", false, "c"},
                      {"json", "", "every command answers in one line of JSON"}},
          .connects = true,
          .examples = {"troupe shell", "troupe shell -c 'actors task --sort mailbox'",
                       "troupe shell -c 'diagnose diamond-1' --json"},
          .exits = {{exit_ok, "the command (or the last line) succeeded"},
                    {exit_failed, "the command failed (as the same troupe command would)"},
                    usage_exit("or an unknown id"),
                    unreachable_exit},
          .run = shell_command,
      },
      {
          .path = "workers",
          .section = clusters,
          .summary = "every worker that ever registered, with status, health and load",
          .description = "Lists every worker the scheduler has a record of, live or not: NAME, STATUS (STARTED, "
                         "NOT_RESPONDING, STOPPING, STOPPED, DRAINING, DRAINED, QUARANTINED), HEALTH (of its live "
                         "process), HOST, PID, TASK LISTS with used/free slots, RUNNING invocations, the age of its "
                         "last HEARTBEAT and its FAILURES in a row. A drained or quarantined worker gets a line "
                         "saying how and until when.",
          .options = {{"json", "", "print {\"workers\": [...]}, each as `troupe worker NAME --json` prints it"}},
          .connects = true,
          .examples = {"troupe workers", "troupe workers --json"},
          .exits = {{exit_ok, "the list was printed"}, usage_exit(), unreachable_exit},
          .run = workers_command,
      },
      {
          .path = "worker",
          .section = clusters,
          .summary = "one worker in full; drain, undrain or forgive it",
          // Optional to the parser, which would otherwise take `drain` of `worker drain NAME` for
          // the name; the command asks for it.
          .arguments = {{"NAME", true}},
          .description = "Shows one worker: its worker id, status and standing (a drain and its options, a "
                         "quarantine and when it ends), health, host and pid, task lists, the invocations it runs, "
                         "its last heartbeat, its registrations, its failures in a row and the invocations it ran "
                         "lately. With --history, its journal too: every registration and health change.",
          .options = {{"history", "", "also its journal of registrations and health changes"},
                      {"json", "", "print the worker as JSON"}},
          .connects = true,
          .examples = {"troupe worker worker-1", "troupe worker worker-1 --history"},
          .exits = {{exit_ok, "printed"}, usage_exit("or no worker of that name has registered"), unreachable_exit},
          .run = worker_command,
      },
      {
          .path = "worker drain",
          .summary = "a worker takes no new tasks; what it runs finishes or moves",
          .arguments = {{"NAME"}},
          .description = "Drains a worker: it gets no new tasks from now on. By default the drain is eventual: what "
                         "the worker runs finishes, then it is DRAINED. With --deadline, what still runs then is "
                         "interrupted. With --immediate, what it runs is stopped at once (the cluster's kill_grace) "
                         "and runs again on another worker as INTERRUPTED, its attempt kept. The sessions it holds "
                         "move to other workers, envExit first. Once drained the worker "
                         "stays up and idle, or with --exit stops and exits 0. The drain is kept in the worker's "
                         "record: it outlives restarts of the worker and of the scheduler until `troupe worker "
                         "undrain`. A worker that is not running is drained at once.",
          .options = {{"immediate", "", "interrupt what it runs now rather than wait for it"},
                      {"deadline", "D", "an eventual drain interrupts what still runs after D (e.g. 10m)"},
                      {"exit", "", "the worker process stops once drained"},
                      {"json", "", "print the worker as the drain left it, as JSON"}},
          .connects = true,
          .examples = {"troupe worker drain worker-1", "troupe worker drain worker-1 --deadline 10m --exit",
                       "troupe worker drain worker-1 --immediate"},
          .exits = {{exit_ok, "the drain is recorded; the status printed is the worker's now"},
                    usage_exit("or no worker of that name has registered"), unreachable_exit},
          .run = worker_drain_command,
      },
      {
          .path = "worker undrain",
          .summary = "a draining or drained worker takes tasks again",
          .arguments = {{"NAME"}},
          .description = "Ends a drain: the worker gets tasks again (while it is healthy). A quarantined worker is "
                         "not drained: `troupe worker forgive` ends a quarantine, and undrain refuses it.",
          .options = {{"json", "", "print the worker as JSON"}},
          .connects = true,
          .examples = {"troupe worker undrain worker-1"},
          .exits = {{exit_ok, "the worker takes tasks again"},
                    usage_exit("or no worker of that name has registered, or it is quarantined"), unreachable_exit},
          .run = worker_undrain_command,
      },
      {
          .path = "worker forgive",
          .summary = "end a worker's quarantine and forget its failures",
          .arguments = {{"NAME"}},
          .description = "A worker whose attempts failed quarantine_failures times in a row (each of a different "
                         "task) is QUARANTINED for a backoff that doubles with each quarantine. Forgiving it ends the "
                         "quarantine and forgets its failures in a row, so the next quarantine starts from the "
                         "configured backoff.",
          .options = {{"json", "", "print the worker as JSON"}},
          .connects = true,
          .examples = {"troupe worker forgive worker-1"},
          .exits = {{exit_ok, "the worker takes tasks again"}, usage_exit("or no worker of that name has registered"),
                    unreachable_exit},
          .run = worker_forgive_command,
      },
      {
          .path = "dev",
          .section = clusters,
          .summary = "a scheduler and a worker in this process, for trying troupe",
          .description =
              "Runs a node with both roles in the foreground until Ctrl-C (SIGINT or SIGTERM): histories in "
              "DIR/history, task logs in DIR/logs, and the config it runs written to DIR/dev.toml (so the client "
              "commands find it with --config DIR/dev.toml). Started again on the same directory it resumes the "
              "open workflows from their histories; a task that was running is retried per its retry policy.",
          .options = {{"listen", "HOST:PORT", "where clients connect (default 127.0.0.1:7700)"},
                      {"dir", "D", "the data directory (default ./.troupe)"},
                      {"task-lists", "LIST",
                       "the task lists served and their slots (default default=8,io=2: the lists the examples use)"},
                      {"sync", "BOOL", "sync the history before acknowledging (default true)"},
                      {"token-file", "F", "require clients and workers to present this file's secret"},
                      {"definitions", "DIR", "definitions (*.json) that clients may submit by name"},
                      {"metrics", "HOST:PORT",
                       "serve Prometheus metrics at http://HOST:PORT/metrics (port 0: a free port, printed)"}},
          .examples = {"troupe dev  # on 127.0.0.1:7700, data in ./.troupe",
                       "troupe dev --listen 127.0.0.1:7800 --dir /tmp/t --task-lists default=4,gpu=1 --sync false",
                       "troupe dev --definitions examples/workflows  # then 'troupe submit diamond'"},
          .exits = {{exit_ok, "stopped cleanly by a signal"},
                    {exit_failed, "its worker had to die (the scheduler told it to)"},
                    usage_exit(),
                    {exit_unreachable, "the node could not start (its port in use, its data directory locked)"},
                    {exit_store_failed, "the history store failed a write (a full disk) and the node stopped"}},
          .run = dev_command,
      },
      {
          .path = "up",
          .section = clusters,
          .summary = "start the nodes of a cluster config on this machine",
          .arguments = {{"CLUSTER.toml"}},
          .description =
              "Starts the nodes of the config (or those named by --node) that are not running yet, each a detached "
              "troupe-node: schedulers first, awaited until they accept connections, then workers, awaited until "
              "they report ready. Their pid files and logs go to .troupe-run/CLUSTER/ beside the config; nodes "
              "already running are left alone. Prints a table of the nodes (roles, pid, address, log, status) and, "
              "for a node that did not come up, the end of its log.",
          .options = {{"node", "NAME", "only this node", true},
                      {"timeout", "D", "how long a node may take to come up (default 30s)"},
                      {"node-binary", "F", "the troupe-node to run (default: the one beside troupe)"},
                      {"json", "", "print {\"nodes\": [{\"node\", \"roles\", \"pid\", \"address\", \"log\", \"status\", "
                                   "\"ok\", \"logTail\"}]}"}},
          .examples = {"troupe up examples/cluster.toml",
                       "troupe up examples/cluster.toml --node scheduler --node worker-1"},
          .exits = {{exit_ok, "every node is up"},
                    {exit_failed, "a node did not come up (the end of its log is printed)"},
                    usage_exit("or a bad config (every problem is listed)")},
          .run = up_command,
      },
      {
          .path = "certs",
          .section = clusters,
          .summary = "make the TLS certificates a cluster config needs, where missing",
          .arguments = {{"CLUSTER.toml"}},
          .description =
              "Makes the cluster's own certificate authority and a certificate per node, under certs/ beside the "
              "config, where the config leaves its TLS paths to their defaults and the files are missing: "
              "certs/ca.pem and ca.key (the CA, keep ca.key secret), then certs/NODE.pem and NODE.key for every "
              "node, signed by it (a scheduler's names its listen host, localhost, 127.0.0.1 and ::1). Keys are "
              "EC P-256, mode 0600. Files that exist are left alone; 'troupe up' does this before it starts "
              "anything. With a PKI of your own, set tls_ca, tls_certificate and tls_key in the config instead.",
          .examples = {"troupe certs examples/cluster.toml"},
          .exits = {{exit_ok, "every file the config needs is there"},
                    {exit_failed, "a file could not be made (the message says which and why)"},
                    usage_exit("or a bad config")},
          .run = certs_command,
      },
      {
          .path = "down",
          .section = clusters,
          .summary = "stop the nodes that 'troupe up' started",
          .arguments = {{"CLUSTER.toml"}},
          .description = "Stops the nodes of the config that 'troupe up' started (or those named by --node), "
                         "workers first: SIGTERM, then SIGKILL after the grace. Removes their pid files, and prints "
                         "the table of nodes.",
          .options = {{"node", "NAME", "only this node", true},
                      {"grace", "D", "how long a node may take to stop before it gets SIGKILL (default 10s)"},
                      {"json", "", "print {\"nodes\": [...]}, as 'troupe up --json' does"}},
          .examples = {"troupe down examples/cluster.toml", "troupe down examples/cluster.toml --node worker-1 --grace 2s"},
          .exits = {{exit_ok, "every node is stopped"},
                    {exit_failed, "a node could not be stopped"},
                    usage_exit("or a bad config")},
          .run = down_command,
      },
      {
          .path = "describe",
          .section = tools,
          .summary = "draw a workflow's DAG, or troupe's state machines",
          .arguments = {{"ID"}},
          .description =
              "Draws workflow ID's DAG as a Graphviz graph: a box per task with its state (and attempt, after a "
              "first), filled with its state's colour (SUCCESS palegreen, FORCED_SUCCESS darkseagreen, RUNNING "
              "lightskyblue, waiting for a worker lightcyan, PAUSED khaki, FAILURE salmon, KILLED orange, "
              "UPSTREAM_FAILED mistyrose, NEVER_ATTEMPTED lightgray, FAILOVER gold, WAITING white); an arrow from "
              "each task to the tasks that depend on it; the tasks of each session inside a box named after the "
              "session and its state. A task's failure or wait reason is its tooltip. --format dot (the default) "
              "prints the graph; --format svg renders it with Graphviz's dot, which must be installed.\n\n"
              "'troupe describe states' describes troupe's state machines instead.",
          .options = {{"format", "F", "dot (the default) or svg"}},
          .connects = true,
          .examples = {"troupe describe diamond-1 --format svg > diamond-1.svg",
                       "troupe describe diamond-1 | dot -Tpng -o diamond-1.png"},
          .exits = {{exit_ok, "printed"},
                    {exit_failed, "--format svg, and Graphviz's dot is not installed or failed"},
                    usage_exit("or no workflow with this id"),
                    unreachable_exit},
          .run = describe_workflow_command,
      },
      {
          .path = "describe states",
          .summary = "every transition of the workflow, task, worker and session state machines",
          .description = "Prints every transition of the workflow, task, worker health, worker standing and session "
                         "state machines with the actions it runs, in order: as Markdown tables (the default), "
                         "Graphviz graphs or JSON. Every pair not listed is refused with \"EVENT is not allowed in "
                         "state STATE\" (the worker and session tables list every pair).",
          .options = {{"format", "F", "markdown (the default), dot or json"},
                      {"json", "", "the same as --format json"}},
          .examples = {"troupe describe states", "troupe describe states --format dot | dot -Tsvg -o states.svg"},
          .exits = {{exit_ok, "printed"}, usage_exit()},
          .run = describe_states_command,
      },
      {
          .path = "bench",
          .section = tools,
          .summary = "the benchmarks: store, chain, fanout and idle",
          .arguments = {{"WORKLOAD"}},
          .description = "Each benchmark prints one JSON object on stdout (with the build type, storage_sync, the "
                         "core count and the git revision) and a summary for people on stderr. Build them in "
                         "release.",
      },
      {
          .path = "bench store",
          .summary = "STORE: durable appends through the history store",
          .description = "Durable 200-byte appends through the history store from 1, 8 and 64 concurrent "
                         "appenders, against the raw rate of a 4 KiB write and fdatasync on the same file system.",
          .options = {{"seconds", "S", "the length of each run (default 10)"},
                      {"appenders", "LIST", "the appender counts (default 1,8,64)"},
                      {"dir", "DIR", "where the stores go (default ./.troupe/bench-PID, removed after)"},
                      {"sync", "BOOL", "sync every commit (default true)"},
                      {"event-bytes", "N", "the stored size of each event (default 200)"}},
          .examples = {"troupe bench store", "troupe bench store --seconds 3 --appenders 64 --dir /mnt/ssd/bench"},
          .exits = bench_exits(),
          .run = bench_store_command,
      },
      {
          .path = "bench chain",
          .summary = "CHAIN: workflows of chained noop tasks against real nodes",
          .description = "W workflows of K chained noop tasks, the client keeping C in flight, against a scheduler "
                         "process and a worker process (troupe-node, found beside troupe) started on 127.0.0.1 from "
                         "a generated config; or, with --in-process, on the actor core in this process.",
          .options = {{"workflows", "W", "how many workflows (default 5000)"},
                      {"tasks", "K", "tasks per workflow (default 10)"},
                      {"in-flight", "C", "workflows the client keeps running (default 64)"},
                      {"slots", "N", "the worker's slots (default 256)"},
                      {"dir", "DIR", "where the nodes' data goes (default ./.troupe/bench-PID, removed after)"},
                      {"sync", "BOOL", "sync every commit (default true)"},
                      {"node-binary", "F", "the troupe-node to run (default: the one beside troupe)"},
                      {"in-process", "", "run on the actor core in this process instead (local executor, durable "
                                         "history, no RPC)"},
                      {"metrics", "", "both nodes serve Prometheus metrics (and so count what they do), to measure "
                                      "what that costs"}},
          .examples = {"troupe bench chain", "troupe bench chain --workflows 1000 --tasks 5 --in-flight 16 --sync false",
                       "troupe bench chain --in-process"},
          .exits = bench_exits(),
          .run = bench_chain_command,
      },
      {
          .path = "bench fanout",
          .summary = "FANOUT: root, N parallel noop tasks, join; against real nodes",
          .description = "R runs, one after another, of root -> N parallel noop tasks -> join, on a scheduler and "
                         "a worker process.",
          .options = {{"width", "N", "the parallel tasks (default 1000)"},
                      {"runs", "R", "how many runs (default 5)"},
                      {"slots", "N", "the worker's slots (default 256)"},
                      {"dir", "DIR", "where the nodes' data goes (default ./.troupe/bench-PID, removed after)"},
                      {"sync", "BOOL", "sync every commit (default true)"},
                      {"node-binary", "F", "the troupe-node to run (default: the one beside troupe)"},
                      {"metrics", "", "both nodes serve Prometheus metrics (and so count what they do), to measure "
                                      "what that costs"}},
          .examples = {"troupe bench fanout", "troupe bench fanout --width 100 --runs 3"},
          .exits = bench_exits(),
          .run = bench_fanout_command,
      },
      {
          .path = "bench idle",
          .summary = "IDLE: memory per running workflow, in process",
          .description = "A workflows whose task sleeps 10 minutes, in this process: the memory (RSS) per running "
                         "workflow and the start rate.",
          .options = {{"workflows", "A", "how many workflows (default 100000)"},
                      {"dir", "DIR", "where the history goes (default ./.troupe/bench-PID, removed after)"},
                      {"sync", "BOOL", "sync every commit (default true)"}},
          .examples = {"troupe bench idle --workflows 10000"},
          .exits = bench_exits(),
          .run = bench_idle_command,
      },
      {
          .path = "version",
          .section = tools,
          .summary = "the build's git revision and type",
          .description = "Prints the git revision troupe was built from and the build type. Also 'troupe --version'.",
          .options = {{"json", "", "print {\"revision\", \"buildType\"}"}},
          .examples = {"troupe version"},
          .exits = {{exit_ok, "printed"}},
          .run = version_command,
      },
  };
}

}  // namespace troupe::cli
