# The scheduler's bootstrap interface: everything talks to a scheduler through a Gateway.
# Evolution: append fields and methods with the next @N; never renumber, retype or reuse one.
#
# JSON is Text; the older Data fields carry the same UTF-8 bytes and are kept for compatibility.
# Every JSON value a client sends or receives has a Text field. Where an older field carries it
# as Data (completeTask's `result`, TaskDescription's `progress`), a Text twin sits beside it
# (`resultJson`, `progressText`): prefer the twin; the scheduler accepts either. History events
# (history.capnp, what watch streams) are stored as written, so their Data fields (a
# submission's and a task's input, a heartbeat's progress, a task's result) have no twins: read
# them as UTF-8 text.
#
# States are enums. Each Text `state` field (kept for compatibility, spelled in capitals:
# READY_PAUSE) has an enum twin beside it, WorkflowState or TaskState, listing every value.
# `unknown` (0) is what a scheduler older than the enum leaves there: read the Text then.
@0xf6951f4dedf5cd52;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

using Common = import "common.capnp";
using Worker = import "worker.capnp";
using History = import "history.capnp";
using Admin = import "admin.capnp";

interface Gateway {
  client @0 (token :Text) -> (client :ClientService, error :Common.Error);
  # `token`: the cluster's secret (its token file) when the cluster has one; refused otherwise.
  registerWorker @1 (info :Worker.WorkerInfo, control :Worker.WorkerControl, token :Text)
      -> (registration :Worker.Registration, error :Common.Error);
  # Refused (error set) while another live instance holds the shard id, or for a wrong token.
  admin @2 (token :Text) -> (admin :Admin.AdminService, error :Common.Error);
  # The admin interface (admin.capnp), with the same token as `client`.
}

enum WorkflowState {
  # A workflow's state; the Text twins spell it in capitals (READY_PAUSE).
  unknown @0;                        # not filled in (an older scheduler): read the Text state
  submitted @1;                      # accepted and durable, not started yet
  running @2;                        # its tasks are scheduled as their dependencies succeed
  readyPause @3;                     # pause asked: nothing new starts; PAUSED once none is active
  paused @4;
  readyStop @5;                      # stop or kill asked: active tasks are being cancelled
  stopped @6;                        # ended by a stop or kill
  success @7;                        # ended: every task of the run succeeded
  failed @8;                         # ended: a task failed or was killed, and nothing else can run
  failover @9;                       # being taken back by a restarted scheduler
}

enum TaskState {
  # A task's state; the Text twins spell it in capitals (UPSTREAM_FAILED).
  unknown @0;                        # not filled in (an older scheduler): read the Text state
  waiting @1;                        # not scheduled: a task it depends on has not succeeded yet
  upstreamFailed @2;                 # will not run in this run: a task it depends on (directly or
                                     # not) failed or was killed, or the workflow failed (Airflow's
                                     # upstream_failed). A rerun may run it again.
  submitted @3;                      # scheduled, not started
  delayExecution @4;                 # waiting out a retry backoff
  dispatching @5;                    # in its task list, waiting for a worker slot
  dispatched @6;                     # sent to a worker, not yet confirmed running
  running @7;
  paused @8;
  killed @9;                         # ended: cancelled by a stop or kill
  failure @10;                       # ended: failed, with no attempt left
  success @11;                       # ended: succeeded
  forcedSuccess @12;                 # ended: marked succeeded by an operator
  failover @13;                      # its worker was lost; about to be retried or failed
  neverAttempted @14;                # ended: its session failed before it ran, so it will not run
                                     # in this run (Deadline's NEVER_ATTEMPTED); no start or end time
}

struct TaskOutput {
  task @0 :Text;                     # the task's name
  resultJson @1 :Text;               # its result (JSON text as the task gave it; empty: none)
}

struct WorkflowResult {
  workflowId @0 :Text;
  state @1 :Text;                    # SUCCESS, FAILED, STOPPED, ...
  detail @2 :Text;                   # why a failed workflow failed: the task, the failure's
                                     # reason and its details
  workflowState @3 :WorkflowState;   # `state` as an enum
  outputs @4 :List(TaskOutput);      # the results of its final tasks (those no other task depends
                                     # on) that succeeded, in definition order
}

