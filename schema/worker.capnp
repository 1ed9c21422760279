# The worker protocol (Facebook Bistro's guarantees): a worker node registers with the
# scheduler's Gateway, handing over a WorkerControl capability, and gets a WorkerSession back.
#  - The scheduler calls getRunningTasks right after association and before any runTask; the
#    worker leaves NEW only after it succeeded.
#  - runTask sends an invocation id once, with the scheduler's current notify sequence number
#    and a per-invocation TaskReporter: a worker can report only on invocations it was given.
#  - A finished invocation is reported (in runTask's answer when it ended that soon,
#    TaskReporter.complete, or WorkerSession.updateStatus when the reporter was lost with a
#    connection) until acknowledged; the scheduler acknowledges once the result is durable
#    (acknowledge, or the call's return) and recognises duplicates by invocation id.
#  - notifyIfTasksNotRunning carries "unsure if running" invocations with a Fence: the
#    scheduler incarnation's durable epoch and its notify sequence. The worker refuses any
#    runTask whose fence is older than the last notify's, whichever incarnation sent them.
#  - Health NEW -> HEALTHY <-> UNHEALTHY -> MUST_DIE on both sides with the same timeouts; a
#    worker runs tasks only while HEALTHY and exits on MUST_DIE or requestSuicide.
# Evolution: append fields with the next @N; never renumber, retype or reuse one.
@0xe9c25de2d91d6b73;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

using Common = import "common.capnp";

struct WorkerInfo {
  shardId @0 :Text;                  # the node name: one live worker per shard id
  hostname @1 :Text;
  pid @2 :UInt32;
  instanceId @3 :Text;               # random per process start: tells a reconnect from a restart
  taskLists @4 :List(WorkerTaskList);
  resourceId @5 :Text;
  maxConcurrentSessions @6 :UInt32;
  registrations @7 :List(Fence);
  # The fence of this instance's first registration with each scheduler incarnation it has
  # registered with before (the latest few). It held its shard from then on: an invocation that
  # incarnation dispatched to the shard at a later fence was for this instance, so if the
  # instance does not have it, the invocation never reached a worker.
  workerId @8 :Text;
  # The worker's persisted identity ("wkr-" and 16 hex digits), the same across its restarts,
  # where instanceId changes with every process start. Appended (never renumbered) so that
  # workers and schedulers of either age still talk: an older worker sends none (empty).
}

struct Fence {
  # Orders what schedulers send: by epoch, then sequence.
  epoch @0 :UInt64;                  # the scheduler incarnation, durable and increasing
  sequence @1 :UInt64;               # the incarnation's notify sequence
}

struct WorkerTaskList {
  name @0 :Text;
  slots @1 :UInt32;                  # invocations of this task list the worker runs at once
}

enum Health {
  new @0;                            # registered, running tasks not yet queried
  healthy @1;
  unhealthy @2;                      # heartbeats late: gets no new work
  mustDie @3;                        # declared lost: its invocations failed over; it must exit
  stopping @4;                       # it said it is shutting down: gets no new work
}

struct HealthTimeouts {
  heartbeatIntervalMs @0 :UInt32;
  unhealthyAfterMs @1 :UInt32;       # no heartbeat for this long: UNHEALTHY
  mustDieAfterMs @2 :UInt32;         # no heartbeat for this long: MUST_DIE
}

struct InvocationSpec {
  invocationId @0 :Text;             # unique; sent once
  workflowId @1 :Text;
  taskName @2 :Text;
  taskList @3 :Text;
  attempt @4 :UInt32;
  union {
    shell :group {
      command @5 :List(Text);        # argv
      env @6 :List(Text);            # NAME=value
      cwd @7 :Text;
    }
    handler @8 :Text;                # a handler registered in the worker
  }
  input @9 :Text;                    # JSON: the task's input (TROUPE_INPUT), its own or else the workflow's
  progress @10 :Data;                # the last progress of an earlier attempt
  heartbeatTimeoutMs @11 :UInt32;    # the task's heartbeat timeout (0: none): report more often
  taskToken @12 :Text;               # names this invocation to completeTask/failTask
  asyncCompletion @13 :Bool;         # a successful end hands the task off (Outcome.handedOff)
  workflowInput @14 :Text;           # JSON: the workflow's input (TROUPE_WORKFLOW_INPUT). Empty when
                                     # it is `input`: a task without an input of its own is given
                                     # the workflow's as `input`, which is then not sent twice
  sessionId @15 :Text;               # the open session it runs in (openSession), after the
                                     # session's envEnter and one at a time with its other
                                     # tasks; empty: none
}

