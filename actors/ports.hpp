// The typed interfaces between actors. A typed actor's alias is its protocol: each line says
// who sends the message and what comes back.
#pragma once

#include <memory>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/caf_types.hpp"

namespace troupe::actors {
struct TaskModel;
}
// A task's final model, handed from its actor to its workflow's within one process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const troupe::actors::TaskModel>)

namespace troupe::actors {

/// What an executor may tell a task actor.
using task_port = caf::typed_actor<
    // the executor's report on the invocation it was given
    caf::reacts_to<report_atom, TaskReport>,
    // the same, from a remote worker that needs to know when the report is durable: true once
    // it is (or once the task no longer needs it), false if the invocation is not this task's
    caf::replies_to<update_atom, TaskReport>::with<bool>,
    // a slot is the task's: it replies true and sends run_atom, or false if it no longer wants
    // it. A grant to a task that has ended bounces as an error, which frees the slot too.
    caf::replies_to<grant_atom, std::string /* executor name */>::with<bool>>;

/// Runs invocations: in-process the LocalExecutor; on a scheduler node the dispatcher, which
/// matches tasks to remote workers by task list.
using executor_actor = caf::typed_actor<
    // from a task: take a free slot, or wait for one (higher priority first, then first come).
    // The answer names the executor whose slot the task holds now, or is empty: the task waits,
    // and a grant comes when a slot is free. A task asks only while it handles nothing else
    // (the request is awaited), so it always takes a slot it is answered with. `avoid` names
    // the executor the task's last attempt failed on (empty: none): it gets the task only when
    // no other executor of the list can take it now. `session` (empty: none) names the session
    // the task belongs to: it waits until the session is pinned to an executor, and runs there.
    caf::replies_to<enqueue_atom, task_port, int32_t /* priority */, std::string /* task list */,
                    std::string /* avoid */, std::string /* session */>::with<std::string>,
    // from a task: stop waiting
    caf::reacts_to<withdraw_atom, task_port, std::string /* task list */>,
    // from a task that accepted a grant: give the slot back without running anything
    caf::reacts_to<release_atom>,
    // from a task holding a granted slot: run this; reports go to the task_port
    caf::reacts_to<run_atom, Invocation, task_port>,
    // from a task: cancel the invocation, which may take `grace` to stop before it is killed
    caf::reacts_to<cancel_atom, std::string /* invocation id */, std::string /* executor */,
                   int64_t /* grace, microseconds */>,
    // from a task revived after a scheduler restart: this invocation was on `executor` when
    // the scheduler stopped; take it back if it still runs there, else report it LOST
    caf::reacts_to<adopt_atom, Invocation, task_port>,
    // from a task that passivates: send this invocation's reports to `to` (the directory, which
    // finds the task again) from now on. False if the executor no longer holds the invocation
    // (it ended, and its last report is on its way to the task)
    caf::replies_to<park_atom, std::string /* invocation id */, std::string /* executor */,
                    task_port /* to */>::with<bool>,
    // from a task about to dispatch a new attempt: answers once the invocation it abandoned
    // (timed out, or failed) is over on `executor`: it ended, its cancellation was confirmed,
    // or it was lost with its worker once that worker's lease ran out. So two attempts of a
    // task never run at once. An error means the same (whoever held it is gone).
    caf::replies_to<settled_atom, std::string /* invocation id */, std::string /* executor */>::with<bool>,
    // from the executor's own handler contexts
    caf::reacts_to<report_atom, TaskReport>,
    caf::reacts_to<wake_atom, uint64_t /* timer */>>;

/// An actor that appends to a history (HistoryWriter): the store's callback tells it the outcome
/// of its append number `ticket` once the batch is durable or failed.
using persisted_port = caf::typed_actor<
    caf::reacts_to<persisted_atom, uint64_t /* ticket */, bool /* ok */, storage::AppendReceipt,
                   std::string /* error */, uint8_t /* Errc */>>;

/// What a task actor tells the workflow actor that owns it.
using task_owner_port = caf::typed_actor<
    // a task instance finished or paused: its index, final TaskState, and its result or error;
    // one that ended without success hands over its model (for an operator's retry, skip or
    // update, which the workflow records for it), else null
    caf::reacts_to<finished_atom, uint32_t, uint8_t, std::string, std::shared_ptr<const TaskModel>>>;

}  // namespace troupe::actors
