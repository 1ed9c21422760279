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

interface ClientService {
  # What clients call (named so because capnp reserves "Client" inside every interface).

  startWorkflow @0 (definitionJson :Text, inputJson :Text, workflowId :Text, runFrom :Text)
      -> (workflowId :Text, error :Common.Error);
  # Acknowledged once WorkflowSubmitted is durable. The same id while open returns that run;
  # an empty id gets a new one ("wf-" and 32 hex digits), returned in workflowId.
  result @1 (workflowId :Text) -> (result :WorkflowResult, error :Common.Error);
  # Waits for the workflow to end.
}
