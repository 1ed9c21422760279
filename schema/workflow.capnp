# Workflow definitions: the logical graph a user submits. JSON definitions are decoded by
# capnp::JsonCodec straight into WorkflowDefinition, so this file is the format's single
# source of truth; JSON names are the field names below. Durations are strings such as
# "250ms", "10s", "5m", "2h" or "1h30m" (schema/duration.hpp).
# Evolution: append fields with the next @N; never renumber, retype or reuse one.
@0xe969aa6ee3db9740;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("troupe::schema");

using Json = import "/capnp/compat/json.capnp";

struct WorkflowDefinition {
  name @0 :Text;                      # required; names the definition in listings
  description @1 :Text;
  tasks @2 :List(TaskDefinition);     # at least one; names unique; dependsOn forms a DAG
  sessions @3 :List(SessionDefinition);
}

struct TaskDefinition {
  name @0 :Text;                      # required, unique within the workflow
  dependsOn @1 :List(Text);           # names of tasks that must succeed first
  taskList @2 :Text;                  # the queue workers serve; empty means "default"
  priority @3 :Int32;                 # higher is dispatched first within a task list
  union {
    shell @4 :ShellCommand;           # run a process
    handler @5 :Text;                 # run a C++ function registered by this name in the worker
  }
  input @6 :Json.Value;               # any JSON value, handed to the task as JSON text
  timeouts @7 :Timeouts;
  retry @8 :RetryPolicy;              # absent: one attempt, no retry
  asyncCompletion @9 :Bool;           # the task ends when someone presents its token
                                      # ($TROUPE_TASK_TOKEN) to completeTask or failTask; a shell
                                      # command exiting 0 only hands it off (non-zero still fails)
}

struct ShellCommand {
  command @0 :List(Text);             # argv; command[0] is looked up in PATH
  env @1 :Json.Value;                 # an object of string values added to the environment
  cwd @2 :Text;                       # working directory; empty for the worker's default
}

struct Timeouts {
  # Cadence's four activity timeouts. A set that is given must bound the task: either
  # scheduleToClose, or both scheduleToStart and startToClose.
  scheduleToStart @0 :Text;           # waiting in the task list for a worker
  startToClose @1 :Text;              # one attempt, from start on a worker to its result
  scheduleToClose @2 :Text;           # the whole task, every attempt and wait included
  heartbeat @3 :Text;                 # most time between two heartbeats of a running attempt
}

struct RetryPolicy {
  initialInterval @0 :Text;           # wait before the first retry; default "1s"
  backoffCoefficient @1 :Float64;     # each wait is the previous times this; default 2.0, >= 1
  maximumInterval @2 :Text;           # cap on one wait; default 100 x initialInterval
  maximumAttempts @3 :Int32;          # attempts in all, including the first; 0 = no limit
  expirationInterval @4 :Text;        # no retry starts after this long since the first attempt
  nonRetryableErrors @5 :List(Text);  # failure reasons that end the task at once
}

struct SessionDefinition {
  # Tasks that must all run on one worker (Cadence sessions).
  name @0 :Text;
  tasks @1 :List(Text);               # names of tasks of this workflow; each in one session at most
  creationTimeout @2 :Text;           # most time to wait for a worker with a free session slot
  executionTimeout @3 :Text;          # most time the session may stay open
  envEnter @4 :SessionAction;         # runs on the worker before the session's first task
  envExit @5 :SessionAction;          # runs after its last task, whatever their outcome
  resourceId @6 :Text;                # only a worker that declares this resource_id may hold it
  recreateToken @7 :Text;             # continue on the resource an earlier session held (its token)
  onFailure @8 :Text;                 # "fail" (the default) or "recreate": what losing its worker does
  maxRecreates @9 :UInt32;            # with "recreate": at most this many times (default 3)
  rerunAll @10 :Bool;                 # a recreated session runs all its tasks again, not only the unfinished
  reestablishWithin @11 :Text;        # how long its worker's resource may take to come back (default 30s)
}

struct SessionAction {
  union {
    none @0 :Void;
    shell @1 :ShellCommand;
    handler @2 :Text;
  }
}