struct TaskDescription {
  name @0 :Text;
  state @1 :Text;                    # a task state, WAITING before the task was scheduled, or
                                     # UPSTREAM_FAILED (see TaskState)
  attempt @2 :UInt32;                # its current or last attempt, from 1; 0: never started
  worker @3 :Text;                   # the shard of its current or last invocation
  failure @4 :Text;                  # the reason of its last failure, if any ("SpawnFailed")
  progress @5 :Data;                 # its last heartbeat's progress (see progressText)
  awaitingCompletion @6 :Bool;       # asyncCompletion: handed off, waiting for its token
  taskState @7 :TaskState;           # `state` as an enum
  failureDetails @8 :Text;           # the details of its last failure, for people ("cannot run
                                     # '/no/such/binary': No such file or directory")
  resultJson @9 :Text;               # its result once it succeeded (JSON text; empty: none)
  progressText @10 :Text;            # `progress` as Text: the same bytes
  startedUs @11 :Int64;              # when it was first sent to a worker, µs since the epoch; 0: never
  endedUs @12 :Int64;                # when it ended (succeeded, failed, was killed); 0: not yet
  durationUs @13 :Int64;             # endedUs - startedUs, or up to now while it has not ended;
                                     # 0 if it never started
  waitReason @14 :Text;              # while DISPATCHING: why no worker has taken it yet, e.g.
                                     # "no live worker serves task list 'gpu'", "all 2 workers of
                                     # 'gpu' are busy", "rate limited: ..."; empty otherwise, or
                                     # when the scheduler cannot tell
  dependsOn @15 :List(Text);         # the tasks it depends on (its definition's dependsOn), by name:
                                     # the edges of the workflow's DAG
  session @16 :Text;                 # the session it runs in (its definition's); empty: none
}

struct SessionDescription {
  name @0 :Text;
  state @1 :Text;                    # WAITING (none of its tasks was ready yet), CREATING (looking
                                     # for a worker), ENTERING, OPEN, REESTABLISHING, CLOSING,
                                     # FAILING, CLOSED or FAILED
  attempt @2 :UInt32;                # its placement: 1, one more for each recreation; 0: never placed
  worker @3 :Text;                   # the worker that holds it, or held it last
  resourceId @4 :Text;               # that worker's resource id, if it declared one
  envEnter @5 :Text;                 # envEnter's outcome: SUCCEEDED, "FAILED: why", or empty
  envExit @6 :Text;                  # envExit's, likewise
  failure @7 :Text;                  # why it failed ("reason: details"); empty unless it did
  recreateToken @8 :Text;            # another session's recreateToken continues on its resource
  waitReason @9 :Text;               # while it looks for a worker: why none has taken it yet, e.g.
                                     # "every worker that fits holds as many sessions as it takes
                                     # (1 of 1)"; empty otherwise
}

struct WorkflowDescription {
  workflowId @0 :Text;
  state @1 :Text;
  detail @2 :Text;                   # why a failed workflow failed (as WorkflowResult.detail)
  tasks @3 :List(TaskDescription);        # in definition order
  workflowState @4 :WorkflowState;   # `state` as an enum
  sessions @5 :List(SessionDescription);  # in definition order; empty when it has none
}

enum ControlAction {
  pause @0;                          # no new tasks start; PAUSED once none is active
  resume @1;                         # a paused workflow carries on
  stop @2;                           # active tasks are cancelled with the cluster's kill_grace;
                                     # STOPPED once each confirmed or its grace ran out
  kill @3;                           # a stop without grace: active tasks are killed at once
}

interface ClientService {
  # What clients call (named so because capnp reserves "Client" inside every interface).

