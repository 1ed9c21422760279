// A workflow's DAG as a Graphviz digraph, for `troupe describe WORKFLOW --format dot|svg`: its
// tasks coloured by state, its dependencies as edges, its sessions as clusters.
#pragma once

#include <string>
#include <string_view>

#include "schema/workflow_status.hpp"

namespace troupe::cli {

/// The fill colour of a task in `state`: an X11 colour name Graphviz knows ("palegreen" for
/// SUCCESS, "salmon" for FAILURE...); white for WAITING and UNKNOWN.
std::string_view state_colour(TaskStateCode state);

/// `text` as the inside of a quoted Graphviz label: a backslash, a quote and a line end escaped
/// (so neither a name's '"' nor its '\N' means anything to Graphviz), other control bytes made
/// spaces.
std::string dot_label_text(std::string_view text);

/// The digraph of `workflow`: a node per task, in definition order, named t0, t1... (so any task
/// name is safe) and labelled "NAME\nSTATE" (with the attempt after a first), filled with its
/// state's colour, with its failure or wait reason as its tooltip; an edge from each task a
/// task depends on to it; the tasks of each session inside a cluster labelled with the session's
/// name and state. The graph's label is the workflow's id and state.
std::string workflow_dot(const WorkflowStatus& workflow);

}  // namespace troupe::cli
