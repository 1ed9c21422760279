# The scheduler's bootstrap interface: everything talks to a scheduler through a Gateway.
# Evolution: append fields and methods with the next @N; never renumber, retype or reuse one.
@0xf6951f4dedf5cd52;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

using Common = import "common.capnp";
using Worker = import "worker.capnp";
using History = import "history.capnp";
using Workflow = import "workflow.capnp";

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

  # Operations on one task of a workflow while it runs. Each is recorded in the workflow's
  # history before it is answered, so a restarted scheduler carries it on; a passivated workflow
  # is woken for it. Each answers the workflow's state and the task's once that is durable.
  # Errors: notFound for an unknown workflow; invalidArgument for a task the definition lacks;
  # notAllowedInState, with a message saying what to do instead, when the task or the workflow
  # is not in a state the operation applies to.

  retryTask @9 (workflowId :Text, task :Text) -> (workflowState :Text, taskState :Text, error :Common.Error);
  # A new attempt of a task that failed or was killed, while the rest of the workflow runs; its
  # downstream tasks, blocked by the failure, run once it succeeds. Its attempt numbers go on
  # from the failed ones (invocations stay unique) and its retry policy starts a fresh round
  # (as Airflow's clear: a retried task gets its retries again). The task is SUBMITTED at once,
  # or WAITING until a paused workflow resumes. A workflow that FAILED is reopened (RUNNING),
  # as Airflow reopens a cleared DAG run: the failure it ended with is what one retries, and
  # nothing else of it runs again (unlike rerun, which runs the task's downstream afresh too). A
  # STOPPED workflow is refused: rerun it. Refused for a task that is running or waiting (it has
  # not failed), succeeded, or not run because an upstream task failed (the message names it).
  skipTask @10 (workflowId :Text, task :Text, reason :Text) -> (workflowState :Text, taskState :Text, error :Common.Error);
  # Marks a task FORCED_SUCCESS with `reason` (recorded), and its downstream tasks run as if it
  # had succeeded. Applies to a task that failed or was killed (a FAILED workflow is reopened,
  # as retryTask does), and to one not on a worker: waiting for its dependencies, in its task
  # list, in a retry backoff, or paused. One not scheduled yet is recorded FORCED_SUCCESS when
  # it would be (taskState WAITING until then), so the dependencies it waits for still run
  # first. Refused for a task on a worker (wait for its attempt to end) and for one that
  # succeeded.
  updateTask @11 (workflowId :Text, task :Text, options :TaskOptionsUpdate) -> (workflowState :Text, taskState :Text, error :Common.Error);
  # Changes a task's options from its next dispatch: an attempt on a worker keeps the timeouts it
  # was sent with, while the retry policy decides its retry; a task waiting in its task list
  # moves to the new one (as a new arrival). Checked by the rules of a definition's task
  # (invalidArgument listing every problem, e.g. "timeouts.heartbeat: is longer than
  # startToClose (1m), so it could never fire"). Also for a finished workflow's failed task, to
  # apply to a retryTask or rerun. Refused for a task that succeeded (it has no next attempt).
}

struct TaskOptionsUpdate {
  # What updateTask changes; what is left unset keeps its value.
  taskList @0 :Text;                 # the task list it is dispatched from; empty: unchanged
  priority @1 :Int32;                # with setPriority: its priority within the task list
  setPriority @2 :Bool;
  timeouts @3 :Workflow.Timeouts;    # each timeout given is a duration ("5m") replacing the
                                     # task's, or "none" to remove it; the others stay
  retry @4 :Workflow.RetryPolicy;    # when given, the whole new retry policy, as in a definition
                                     # (fields left out take a definition's defaults)
  removeRetry @5 :Bool;              # no retry: one attempt
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
