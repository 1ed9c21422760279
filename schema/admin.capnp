# The scheduler's admin interface: the running system itself, live. Every workflow, task,
# session, worker and task list is an actor; this interface lists them, probes them, says why a
# workflow is not moving, and reads the history store's engine. Reached through the Gateway
# (Gateway.admin) with the cluster's token; `troupe shell` speaks it, and so can any Cap'n Proto
# client.
# Evolution: append fields and methods with the next @N; never renumber, retype or reuse one.
@0x8ef577ba3b5fbf77;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

using Common = import "common.capnp";
using History = import "history.capnp";

interface AdminService {
  actors @0 (kind :Text, sort :ActorSort, limit :UInt32)
      -> (actors :List(ActorSummary), counts :List(KindCount), passivatedWorkflows :UInt64,
          error :Common.Error);
  # The live actors of `kind` (workflow, task, session, worker, matching, directory, dispatcher;
  # empty: every kind), each probed now: its state, mailbox depth, timers and age. Sorted by
  # `sort`, at most `limit` (0: 1000). `counts` counts every live actor by kind, whatever the
  # limit; passivatedWorkflows counts open workflows with no actor now (woken on demand).
  # invalidArgument for an unknown kind.

  actor @1 (id :Text) -> (actor :ActorDetail, error :Common.Error);
  # One live actor by id: a workflow id, WORKFLOW/TASK, WORKFLOW/SESSION, a worker's name, a
  # task list's name, `directory` or `dispatcher`. Its state, model, timers, and the last events
  # of its history. notFound when no live actor has the id (a passivated workflow has none:
  # see diagnose).

  diagnose @2 (workflowId :Text) -> (diagnosis :Diagnosis, error :Common.Error);
  # Why the workflow is not moving: what each open task and session waits for (its history
  # being written, a slot in its task list and why none is free, a rate limit, a worker of its
  # task list, a timer, its session, a paused workflow, a worker to finish it). notFound for an
  # unknown id.

  history @3 (workflowId :Text, fromSequence :UInt64, limit :UInt32)
      -> (events :List(History.HistoryEvent), lastSequence :UInt64, error :Common.Error);
  # The workflow's recorded events from `fromSequence` (0 or 1: the first), at most `limit`
  # (0: 1000); lastSequence is the last event it has. notFound for an unknown id.

  taskLists @4 () -> (taskLists :List(TaskListSummary), error :Common.Error);
  # Every task list the scheduler dispatches: what waits in it by priority, each worker's free
  # credit, its rate limit, and why its waiting tasks wait.

  store @5 () -> (store :StoreSummary, error :Common.Error);
  # The history store: its sizes, memtables, compactions, write stalls and group commit.

  ids @6 (kind :Text, prefix :Text, limit :UInt32) -> (ids :List(Text), error :Common.Error);
  # The ids of live actors of `kind` (empty: every kind) that start with `prefix`, sorted, at
  # most `limit` (0: 1000), without probing them: cheap enough for each Tab of a shell.
  # invalidArgument for an unknown kind.
}

enum ActorSort {
  kind @0;                           # by kind, then id
  mailbox @1;                        # the deepest mailbox first
  age @2;                            # the oldest first
}

struct ActorSummary {
  kind @0 :Text;
  id @1 :Text;
  state @2 :Text;                    # its state machine's state; empty when it did not answer
  mailbox @3 :UInt64;                # messages queued behind the probe
  timers @4 :UInt32;                 # its pending timers
  startedUs @5 :Int64;               # when it started, µs since the epoch
  waitsFor @6 :Text;                 # why it does not move on by itself; empty: working, or ended
  error @7 :Text;                    # why it did not answer ("no answer within 2000ms: busy in one
                                     # long step, or stuck"); empty when it answered
}

struct KindCount {
  kind @0 :Text;
  live @1 :UInt64;
}

struct Field {
  name @0 :Text;
  value @1 :Text;
}

struct Timer {
  what @0 :Text;                     # "heartbeat timeout", "retry backoff ends", ...
  atUs @1 :Int64;                    # when it is due, µs since the epoch; 0: not known
}

struct ActorDetail {
  summary @0 :ActorSummary;
  fields @1 :List(Field);            # its model, for people
  timers @2 :List(Timer);
  events @3 :List(History.HistoryEvent);  # the last events of its history (workflows, tasks and
                                          # sessions: their workflow's, those of the actor;
                                          # workers: the worker's journal), oldest first
}

struct Blocker {
  subject @0 :Text;                  # "workflow", "task fetch", "session gpu", ...
  state @1 :Text;
  waitsFor @2 :Text;                 # in words, with what to do where there is something to do
}

struct Diagnosis {
  workflowId @0 :Text;
  state @1 :Text;                    # as describe has it (RUNNING, PAUSED, SUCCESS, ...)
  live @2 :Bool;                     # it has an actor now; false: passivated or closed
  summary @3 :Text;                  # one line: why it is not moving, or that it ended
  blockers @4 :List(Blocker);        # one per open task and session, and the workflow itself
}

struct TaskListSummary {
  name @0 :Text;
  queued @1 :List(PriorityDepth);    # waiting tasks by priority, higher first
  sessionQueued @2 :UInt64;          # tasks waiting for their session's worker
  workers @3 :List(WorkerCredit);
  rate @4 :Float64;                  # tasks started per second across workers; 0: unlimited
  burst @5 :UInt32;
  waitReason @6 :Text;               # why its waiting tasks wait; empty: none waits, or nothing holds them
}

struct PriorityDepth {
  priority @0 :Int32;
  queued @1 :UInt64;
}

struct WorkerCredit {
  worker @0 :Text;
  slots @1 :UInt32;
  inUse @2 :UInt32;
}

struct StoreSummary {
  engine @0 :List(Field);            # the storage engine's own figures (RocksDB properties:
                                     # live data, SST files, memtables, pending compaction bytes,
                                     # running compactions and flushes, write stalls)
  batches @1 :UInt64;                # group-commit batches written (each one sync)
  operations @2 :UInt64;             # operations in them
  largestBatch @3 :UInt64;
  events @4 :UInt64;                 # history events appended
  bytesWritten @5 :UInt64;
}
