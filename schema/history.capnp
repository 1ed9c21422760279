# The durable history: every lifecycle event of a workflow and its tasks, sessions and
# workers, as stored in the history store (packed) and streamed to watchers.
# Evolution: append fields and union members with the next @N; never renumber or reuse.
@0xc45dc1ec44e2b233;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

using Common = import "common.capnp";

struct HistoryEvent {
  sequence @0 :UInt64;          # position in the workflow's history: 1, 2, 3, … gap-free; the store assigns it
  timestampUs @1 :Int64;        # when the event happened, microseconds since the Unix epoch
  actorKind @2 :Common.ActorKind;
  actorId @3 :Text;             # workflow id, task name, session name or worker shard id
  attempt @4 :UInt32;           # task attempt, from 1; 0 for events not tied to an attempt
  body @5 :EventBody;
}

struct EventBody {
  # What happened. Workflow events first, then task, session and worker events.
  union {
    workflowSubmitted @0 :WorkflowSubmitted;
    workflowStarted @1 :Void;              # START: SUBMITTED -> RUNNING
    workflowTaskFinished @2 :TaskFinished; # TASK_FINISHED: a task reached a terminal state
    workflowPauseRequested @3 :Void;       # PAUSE: RUNNING -> READY_PAUSE
    workflowPaused @4 :Void;               # PAUSED: no task is active any more
    workflowResumed @5 :Void;              # RESUME
    workflowStopRequested @6 :Reason;      # STOP: -> READY_STOP
    workflowStopped @7 :Void;              # STOPPED: every active task was killed
    workflowSucceeded @8 :Void;            # SUCCEED: every chain succeeded
    workflowFailed @9 :Failure;            # FAILED: a chain failed and nothing else can run
    workflowFinalized @10 :Void;           # FINALIZE: the history is complete; the workflow is closed
    workflowFailover @11 :Failover;        # the scheduler restarted and is re-adopting the workflow

    taskScheduled @12 :TaskScheduled;      # START: the task is ready and enters SUBMITTED
    taskDelayed @13 :TaskDelayed;          # DELAY_EXECUTION until a time (retry backoff, start delay)
    taskDispatching @14 :TaskDispatching;  # DISPATCH: waiting in a task list for a worker slot
    taskDispatched @15 :TaskDispatched;    # DISPATCHED: durable before the worker is sent runTask;
                                           # also the start of a task that found a slot at once
    taskRunning @16 :Invocation;           # RUNNING: the worker started the invocation
    taskHeartbeat @17 :TaskHeartbeat;      # HEARTBEAT with progress
    taskTimedOut @18 :TaskTimedOut;        # TIMEOUT of one of the four kinds
    taskRetryScheduled @19 :TaskRetryScheduled;  # RETRY: the next attempt and its backoff
    taskPauseRequested @20 :Void;          # PAUSE
    taskPaused @21 :Void;                  # PAUSED
    taskKillRequested @22 :Reason;         # KILL: cancellation sent to the worker
    taskKilled @23 :Invocation;            # KILLED: cancellation confirmed or timed out
    taskSucceeded @24 :TaskSucceeded;      # SUCCEEDED
    taskFailed @25 :TaskFailed;            # FAILED
    taskFailover @26 :Failover;            # FAILOVER: the invocation's worker was lost
    taskForcedSuccess @27 :Reason;         # FORCE: an operator marked the task succeeded (skipTask);
                                           # its successors run as if it had

    # Session events: one for each event its state table takes (actors/session/session_machine.hpp).
    sessionCreating @28 :SessionCreating;  # FIRST_TASK_READY (attempt 1) or RECREATE (later): looking
                                           # for a worker with a free session slot
    sessionOpened @29 :SessionOpened;      # PLACED on a worker, or WORKER_BACK (reestablished)
    sessionFailed @30 :Failure;            # ABANDON: its worker is lost and it may not be recreated
    sessionClosed @31 :Void;               # not written: CLOSED and FAILED are where its events lead

    workerRegistered @32 :WorkerRegistered;
    workerHealthChanged @33 :WorkerHealthChanged;

