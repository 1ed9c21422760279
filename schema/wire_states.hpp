// The state codes of workflow_status.hpp as gateway.capnp's enums, and back: the values are
// equal, which the asserts below hold to. Includes generated Cap'n Proto code: only for the
// files that build or read client API messages.
#pragma once

#include <cstdint>

#include "schema/gateway.capnp.h"
#include "schema/workflow_status.hpp"

namespace troupe {

static_assert(static_cast<uint16_t>(schema::WorkflowState::UNKNOWN) == static_cast<uint8_t>(WorkflowStateCode::UNKNOWN));
static_assert(static_cast<uint16_t>(schema::WorkflowState::SUBMITTED) == static_cast<uint8_t>(WorkflowStateCode::SUBMITTED));
static_assert(static_cast<uint16_t>(schema::WorkflowState::RUNNING) == static_cast<uint8_t>(WorkflowStateCode::RUNNING));
static_assert(static_cast<uint16_t>(schema::WorkflowState::READY_PAUSE) == static_cast<uint8_t>(WorkflowStateCode::READY_PAUSE));
static_assert(static_cast<uint16_t>(schema::WorkflowState::PAUSED) == static_cast<uint8_t>(WorkflowStateCode::PAUSED));
static_assert(static_cast<uint16_t>(schema::WorkflowState::READY_STOP) == static_cast<uint8_t>(WorkflowStateCode::READY_STOP));
static_assert(static_cast<uint16_t>(schema::WorkflowState::STOPPED) == static_cast<uint8_t>(WorkflowStateCode::STOPPED));
static_assert(static_cast<uint16_t>(schema::WorkflowState::SUCCESS) == static_cast<uint8_t>(WorkflowStateCode::SUCCESS));
static_assert(static_cast<uint16_t>(schema::WorkflowState::FAILED) == static_cast<uint8_t>(WorkflowStateCode::FAILED));
static_assert(static_cast<uint16_t>(schema::WorkflowState::FAILOVER) == static_cast<uint8_t>(WorkflowStateCode::FAILOVER));

static_assert(static_cast<uint16_t>(schema::TaskState::UNKNOWN) == static_cast<uint8_t>(TaskStateCode::UNKNOWN));
static_assert(static_cast<uint16_t>(schema::TaskState::WAITING) == static_cast<uint8_t>(TaskStateCode::WAITING));
static_assert(static_cast<uint16_t>(schema::TaskState::UPSTREAM_FAILED) == static_cast<uint8_t>(TaskStateCode::UPSTREAM_FAILED));
static_assert(static_cast<uint16_t>(schema::TaskState::SUBMITTED) == static_cast<uint8_t>(TaskStateCode::SUBMITTED));
static_assert(static_cast<uint16_t>(schema::TaskState::DELAY_EXECUTION) == static_cast<uint8_t>(TaskStateCode::DELAY_EXECUTION));
static_assert(static_cast<uint16_t>(schema::TaskState::DISPATCHING) == static_cast<uint8_t>(TaskStateCode::DISPATCHING));
static_assert(static_cast<uint16_t>(schema::TaskState::DISPATCHED) == static_cast<uint8_t>(TaskStateCode::DISPATCHED));
static_assert(static_cast<uint16_t>(schema::TaskState::RUNNING) == static_cast<uint8_t>(TaskStateCode::RUNNING));
static_assert(static_cast<uint16_t>(schema::TaskState::PAUSED) == static_cast<uint8_t>(TaskStateCode::PAUSED));
static_assert(static_cast<uint16_t>(schema::TaskState::KILLED) == static_cast<uint8_t>(TaskStateCode::KILLED));
static_assert(static_cast<uint16_t>(schema::TaskState::FAILURE) == static_cast<uint8_t>(TaskStateCode::FAILURE));
static_assert(static_cast<uint16_t>(schema::TaskState::SUCCESS) == static_cast<uint8_t>(TaskStateCode::SUCCESS));
static_assert(static_cast<uint16_t>(schema::TaskState::FORCED_SUCCESS) == static_cast<uint8_t>(TaskStateCode::FORCED_SUCCESS));
static_assert(static_cast<uint16_t>(schema::TaskState::FAILOVER) == static_cast<uint8_t>(TaskStateCode::FAILOVER));

inline schema::WorkflowState to_wire(WorkflowStateCode code) {
  return static_cast<schema::WorkflowState>(static_cast<uint16_t>(code));
}
inline schema::TaskState to_wire(TaskStateCode code) { return static_cast<schema::TaskState>(static_cast<uint16_t>(code)); }

/// A received enum as a code; UNKNOWN for a value this build does not know (a newer peer's).
inline WorkflowStateCode from_wire(schema::WorkflowState state) {
  const auto value = static_cast<uint16_t>(state);
  return value < workflow_state_names.size() ? static_cast<WorkflowStateCode>(value) : WorkflowStateCode::UNKNOWN;
}
inline TaskStateCode from_wire(schema::TaskState state) {
  const auto value = static_cast<uint16_t>(state);
  return value < task_state_names.size() ? static_cast<TaskStateCode>(value) : TaskStateCode::UNKNOWN;
}

}  // namespace troupe
