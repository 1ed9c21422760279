// The DAG of a workflow as Graphviz dot text.
#include "tools/troupe/workflow_dot.hpp"

#include <map>
#include <vector>

namespace troupe::cli {
namespace {

std::string quoted(std::string_view text) { return "\"" + dot_label_text(text) + "\""; }

/// The label of a task's node: its name, its state, and its attempt once there was more than one.
std::string task_label(const TaskStatus& task) {
  std::string state = task.state.empty() ? std::string(name_of(task.state_code)) : task.state;
  if (task.attempt > 1) state += " (attempt " + std::to_string(task.attempt) + ")";
  return dot_label_text(task.name) + "\\n" + dot_label_text(state);
}

/// What a task's tooltip says (SVG shows it on hover): why it failed, or why it waits.
std::string task_tooltip(const TaskStatus& task) {
  std::string why = task.failure_message();
  if (why.empty()) why = task.wait_reason;
  return why.empty() ? task.name : task.name + ": " + why;
}

}  // namespace

std::string_view state_colour(TaskStateCode state) {
  switch (state) {
    case TaskStateCode::UNKNOWN:
    case TaskStateCode::WAITING: return "white";
    case TaskStateCode::SUBMITTED:
    case TaskStateCode::DELAY_EXECUTION:
    case TaskStateCode::DISPATCHING:
    case TaskStateCode::DISPATCHED: return "lightcyan";
    case TaskStateCode::RUNNING: return "lightskyblue";
    case TaskStateCode::PAUSED: return "khaki";
    case TaskStateCode::KILLED: return "orange";
    case TaskStateCode::FAILURE: return "salmon";
    case TaskStateCode::SUCCESS: return "palegreen";
    case TaskStateCode::FORCED_SUCCESS: return "darkseagreen";
    case TaskStateCode::FAILOVER: return "gold";
    case TaskStateCode::UPSTREAM_FAILED: return "mistyrose";
    case TaskStateCode::NEVER_ATTEMPTED: return "lightgray";
  }
  return "white";
}

std::string dot_label_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
    }
  }
  return out;
}

std::string workflow_dot(const WorkflowStatus& workflow) {
  std::map<std::string, size_t> index;  // task name -> node number
  for (size_t i = 0; i < workflow.tasks.size(); ++i) index.emplace(workflow.tasks[i].name, i);

  std::string out = "digraph workflow {\n";
  out += "  label=" + quoted(workflow.workflow_id + " " + workflow.state) + ";\n";
  out += "  labelloc=t;\n  rankdir=LR;\n";
  out += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n";
  out += "  edge [color=gray40];\n";
  auto node = [&](size_t i, const std::string& indent) {
    const TaskStatus& task = workflow.tasks[i];
    out += indent + "t" + std::to_string(i) + " [label=\"" + task_label(task) + "\", fillcolor=\"" +
           std::string(state_colour(task.state_code)) + "\", tooltip=" + quoted(task_tooltip(task)) + "];\n";
  };
  // Sessions first, each a cluster of its tasks; then the tasks of none.
  std::vector<bool> drawn(workflow.tasks.size(), false);
  for (size_t s = 0; s < workflow.sessions.size(); ++s) {
    const SessionStatus& session = workflow.sessions[s];
    out += "  subgraph cluster_" + std::to_string(s) + " {\n";
    out += "    label=" + quoted("session " + session.name + "\n" + session.state) + ";\n";
    out += "    style=\"rounded,dashed\";\n    color=gray50;\n";
    for (size_t i = 0; i < workflow.tasks.size(); ++i) {
      if (workflow.tasks[i].session != session.name || drawn[i]) continue;
      node(i, "    ");
      drawn[i] = true;
    }
    out += "  }\n";
  }
  for (size_t i = 0; i < workflow.tasks.size(); ++i) {
    if (!drawn[i]) node(i, "  ");
  }
  for (size_t i = 0; i < workflow.tasks.size(); ++i) {
    for (const auto& dependency : workflow.tasks[i].depends_on) {
      auto from = index.find(dependency);
      if (from == index.end()) continue;  // not a task of this workflow: nothing to draw it from
      out += "  t" + std::to_string(from->second) + " -> t" + std::to_string(i) + ";\n";
    }
  }
  out += "}\n";
  return out;
}

}  // namespace troupe::cli
