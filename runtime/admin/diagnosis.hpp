// Why a workflow is not moving, in words: its durable status (what describe answers) read
// together with what its live actors say when probed. Plain: tested as a function of both.
#pragma once

#include <string>
#include <vector>

#include "actors/system/prober.hpp"
#include "schema/workflow_status.hpp"

namespace troupe::runtime {

struct Blocker {
  std::string subject;  ///< "workflow", "task 'fetch'", "session 'gpu'"
  std::string state;
  std::string waits_for;
};

struct Diagnosis {
  std::string workflow_id;
  std::string state;
  bool live = false;     ///< its workflow actor answered a probe
  std::string summary;   ///< one line
  std::vector<Blocker> blockers;
};

/// `probes`: the workflow's live actors (ids WORKFLOW, WORKFLOW/TASK, WORKFLOW/SESSION) as the
/// prober found them; empty for a passivated or closed workflow.
Diagnosis diagnose(const WorkflowStatus& status, const std::vector<actors::ProbedActor>& probes);

}  // namespace troupe::runtime