  startWorkflow @0 (definitionJson :Text, inputJson :Text, workflowId :Text, runFrom :Text)
      -> (workflowId :Text, error :Common.Error);
  # Acknowledged once WorkflowSubmitted is durable. The same id while open returns that run;
  # an empty id gets a new one ("wf-" and 32 hex digits), returned in workflowId. The id of a
  # closed workflow is refused (alreadyExists): run it again with rerun.
  # definitionJson may instead be the name of a definition registered with the scheduler (a
  # file in its `definitions` directory): anything that is not a JSON object is taken as a name.
  result @1 (workflowId :Text, timeoutMs :UInt64) -> (result :WorkflowResult, error :Common.Error);
  # Waits for the workflow to end, for at most `timeoutMs` milliseconds (0: as long as it takes);
  # timedOut when it has not ended by then (ask again to wait on). notFound for an unknown id.
  control @2 (workflowId :Text, action :ControlAction)
      -> (state :Text, error :Common.Error, workflowState :WorkflowState);
  # Pauses, resumes or stops a workflow; answers the state it leads to (READY_PAUSE, PAUSED,
  # RUNNING, READY_STOP, STOPPED, ...) once that is durable. notAllowedInState when the action
  # does not apply ("PAUSE is not allowed in state SUCCESS").
  describe @3 (workflowId :Text) -> (description :WorkflowDescription, error :Common.Error);
  # The workflow's and every task's state as durably recorded (its history replayed).
  list @4 (query :ListQuery) -> (workflows :List(WorkflowSummary), nextCursor :Text, error :Common.Error);
  # One page of workflows, newest first or in id order (query.sort), from the store's index (no
  # workflow is loaded). An empty nextCursor means the end; otherwise pass it as query.after,
  # with the same sort, for the next page (a page may hold fewer than query.limit workflows,
  # even none, when few match a filter).
  watch @5 (workflowId :Text, fromSequence :UInt64, sink :HistorySink) -> (lastSequence :UInt64, error :Common.Error);
  # Pushes the workflow's history from sequence `fromSequence` (1: from the start) to `sink`,
  # in order, each event once, live as it is recorded; returns once the workflow has closed and
  # its last event was delivered. A client that reconnects passes the sequence after the last
  # one it received and misses nothing.
  completeTask @6 (token :Text, result :Data, resultJson :Text) -> (error :Common.Error);
  failTask @7 (token :Text, reason :Text, details :Text) -> (error :Common.Error);
  # Ends an invocation of a task with asyncCompletion, by the token it was given
  # ($TROUPE_TASK_TOKEN). A forged or altered token is refused (INVALID_ARGUMENT); so is one
  # whose invocation is no longer current (retried, timed out or already ended: NOT_FOUND).
  # completeTask's result is JSON text: pass it in resultJson (`result`, the same bytes as Data,
  # is read only when resultJson is empty).
  rerun @8 (workflowId :Text, runFrom :Text)
      -> (state :Text, error :Common.Error, workflowState :WorkflowState);
  # Reopens a closed workflow and runs `runFrom` and every task downstream of it again (empty:
  # every task that did not succeed); the other tasks keep their outcome. Answers RUNNING once
  # the rerun is durable. notAllowedInState while the workflow is open; invalidArgument for a
  # task the definition lacks, or one that depends on a task outside the rerun that did not
  # succeed (the message names it: rerun from there instead).

  # Operations on one task of a workflow while it runs. Each is recorded in the workflow's
  # history before it is answered, so a restarted scheduler carries it on; a passivated workflow
  # is woken for it. Each answers the workflow's state and the task's once that is durable.
  # Errors: notFound for an unknown workflow; invalidArgument for a task the definition lacks;
  # notAllowedInState, with a message saying what to do instead, when the task or the workflow
  # is not in a state the operation applies to.

  retryTask @9 (workflowId :Text, task :Text)
      -> (workflowState :Text, taskState :Text, error :Common.Error, workflowStateCode :WorkflowState,
          taskStateCode :TaskState);
  # A new attempt of a task that failed or was killed, while the rest of the workflow runs; its
  # downstream tasks, blocked by the failure, run once it succeeds. Its attempt numbers go on
  # from the failed ones (invocations stay unique) and its retry policy starts a fresh round
  # (as Airflow's clear: a retried task gets its retries again). The task is SUBMITTED at once,
  # or WAITING until a paused workflow resumes. A workflow that FAILED is reopened (RUNNING),
  # as Airflow reopens a cleared DAG run: the failure it ended with is what one retries, and
  # nothing else of it runs again (unlike rerun, which runs the task's downstream afresh too). A
  # STOPPED workflow is refused: rerun it. Refused for a task that is running or waiting (it has
  # not failed), succeeded, or not run because an upstream task failed (the message names it).
  skipTask @10 (workflowId :Text, task :Text, reason :Text)
      -> (workflowState :Text, taskState :Text, error :Common.Error, workflowStateCode :WorkflowState,
          taskStateCode :TaskState);
  # Marks a task FORCED_SUCCESS with `reason` (recorded), and its downstream tasks run as if it
  # had succeeded. Applies to a task that failed or was killed (a FAILED workflow is reopened,
  # as retryTask does), and to one not on a worker: waiting for its dependencies, in its task
  # list, in a retry backoff, or paused. One not scheduled yet is recorded FORCED_SUCCESS when
  # it would be (taskState WAITING until then), so the dependencies it waits for still run
  # first. Refused for a task on a worker (wait for its attempt to end) and for one that
  # succeeded.
  updateTask @11 (workflowId :Text, task :Text, options :TaskOptionsUpdate)
      -> (workflowState :Text, taskState :Text, error :Common.Error, workflowStateCode :WorkflowState,
          taskStateCode :TaskState);
  # Changes a task's options from its next dispatch: an attempt on a worker keeps the timeouts it
  # was sent with, while the retry policy decides its retry; a task waiting in its task list
  # moves to the new one (as a new arrival). Checked by the rules of a definition's task
  # (invalidArgument listing every problem, e.g. "timeouts.heartbeat: is longer than
  # startToClose (1m), so it could never fire"). Also for a finished workflow's failed task, to
  # apply to a retryTask or rerun. Refused for a task that succeeded (it has no next attempt).

