// The session actor: one per session of a running workflow, a child of the workflow actor like
// its task actors. It feeds the session's table (session_machine.hpp) the events that happen to
// the session, records each in the workflow's history before it acts on it, and carries out the
// table's actions: it asks the dispatcher for a worker with a free session slot, opens the
// session there (envEnter), pins the session's tasks to that worker, and closes the session
// (envExit) when its tasks are over. It tells its workflow when the session's tasks must end
// without running, and when the session is over.
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/typed_actor.hpp>

#include "actors/session/session_model.hpp"
#include "actors/system/actor_probe.hpp"
#include "actors/wiring.hpp"
#include "schema/definition.hpp"

namespace troupe::actors {

/// What a session actor tells the workflow actor that owns it.
using session_owner_port = caf::typed_actor<
    // the session's tasks still active must end (NEVER_ATTEMPT_QUEUED, STOP_CURRENT_ACTION): its
    // worker runs one action at a time, so all but the running one have yet to start there
    caf::reacts_to<session_atom, uint32_t /* session index */, kill_atom>,
    // it was recreated and says rerunAll: its tasks that succeeded run again in the new instance
    caf::reacts_to<session_atom, uint32_t /* session index */, rerun_atom, uint32_t /* its attempt */>,
    // the session is over: CLOSED or FAILED (a SessionState), and why it failed (reason,
    // details; "TaskFailed" when a task of it failed for good, which fails its workflow anyway)
    caf::reacts_to<session_atom, uint32_t /* session index */, uint8_t /* SessionState */, std::string, std::string>>;

using session_actor = caf::typed_actor<
    // from the workflow: a task of the session is ready to run (FIRST_TASK_READY)
    caf::reacts_to<start_atom>,
    // from the workflow: the session's tasks are over, none failed (TASKS_DONE); or one of them
    // failed for good (TASK_FAILED: its name, failure reason and details)
    caf::reacts_to<finished_atom, bool /* failed */, std::string /* task */, std::string, std::string>,
    // from the workflow: it stops (CANCEL), saying why
    caf::reacts_to<stop_atom, std::string>,
    // from the workflow, once after reviving from history: carry on from the replayed state
    // (its worker, if it had one, is asked for again; one that does not come back is lost)
    caf::reacts_to<recover_atom>,
    // from the dispatcher: the worker holding the session is lost (shard, why)
    caf::reacts_to<lost_atom, std::string, std::string>,
    // from the dispatcher: an operator drains the worker holding the session (shard, whether
    // the drain interrupts what runs there now)
    caf::reacts_to<drain_atom, std::string, bool>,
    // its own timers (a SessionTimer, generation)
    caf::reacts_to<timeout_atom, uint8_t, uint64_t>,
    // from anyone: the session's canonical state (SessionModel::canonical)
    caf::replies_to<describe_atom>::with<std::string>>::extend_with<persisted_port, probe_port>;

struct SessionSetup {
  std::string workflow_id;
  std::shared_ptr<const WorkflowSpec> spec;
  uint32_t index = 0;  ///< into WorkflowSpec::sessions
  SessionModel model;  ///< fresh (WAITING), or replayed
  session_owner_port owner;
  std::shared_ptr<const Wiring> wiring;
  /// The workflow's input (JSON): envEnter's and envExit's input.
  std::shared_ptr<const std::string> workflow_input;
};

session_actor spawn_session(caf::local_actor* parent, SessionSetup setup);

}  // namespace troupe::actors