    taskAwaitingCompletion @34 :Invocation; # asyncCompletion: the invocation handed off; its
                                            # token's completeTask/failTask ends the task
    workflowRerun @35 :WorkflowRerun;      # RERUN: a closed workflow reopened to run tasks again
    taskOptionsUpdated @36 :TaskOptionsUpdated; # UPDATE: an operator changed the task's options;
                                           # an attempt on a worker keeps the ones it was sent with
    workflowTaskRetried @37 :TaskOperation; # RETRY_TASK: an operator's retry of a failed or killed
                                           # task; reopens a FAILED workflow
    workflowTaskSkipped @38 :TaskOperation; # SKIP_TASK: a failed or killed task is forced to
                                           # success now, one not yet scheduled when it would be

    sessionEntered @39 :Void;              # ENTERED: envEnter succeeded (or there is none)
    sessionEnterFailed @40 :Failure;       # ENTER_FAILED: envEnter failed, was cancelled or interrupted
    sessionTasksDone @41 :Void;            # TASKS_DONE: every task of the session ended, none failed
    sessionTaskFailed @42 :SessionTaskFailed;  # TASK_FAILED: a task of it failed for good
    sessionCancelled @43 :Reason;          # CANCEL: its workflow stops
    sessionTimedOut @44 :SessionTimedOut;  # CREATION_TIMED_OUT or EXECUTION_TIMED_OUT
    sessionExited @45 :SessionExited;      # EXITED: envExit ended (its outcome affects only it)
    sessionWorkerLost @46 :SessionWorkerLost;  # WORKER_LOST: its worker was declared dead, stopped,
                                           # or replaced
    workflowSessionRerun @47 :SessionRerun; # RERUN_SESSION: a session recreated with rerunAll runs
                                           # again the tasks of it that succeeded
    sessionWorkerDrained @48 :SessionWorkerDrained;  # WORKER_DRAINED or WORKER_DRAINED_NOW: an
                                           # operator drains its worker, so the session moves
  }
}

struct Reason {
  text @0 :Text;                # who asked and why, shown to operators
  immediate @1 :Bool;           # a kill: no grace, and no wait for the worker's confirmation
  neverAttempted @2 :Bool;      # a kill: the task's session will run nothing more of it (Deadline's
                                # NEVER_ATTEMPTED when its current attempt never started)
}

struct Failure {
  reason @0 :Text;              # a short machine-matchable reason, e.g. "ExitCode:3" or "BadInput"
  details @1 :Text;             # free text for people
  nonRetryable @2 :Bool;        # the failure must not be retried whatever the policy says
}

struct Failover {
  workerShard @0 :Text;         # the lost worker; empty for a scheduler failover
  invocationId @1 :Text;
  reason @2 :Text;
  kind @3 :FailoverKind;
}

enum FailoverKind {
  # What is known of a lost invocation; only one that never started keeps its attempt.
  mayHaveStarted @0;            # its worker was lost before it confirmed the start
  neverStarted @1;              # it provably never reached a worker: dispatched again, same attempt
  lostWhileRunning @2;          # it ran on a worker that was lost before it finished
  resultLost @3;                # it finished, but its worker was lost before the outcome was durable
  interrupted @4;               # its worker shut down (SIGTERM, a drain) before it finished: not the
                                # task's failure, so dispatched again elsewhere, same attempt
}

struct WorkflowSubmitted {
  definitionName @0 :Text;
  definitionJson @1 :Text;      # the definition exactly as submitted; replay decodes it again
  definitionDigest @2 :Data;    # digest of definitionJson, to recognise identical resubmits
  input @3 :Data;
  runFrom @4 :Text;             # run only this task and its descendants; empty for the whole DAG
}

struct WorkflowRerun {
  runFrom @0 :Text;             # this task and its descendants run again; empty: every task
                                # that did not succeed. The others keep their outcome.
}

enum TaskOutcome {
  succeeded @0;
  failed @1;
  killed @2;
  forcedSuccess @3;
  paused @4;
}

struct TaskFinished {
  taskName @0 :Text;
  outcome @1 :TaskOutcome;
  detail @2 :Text;              # for a failed task, its failure reason
}

struct TaskScheduled {
  input @0 :Data;
  continuesAttempts @1 :Bool;   # an operator's retry: the new instance numbers its attempts on
                                # from the failed one's (and takes its progress), while its retry
                                # policy starts a fresh round, as Airflow's clear does
}

