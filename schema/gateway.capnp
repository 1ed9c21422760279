# The scheduler's bootstrap interface: everything talks to a scheduler through a Gateway.
# Evolution: append fields and methods with the next @N; never renumber, retype or reuse one.
@0xf6951f4dedf5cd52;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

using Common = import "common.capnp";
using Worker = import "worker.capnp";

interface Gateway {
  client @0 () -> (client :ClientService);
  registerWorker @1 (info :Worker.WorkerInfo, control :Worker.WorkerControl)
      -> (registration :Worker.Registration, error :Common.Error);
  # Refused (error set) while another live instance holds the shard id.
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
  stop @2;                           # active tasks are killed; STOPPED once they are
}

interface ClientService {
  # What clients call (named so because capnp reserves "Client" inside every interface).

  startWorkflow @0 (definitionJson :Text, inputJson :Text, workflowId :Text, runFrom :Text)
      -> (workflowId :Text, error :Common.Error);
  # Acknowledged once WorkflowSubmitted is durable. The same id while open returns that run;
  # an empty id gets a new one ("wf-" and 32 hex digits), returned in workflowId.
  result @1 (workflowId :Text) -> (result :WorkflowResult, error :Common.Error);
  # Waits for the workflow to end.
  control @2 (workflowId :Text, action :ControlAction) -> (state :Text, error :Common.Error);
  # Pauses, resumes or stops a workflow; answers the state it leads to (READY_PAUSE, PAUSED,
  # RUNNING, READY_STOP, STOPPED, ...) once that is durable. notAllowedInState when the action
  # does not apply ("PAUSE is not allowed in state SUCCESS").
  describe @3 (workflowId :Text) -> (description :WorkflowDescription, error :Common.Error);
  # The workflow's and every task's state as durably recorded (its history replayed).
}