struct SessionOpening {
  # A session to open on the worker (Cadence's sessions, Deadline Cloud's session actions).
  sessionId @0 :Text;                # WORKFLOW/SESSION: unique among the worker's sessions
  workflowId @1 :Text;
  sessionName @2 :Text;
  envEnter @3 :InvocationSpec;       # runs before any task of the session; absent: none
  envExit @4 :InvocationSpec;        # runs when the session closes, if it was opened; absent: none
}

struct Outcome {
  # How an invocation ended.
  union {
    succeeded @0 :Data;              # the result
    failed @1 :FailureReport;
    cancelled @2 :Void;              # stopped because it was asked to
    handedOff @3 :Void;              # asyncCompletion: done here; its token will end the task
    interrupted @5 :Text;            # the worker shut down before it finished (why): not the task's
                                     # failure; the scheduler runs it again elsewhere, attempt kept
  }
  neverStarted @6 :Bool;             # cancelled: it never started here (a task queued in a
                                     # session that stopped taking tasks)
  endedAgoUs @4 :UInt64;
  # How long before this message was built the invocation ended, on the worker's monotonic
  # clock. The scheduler dates the end by its own clock (receipt minus this, never earlier than
  # the true end): after a restart it tells an outcome that beat the task's startToClose from
  # one that overran it without trusting the worker's wall clock. 0 from older workers: now.
}

struct FailureReport {
  reason @0 :Text;                   # short, matched against nonRetryableErrors: "ExitCode:3"
  details @1 :Text;
  nonRetryable @2 :Bool;
}

interface TaskReporter {
  # One invocation's line back to the scheduler.
  started @0 () -> ();
  # Optional: runTask's acceptance already means started, and the scheduler records the task
  # RUNNING then. Kept for workers that start an invocation later than they accept it.
  heartbeat @1 (progress :Data) -> (cancelRequested :Bool);
  # Cancellation is learned here, as in Cadence.
  complete @2 (outcome :Outcome) -> ();
  # Returns once the outcome is durable; retry until it returns.
}