struct SessionRerun {
  session @0 :Text;
  tasks @1 :List(Text);         # the tasks that run again in the recreated session: those that
                                # succeeded, and those active after them (ending, below)
  ending @2 :List(Text);        # active tasks that wait for their dependencies again: killed
                                # first, they run again once every one of them ended
  attempt @3 :UInt32;           # the session's recreation (its attempt) this rerun is for
}

struct TaskOperation {
  taskName @0 :Text;
  reason @1 :Text;              # who asked and why, shown to operators; may be empty
}

struct TaskOptionsUpdated {
  # The options updateTask changed, resolved as a definition's are (defaults applied, timeouts
  # normalised). What is not marked changed keeps its value. They apply from the task's next
  # dispatch: a task waiting in its task list joins the new one at once, an attempt on a worker
  # finishes with the options it was sent with (the retry policy decides its retry, though).
  taskList @0 :Text;            # the new task list; empty: unchanged
  priorityChanged @1 :Bool;
  priority @2 :Int32;
  timeoutsChanged @3 :Bool;
  timeouts @4 :TaskTimeouts;    # all four, as they are now
  retryChanged @5 :Bool;
  retry @6 :TaskRetry;          # with retryChanged: the new policy; absent: no retry (one attempt)
}

struct TaskTimeouts {
  # Microseconds; 0: none.
  scheduleToStartUs @0 :Int64;
  startToCloseUs @1 :Int64;
  scheduleToCloseUs @2 :Int64;
  heartbeatUs @3 :Int64;
}

struct TaskRetry {
  initialIntervalUs @0 :Int64;
  backoffCoefficient @1 :Float64;
  maximumIntervalUs @2 :Int64;
  maximumAttempts @3 :UInt32;   # 0: no limit
  expirationIntervalUs @4 :Int64; # 0: none
  nonRetryableErrors @5 :List(Text);
}

struct TaskDelayed {
  untilUs @0 :Int64;            # microseconds since the Unix epoch
  reason @1 :Text;
}

struct TaskDispatching {
  taskList @0 :Text;
  priority @1 :Int32;
}

struct Invocation {
  invocationId @0 :Text;        # unique per attempt; sent to a worker once
  neverStarted @1 :Bool;        # taskKilled: its worker said it never started it
}

struct TaskDispatched {
  invocationId @0 :Text;
  workerShard @1 :Text;
  notifySequence @2 :UInt64;    # the fence's sequence that runTask carries (see worker.capnp Fence)
  schedulerEpoch @3 :UInt64;    # the fence's epoch: the scheduler incarnation that dispatched it
}

struct TaskHeartbeat {
  invocationId @0 :Text;
  progress @1 :Data;            # opaque to troupe; handed to the next attempt
}

enum TimeoutKind {
  scheduleToStart @0;
  startToClose @1;
  scheduleToClose @2;
  heartbeat @3;
}

struct TaskTimedOut {
  kind @0 :TimeoutKind;
  invocationId @1 :Text;
}

struct TaskRetryScheduled {
  nextAttempt @0 :UInt32;
  backoffUs @1 :Int64;
  cause @2 :Failure;
}

struct TaskSucceeded {
  invocationId @0 :Text;
  result @1 :Data;
}

struct TaskFailed {
  invocationId @0 :Text;
  failure @1 :Failure;
}

struct SessionCreating {
  creationTimeoutUs @0 :Int64;
  attempt @1 :UInt32;           # 1 for its first placement, one more for each recreation
}

struct SessionOpened {
  workerShard @0 :Text;
  recreateToken @1 :Data;       # lets a new session take over this one's worker (Cadence)
  instanceId @2 :Text;          # the worker process that holds it
  resourceId @3 :Text;          # the worker's resource, if it declared one
  reestablished @4 :Bool;       # WORKER_BACK: the lost worker's resource came back within the window
}

struct SessionTaskFailed {
  taskName @0 :Text;
  failure @1 :Failure;
}

enum SessionTimeoutKind {
  creation @0;                  # creationTimeout: no worker took it in time
  execution @1;                 # executionTimeout: it stayed open too long
}

struct SessionTimedOut {
  kind @0 :SessionTimeoutKind;
}

