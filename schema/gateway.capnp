# The scheduler's bootstrap interface: everything talks to a scheduler through a Gateway.
# Evolution: append fields and methods with the next @N; never renumber, retype or reuse one.
@0xf6951f4dedf5cd52;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

using Common = import "common.capnp";
using Worker = import "worker.capnp";
using History = import "history.capnp";

interface Gateway {
  client @0 (token :Text) -> (client :ClientService, error :Common.Error);
  # `token`: the cluster's secret (its token file) when the cluster has one; refused otherwise.
  registerWorker @1 (info :Worker.WorkerInfo, control :Worker.WorkerControl, token :Text)
      -> (registration :Worker.Registration, error :Common.Error);
  # Refused (error set) while another live instance holds the shard id, or for a wrong token.
}

struct WorkflowResult {
  workflowId @0 :Text;
  state @1 :Text;                    # SUCCESS, FAILED, STOPPED, ...
  detail @2 :Text;                   # the failure reason of a failed workflow
}

struct TaskDescription {
  name @0 :Text;
  state @1 :Text;                    # a task state, or WAITING before the task was scheduled
  attempt @2 :UInt32;
  worker @3 :Text;                   # the shard of its current or last invocation
  failure @4 :Text;                  # the reason of its last failure, if any
  progress @5 :Data;                 # its last heartbeat's progress
  awaitingCompletion @6 :Bool;       # asyncCompletion: handed off, waiting for its token
}

struct WorkflowDescription {
  workflowId @0 :Text;
  state @1 :Text;
  detail @2 :Text;                   # the failure reason of a failed workflow
  tasks @3 :List(TaskDescription);        # in definition order
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
  result @1 (workflowId :Text) -> (result :WorkflowResult, error :Common.Error);
  # Waits for the workflow to end.
  control @2 (workflowId :Text, action :ControlAction) -> (state :Text, error :Common.Error);
  # Pauses, resumes or stops a workflow; answers the state it leads to (READY_PAUSE, PAUSED,
  # RUNNING, READY_STOP, STOPPED, ...) once that is durable. notAllowedInState when the action
  # does not apply ("PAUSE is not allowed in state SUCCESS").
  describe @3 (workflowId :Text) -> (description :WorkflowDescription, error :Common.Error);
  # The workflow's and every task's state as durably recorded (its history replayed).
  list @4 (query :ListQuery) -> (workflows :List(WorkflowSummary), nextCursor :Text, error :Common.Error);
  # One page of workflows in id order, from the store's index (no workflow is loaded). An empty
  # nextCursor means the end; otherwise pass it as query.after for the next page (a page may
  # hold fewer than query.limit workflows, even none, when few match a filter).
  watch @5 (workflowId :Text, fromSequence :UInt64, sink :HistorySink) -> (lastSequence :UInt64, error :Common.Error);
  # Pushes the workflow's history from sequence `fromSequence` (1: from the start) to `sink`,
  # in order, each event once, live as it is recorded; returns once the workflow has closed and
  # its last event was delivered. A client that reconnects passes the sequence after the last
  # one it received and misses nothing.
  completeTask @6 (token :Text, result :Data) -> (error :Common.Error);
  failTask @7 (token :Text, reason :Text, details :Text) -> (error :Common.Error);
  # Ends an invocation of a task with asyncCompletion, by the token it was given
  # ($TROUPE_TASK_TOKEN). A forged or altered token is refused (INVALID_ARGUMENT); so is one
  # whose invocation is no longer current (retried, timed out or already ended: NOT_FOUND).
  rerun @8 (workflowId :Text, runFrom :Text) -> (state :Text, error :Common.Error);
  # Reopens a closed workflow and runs `runFrom` and every task downstream of it again (empty:
  # every task that did not succeed); the other tasks keep their outcome. Answers RUNNING once
  # the rerun is durable. notAllowedInState while the workflow is open; invalidArgument for a
  # task the definition lacks, or one that depends on a task outside the rerun that did not
  # succeed (the message names it: rerun from there instead).

  purge @9 (closedBeforeUs :Int64) -> (purged :UInt64, error :Common.Error);
  # Deletes every workflow that closed before this time (µs since the epoch): its history and
  # its index record, as the cluster's `retention` does on its own. Open workflows are never
  # purged, nor one reopened by a rerun meanwhile. Answers how many were purged, once that is
  # durable. A purged workflow is unknown (notFound) to every method after, and its id free.
}

interface HistorySink {
  events @0 (events :List(History.HistoryEvent)) -> (stop :Bool);
  # The next events of a watched history. The next call comes once this one returns; `stop`
  # ends the watch early.
}

struct ListQuery {
  state @0 :Text;                    # OPEN, CLOSED, or how closed ones ended: SUCCESS, FAILED,
                                     # STOPPED; empty: all
  definitionName @1 :Text;           # empty: any
  createdFromUs @2 :Int64;           # created at or after (0: no bound), µs since the epoch
  createdToUs @3 :Int64;             # created before (0: no bound)
  after @4 :Text;                    # the cursor: a previous page's nextCursor
  limit @5 :UInt32;                  # most workflows in the page (0: 100; at most 1000)
}

struct WorkflowSummary {
  workflowId @0 :Text;
  definitionName @1 :Text;
  state @2 :Text;                    # OPEN, or how it ended (SUCCESS, FAILED, STOPPED)
  createdUs @3 :Int64;
  closedUs @4 :Int64;                # 0 while open
}