interface WorkerControl {
  # Served by the worker, called by the scheduler.
  getRunningTasks @0 () -> (invocationIds :List(Text), endedIds :List(Text), openSessions :List(Text));
  # invocationIds: every invocation it holds. endedIds: those of them that ended, whose outcomes
  # are on their way (a restarted scheduler waits for those rather than take them as running).
  # openSessions: the sessions it holds open (WORKFLOW/SESSION): their session slots are taken
  # until their sessions claim them again, and one that none claims within the scheduler's
  # recovery window (its workflow ended, or moved it elsewhere meanwhile) is closed here.
  runTask @1 (invocation :InvocationSpec, notifySequence :UInt64, reporter :TaskReporter,
               outcomeInAnswer :Bool, fence :Fence)
      -> (error :Common.Error, ended :Bool, outcome :Outcome);
  # error.code none: started. The worker answers once the invocation has started or already
  # ended. ended false: it runs (the scheduler records the task RUNNING). ended true: it ended
  # before the answer; the scheduler records the outcome only, as Temporal writes an
  # activity's start only with its end. The outcome then comes in the answer if the scheduler
  # asked for that (outcomeInAnswer) and otherwise through the reporter. An outcome in the
  # answer is kept by the worker until the scheduler acknowledges it (acknowledge); if the
  # connection ends first, the worker reports it again as it would through a lost reporter.
  # A runTask whose fence is older than the last notify's is refused (notifySequence is the
  # fence's sequence, for workers that predate fences). A refused invocation never started.
  notifyIfTasksNotRunning @2 (invocationIds :List(Text), notifySequence :UInt64, fence :Fence)
      -> (notRunning :List(Text));
  # A notify whose fence is older than the last one's is answered without moving the fence.
  cancelTask @3 (invocationId :Text, graceMs :UInt32) -> ();
  requestSuicide @4 (reason :Text) -> ();
  acknowledge @5 (invocationIds :List(Text)) -> ();
  # The outcomes these invocations' runTask answers carried are durable: the worker forgets
  # them. Sent for many invocations at once, as their outcomes become durable together.
  interruptTask @6 (invocationId :Text, graceMs :UInt32, reason :Text) -> ();
  # Stops an invocation as cancelTask does, but it ends `interrupted` (reason), not cancelled,
  # unless it succeeds meanwhile: an immediate drain moves it to another worker, attempt kept.
  requestStop @7 (reason :Text) -> ();
  # A drain asks the worker process to stop (it runs nothing by then): it shuts down as on
  # SIGTERM, says stopped, and exits 0.
  openSession @8 (session :SessionOpening) -> (error :Common.Error, outcome :Outcome);
  # Opens the session here: its directory (kept while the worker lives, and found again by a
  # re-established session), its log, then envEnter. Answers with envEnter's outcome once it
  # ended (succeeded at once when there is none). Opening a session that is open already answers
  # as the first opening did. The session's tasks then come as runTask with its sessionId.
  closeSession @9 (sessionId :Text) -> (error :Common.Error, ran :Bool, outcome :Outcome);
  # The session's queued tasks end cancelled (never attempted), envExit runs after the action
  # running now, and the answer comes once it ended (ran, outcome); at once, ran false, when
  # there is no envExit or the session was never opened here.
  readLog @10 (invocationId :Text, stream :LogStream, offset :UInt64, maxBytes :UInt32)
      -> (error :Common.Error, data :Data, nextOffset :UInt64, size :UInt64, complete :Bool);
  # Up to maxBytes (at most 1 MiB; 0: 64 KiB) of an invocation's log from byte `offset`, for
  # `troupe logs`: the log of a shell task or session action, which the worker keeps in its
  # log_dir (LOG_DIR/WORKFLOW/TASK.ATTEMPT.DISPATCH.log) while it lives and after it restarts.
  # The invocation is named by its id only, never by a path: the worker finds the file from the
  # id, and refuses (invalidArgument) an id that is not of the form WORKFLOW/TASK/ATTEMPT.DISPATCH
  # or a file that would lie outside its log_dir. nextOffset: where the next read starts (offset
  # plus the bytes in data). size: the log's size when it was read. complete: the invocation has
  # ended here (or is not held here any more) and data reaches the end of its log, so the log
  # will not grow. notFound when there is no such log and the worker does not run the invocation
  # (a handler task writes none; the log was removed; another worker ran it); a log not created
  # yet of an invocation the worker holds reads as empty, not complete.
}

enum LogStream {
  # Which output of an invocation readLog reads.
  combined @0;                       # stdout and stderr interleaved in the order written: the one
                                     # log a worker keeps (values for the streams apart may be
                                     # appended once a worker keeps them apart)
}

interface WorkerSession {
  # Served by the scheduler for one registered worker.
  heartbeat @0 () -> (health :Health);
  # The scheduler's view of this worker; mustDie means exit now.
  updateStatus @1 (invocationId :Text, outcome :Outcome) -> (error :Common.Error);
  # For a finished invocation whose reporter was lost. Returns once durable; an invocation
  # this worker was not given is refused.
  taskHeartbeat @2 (invocationId :Text, progress :Data) -> (cancelRequested :Bool, error :Common.Error);
  # TaskReporter.heartbeat for an invocation whose reporter was lost (the scheduler restarted
  # and took the invocation back); refused for an invocation this worker was not given.
  stopping @3 (graceMs :UInt32, reason :Text) -> ();
  # The worker is shutting down (a signal): it takes no new task from this moment, gives what it
  # runs graceMs to finish, then interrupts the rest. Every outcome follows as usual.
  stopped @4 () -> ();
  # The worker is about to exit having delivered every outcome: nothing of it runs any more, so
  # its invocations need not wait for its lease.
}

struct Registration {
  session @0 :WorkerSession;
  timeouts @1 :HealthTimeouts;
  startClean @2 :Bool;               # this shard's previous instance was replaced: anything it
                                     # left running is not the scheduler's any more
  fence @3 :Fence;                   # above every fence this incarnation used before it: the
                                     # worker keeps the first one of each epoch (registrations)
  leaseMs @4 :UInt32;                # how long the worker keeps running its invocations without
                                     # an acknowledged heartbeat; 0: mustDieAfterMs
}