struct SessionExited {
  succeeded @0 :Bool;           # envExit succeeded (or there is none)
  failure @1 :Failure;          # when it did not
}

struct SessionWorkerLost {
  workerShard @0 :Text;
  reason @1 :Text;              # "declared dead", "stopped", "replaced by a new instance"
}

struct SessionWorkerDrained {
  workerShard @0 :Text;
  immediate @1 :Bool;           # WORKER_DRAINED_NOW: an immediate drain, or an eventual one past its
                                # deadline (a running envEnter is cancelled)
}

struct TaskListSlots {
  taskList @0 :Text;
  slots @1 :UInt32;
}

struct WorkerRegistered {
  workerShard @0 :Text;
  hostname @1 :Text;
  pid @2 :UInt32;
  taskLists @3 :List(TaskListSlots);
  resourceId @4 :Text;
  maxConcurrentSessions @5 :UInt32;
  workerId @6 :Text;            # the identity the worker keeps across restarts; empty from an older worker
  instanceId @7 :Text;          # the process that registered: a new one after each restart, the
                                # same for a reconnect
}

enum WorkerHealth {
  # Bistro's worker health.
  new @0;
  healthy @1;
  unhealthy @2;
  mustDie @3;
  stopping @4;                  # shutting down on a signal (worker.capnp Health.stopping)
}

struct WorkerHealthChanged {
  workerShard @0 :Text;
  from @1 :WorkerHealth;
  to @2 :WorkerHealth;
}

# --- records of the history store's index column families ---------------------------

enum WorkflowStatus {
  open @0;
  closed @1;
}

struct WorkflowRecord {
  # Value of the `workflows` column family, keyed by workflow id.
  status @0 :WorkflowStatus;
  definitionName @1 :Text;
  definitionDigest @2 :Data;
  createdUs @3 :Int64;          # microseconds since the Unix epoch
  closedUs @4 :Int64;           # 0 while open
  finalState @5 :Text;          # how a closed workflow ended (SUCCESS, FAILED, STOPPED); empty while open
  liveState @6 :Text;           # an open workflow's state as of its last change (RUNNING, PAUSED,
                                # ...), written with the event that changed it; empty once closed,
                                # and in records written before it was kept
}

struct WorkerRecord {
  # Value of the `workers` column family, keyed by shard id. Fields are appended, never
  # renumbered: a record written before one existed reads it as its default.
  workerId @0 :Text;            # identity persisted across the worker's restarts
  hostname @1 :Text;
  resourceId @2 :Text;
  firstRegisteredUs @3 :Int64;
  lastRegisteredUs @4 :Int64;
  pid @5 :UInt32;               # of the instance that registered last
  instanceId @6 :Text;          # of the instance that registered last
  taskLists @7 :List(TaskListSlots);
  lastSeenUs @8 :Int64;         # when the scheduler last heard from it, as of the record's last write
  registrations @9 :UInt64;     # registrations accepted for this shard, reconnections included
  status @10 :Text;             # the worker's status (STARTED...) as of the record's last write
  standing @11 :Text;           # ACTIVE, DRAINING, DRAINED or QUARANTINED; empty: ACTIVE
  drain @12 :WorkerDrain;       # the drain asked for, while DRAINING or DRAINED
  quarantinedUntilUs @13 :Int64;  # while QUARANTINED: when the quarantine ends (wall clock)
  quarantines @14 :UInt32;      # quarantines since an attempt last succeeded there (the backoff doubles)
  failures @15 :List(WorkerFailure);  # the attempts that failed there in a row, oldest first
}

struct WorkerDrain {
  immediate @0 :Bool;           # running tasks were interrupted, not awaited
  deadlineUs @1 :Int64;         # an eventual drain interrupts what still runs then; 0: none
  exitWhenDrained @2 :Bool;     # the worker process stops once drained, else it stays idle
  requestedUs @3 :Int64;
}

struct WorkerFailure {
  task @0 :Text;                # WORKFLOW/TASK
  reason @1 :Text;              # "ExitCode:3"...
  atUs @2 :Int64;
}

# The worker journal (column family `worker_journal`, keyed like `events`: shard id, 0x00,
# sequence) holds HistoryEvents of actorKind worker whose bodies are workerRegistered and
# workerHealthChanged: the newest entries of each shard, the oldest trimmed past a bound.
