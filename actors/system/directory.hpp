// The directory: workflow id -> workflow actor. It admits submissions (validating the
// definition first), revives a workflow from its history when it is asked for one that is
// open but has no actor (after a restart), answers results of closed workflows from their
// histories, reopens finished ones for a rerun, and on recovery revives every open workflow a
// page at a time.
//
// It is also the workflow cache. Beyond Wiring::workflow_cache live workflows it asks the least
// recently used ones to passivate: an idle workflow (every task waiting on an executor, a
// backoff, a resume or a completion token) gives up its actors, its history keeps its state,
// and the next thing that happens to it (a report, a client request, a timer coming due)
// wakes it from that history. Reports on the invocations of passivated tasks come here.
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/workflow/workflow_actor.hpp"
#include "actors/system/actor_probe.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

/// What a client asks an open workflow to do.
enum class WorkflowControl : uint8_t { PAUSE, RESUME, STOP, KILL };

using directory_actor = caf::typed_actor<
    // from clients: submit (id, definition JSON, input, run-from task); replies the state once
    // durable. INVALID_ARGUMENT lists every problem of the definition. The id of a workflow that
    // is still open replies "OPEN" and starts nothing (idempotent submit); the id of a finished
    // one, or of one whose first submission is still on its way, is ALREADY_EXISTS
    caf::replies_to<submit_atom, std::string, std::string, std::string, std::string>::with<std::string>,
    // from clients: the actor of an open workflow, revived if needed. NOT_FOUND for an unknown
    // id; NOT_ALLOWED_IN_STATE for a finished workflow
    caf::replies_to<lookup_atom, std::string>::with<workflow_actor>,
    // from clients: rerun a finished workflow from a task (empty: every task that did not
    // succeed), reopening it; replies RUNNING once durable. NOT_FOUND for an unknown id, else as
    // the workflow actor's rerun
    caf::replies_to<rerun_atom, std::string, std::string>::with<std::string>,
    // from clients: an operator's retry, skip or update of one task of a workflow, revived or
    // woken if need be, or adopted if it has finished (a retry or skip reopens a FAILED one);
    // replies as the workflow actor's operate. NOT_FOUND for an unknown id
    caf::replies_to<operate_atom, std::string, TaskCommand>::with<TaskCommandOutcome>,
    // from clients: how the workflow ended, waiting for an open one
    caf::replies_to<result_atom, std::string>::with<WorkflowOutcome>,
    // from clients: pause, resume, stop or kill (WorkflowControl) an open workflow, revived or
    // woken if needed; replies the state it led to once durable. NOT_ALLOWED_IN_STATE "has
    // finished" for a finished one, as the workflow actor's refusals otherwise
    caf::replies_to<control_atom, std::string, uint8_t>::with<std::string>,
    // from clients (completeTask/failTask): the report for the named task of an open workflow
    caf::replies_to<complete_atom, std::string /* workflow */, std::string /* task */, TaskReport>::with<bool>,
    // from executors: reports on invocations of passivated tasks (the directory stands in for
    // their task_port; see WorkflowCache). The workflow is woken and the report passed on
    caf::reacts_to<report_atom, TaskReport>,
    caf::replies_to<update_atom, TaskReport>::with<bool>,
    // its own timers: wake a passivated workflow whose task timer is due; look for idle
    // workflows to passivate again
    caf::reacts_to<wake_atom, std::string, int64_t /* due */>, caf::reacts_to<wake_atom>,
    // from its workflows, once a close is durable: the outcome, and whether the actor ends
    caf::reacts_to<closed_atom, std::string, WorkflowOutcome, bool>,
    // from tests and benchmarks: how many workflows have actors, and how many are passivated
    caf::replies_to<describe_atom>::with<uint64_t, uint64_t>,
    // from the node at start: revive every open workflow; replies how many
    caf::replies_to<revive_atom>::with<uint64_t>>::extend_with<probe_port>;

/// `store` is read directly (reads are short and local); writes go through wiring.writer.
directory_actor spawn_directory(caf::actor_system& system, std::shared_ptr<storage::HistoryStore> store,
                                Wiring wiring);

}  // namespace troupe::actors