  purge @12 (closedBeforeUs :Int64) -> (purged :UInt64, error :Common.Error);
  # Deletes every workflow that closed before this time (µs since the epoch): its history and
  # its index record, as the cluster's `retention` does on its own. Open workflows are never
  # purged, nor one reopened by a rerun meanwhile. Answers how many were purged, once that is
  # durable. A purged workflow is unknown (notFound) to every method after, and its id free.

  workers @13 (name :Text, history :Bool) -> (workers :List(WorkerSummary), error :Common.Error);
  # Every worker that ever registered with this scheduler (name empty), or the one named
  # (notFound if it never registered), by name. With a name and `history`, its journal too.

  drainWorker @14 (name :Text, immediate :Bool, deadlineMs :UInt64, exitWhenDrained :Bool)
      -> (worker :WorkerSummary, error :Common.Error);
  # The worker gets no new tasks from now on. Eventual (immediate false): what it runs finishes,
  # then it is DRAINED; with deadlineMs, what still runs then is interrupted. Immediate: what it
  # runs is stopped now (the cluster's kill_grace) and runs again elsewhere as INTERRUPTED, its
  # attempt kept. exitWhenDrained: the worker process then stops and exits 0; otherwise it stays
  # up, idle. The drain outlives restarts of the worker and of the scheduler; a worker that is
  # not running is drained at once. Answers the worker as the drain left it.

  undrainWorker @15 (name :Text) -> (worker :WorkerSummary, error :Common.Error);
  # A draining or drained worker takes tasks again.

  forgiveWorker @16 (name :Text) -> (worker :WorkerSummary, error :Common.Error);
  # Ends a quarantine and forgets the worker's failures in a row (and so its doubled backoff).

  taskLogs @17 (workflowId :Text, task :Text, attempt :UInt32, follow :Bool, sink :LogSink)
      -> (error :Common.Error);
  # Pushes a task attempt's log (its stdout and stderr, interleaved as written) to `sink`, read
  # through the scheduler from the worker that ran it (worker.capnp readLog), and returns once
  # it was all delivered. `task` empty: every task that started, in definition order, one after
  # the other (but handler tasks, which write no log). `attempt` 0: the task's last attempt. An attempt that moved (its worker was lost
  # or drained before it ended) has one log per worker it ran on, sent in order. With `follow`
  # it goes on while the attempt runs, pushing what the task writes as it writes it (looked for
  # every 100 ms to 1 s, sooner while it writes), and returns once the attempt ended and its log
  # was delivered; a task that has not started yet is waited for (until it starts, ends without
  # starting, or its workflow closes). Errors, each saying what to do: notFound for an unknown
  # workflow; invalidArgument for a task the definition lacks, or an attempt the task has not
  # reached; notAllowedInState for a task that has not started (without follow), or a handler
  # task (it writes no log); disconnected when the worker that ran it is not connected now
  # ("worker 'w', which ran attempt 2 of task 'train', is not connected now; its log is at PATH
  # on HOST"); the worker's own error when it cannot read the log.
  # Chunks already pushed stay delivered when an error ends the stream.
}

struct LogChunk {
  # A piece of one invocation's log, as taskLogs pushes it.
  task @0 :Text;                     # the task's name
  attempt @1 :UInt32;
  invocationId @2 :Text;             # WORKFLOW/TASK/ATTEMPT.DISPATCH: one attempt on one worker
  worker @3 :Text;                   # the worker (shard) that ran it
  offset @4 :UInt64;                 # where `data` starts in the invocation's log
  data @5 :Data;                     # the log's bytes as the task wrote them (not necessarily UTF-8,
                                     # nor cut at line ends)
  first @6 :Bool;                    # the first chunk of this invocation (sent even when its log
                                     # is empty, so a client can print a header before it)
  last @7 :Bool;                     # the invocation ended and its whole log has been sent: its
                                     # last chunk (a log still growing has none)
  path @8 :Text;                     # the log file on the worker, when the scheduler knows it
                                     # (from the attempt's outcome); empty otherwise
}

interface LogSink {
  write @0 (chunk :LogChunk) -> (stop :Bool);
  # The next chunk of the logs taskLogs streams. The next call comes once this one returns;
  # `stop` ends the stream early (taskLogs then returns without an error).
}

