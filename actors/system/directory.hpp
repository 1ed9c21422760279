// The directory: workflow id -> workflow actor. It admits submissions (validating the
// definition first), revives a workflow from its history when it is asked for one that is
// open but has no actor (after a restart), answers results of closed workflows from their
// histories, reopens finished ones for a rerun, and on recovery revives every open workflow a
// page at a time.
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/workflow/workflow_actor.hpp"
#include "storage/history_store.hpp"

namespace troupe::actors {

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
    // from clients: how the workflow ended, waiting for an open one
    caf::replies_to<result_atom, std::string>::with<WorkflowOutcome>,
    // from the node at start: revive every open workflow; replies how many
    caf::replies_to<revive_atom>::with<uint64_t>>;

/// `store` is read directly (reads are short and local); writes go through wiring.writer.
directory_actor spawn_directory(caf::actor_system& system, std::shared_ptr<storage::HistoryStore> store,
                                Wiring wiring);

}  // namespace troupe::actors