struct WorkerSummary {
  # A worker as the scheduler knows it: its durable record, and its live instance's view.
  name @0 :Text;                     # the node name (shard id)
  workerId @1 :Text;                 # kept in its data directory across restarts
  status @2 :Text;                   # STARTED, NOT_RESPONDING, STOPPING, STOPPED, DRAINING,
                                     # DRAINED, QUARANTINED
  health @3 :Text;                   # NEW, HEALTHY, UNHEALTHY, MUST_DIE, STOPPING; empty unless live
  standing @4 :Text;                 # ACTIVE, DRAINING, DRAINED, QUARANTINED
  live @5 :Bool;                     # a process of it is registered now
  hostname @6 :Text;
  pid @7 :UInt32;
  resourceId @8 :Text;
  taskLists @9 :List(WorkerTaskListUse);
  running @10 :List(Text);           # invocation ids it holds now
  lastHeartbeatAgeMs @11 :Int64;     # -1 unless live
  drain @12 :History.WorkerDrain;    # while DRAINING or DRAINED
  quarantinedUntilUs @13 :Int64;     # while QUARANTINED
  quarantines @14 :UInt32;           # since an attempt last succeeded there
  failures @15 :List(History.WorkerFailure);  # failed there in a row, oldest first
  firstRegisteredUs @16 :Int64;
  lastRegisteredUs @17 :Int64;
  registrations @18 :UInt64;
  recent @19 :List(WorkerInvocation);  # what it ran lately (this scheduler's run), newest last
  journal @20 :List(History.HistoryEvent);  # with `history`: registrations and health changes
}

struct WorkerTaskListUse {
  name @0 :Text;
  slots @1 :UInt32;
  used @2 :UInt32;
}

struct WorkerInvocation {
  invocationId @0 :Text;
  task @1 :Text;                     # WORKFLOW/TASK
  attempt @2 :UInt32;
  outcome @3 :Text;                  # SUCCEEDED, FAILED (reason), CANCELLED, INTERRUPTED, LOST...
  endedUs @4 :Int64;
}

struct TaskOptionsUpdate {
  # What updateTask changes; what is left unset keeps its value.
  taskList @0 :Text;                 # the task list it is dispatched from; empty: unchanged
  priority @1 :Int32;                # with setPriority: its priority within the task list
  setPriority @2 :Bool;
  timeouts @3 :TaskTimeoutsUpdate;
  retryJson @4 :Text;                # when given, the whole new retry policy as JSON, as a
                                     # definition's `retry` (fields left out take its defaults)
  removeRetry @5 :Bool;              # no retry: one attempt
}

struct TaskTimeoutsUpdate {
  # A definition's four timeouts (workflow.capnp's Timeouts): each one given is a duration
  # ("5m") replacing the task's, or "none" to remove it; one left empty stays as it is. Kept
  # apart from workflow.capnp so that a client compiles this file and its plain imports only.
  scheduleToStart @0 :Text;
  startToClose @1 :Text;
  scheduleToClose @2 :Text;
  heartbeat @3 :Text;
}

interface HistorySink {
  events @0 (events :List(History.HistoryEvent)) -> (stop :Bool);
  # The next events of a watched history. The next call comes once this one returns; `stop`
  # ends the watch early.
}

enum ListSort {
  created @0;                        # newest first: by creation time, then by id
  id @1;                             # by workflow id
}

struct ListQuery {
  state @0 :Text;                    # OPEN, CLOSED, an open workflow's state (SUBMITTED,
                                     # RUNNING, READY_PAUSE, PAUSED, READY_STOP, FAILOVER), or
                                     # how closed ones ended (SUCCESS, FAILED, STOPPED); empty: all
  definitionName @1 :Text;           # empty: any
  createdFromUs @2 :Int64;           # created at or after (0: no bound), µs since the epoch
  createdToUs @3 :Int64;             # created before (0: no bound)
  after @4 :Text;                    # the cursor: a previous page's nextCursor (of the same sort)
  limit @5 :UInt32;                  # most workflows in the page (0: 100; at most 1000)
  sort @6 :ListSort;                 # the order of the pages; default: newest first
}

struct WorkflowSummary {
  workflowId @0 :Text;
  definitionName @1 :Text;
  state @2 :Text;                    # its state as of its last change (RUNNING, PAUSED, ...),
                                     # or how it ended (SUCCESS, FAILED, STOPPED)
  createdUs @3 :Int64;
  closedUs @4 :Int64;                # 0 while open
  workflowState @5 :WorkflowState;   # `state` as an enum
}
