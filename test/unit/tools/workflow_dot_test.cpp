// The DAG `troupe describe WORKFLOW` draws, from hand-made snapshots: nodes, edges, colours,
// clusters, and names that would break a naive graph. (integration.cli_logs parses a real
// workflow's graph back with Graphviz.)
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tools/troupe/workflow_dot.hpp"

using namespace troupe;
using namespace troupe::cli;

namespace {

TaskStatus task(std::string name, TaskStateCode code, std::vector<std::string> depends_on = {}) {
  TaskStatus t;
  t.name = std::move(name);
  t.state_code = code;
  t.state = std::string(name_of(code));
  t.depends_on = std::move(depends_on);
  return t;
}

WorkflowStatus diamond() {
  WorkflowStatus w;
  w.workflow_id = "wf-1";
  w.state = "RUNNING";
  w.state_code = WorkflowStateCode::RUNNING;
  w.tasks = {task("fetch", TaskStateCode::SUCCESS), task("left", TaskStateCode::FAILURE, {"fetch"}),
             task("right", TaskStateCode::RUNNING, {"fetch"}),
             task("join", TaskStateCode::UPSTREAM_FAILED, {"left", "right"})};
  w.tasks[1].failure = "ExitCode:3";
  w.tasks[1].failure_details = "exited with 3";
  w.tasks[1].attempt = 2;
  return w;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_SUITE("tools.workflow_dot") {
  TEST_CASE("a node per task in definition order, filled with its state's colour") {
    const std::string dot = workflow_dot(diamond());
    CHECK(dot.starts_with("digraph workflow {\n"));
    CHECK(dot.ends_with("}\n"));
    CHECK(has(dot, "label=\"wf-1 RUNNING\";"));
    CHECK(has(dot, "  t0 [label=\"fetch\\nSUCCESS\", fillcolor=\"palegreen\", tooltip=\"fetch\"];\n"));
    CHECK(has(dot, "  t1 [label=\"left\\nFAILURE (attempt 2)\", fillcolor=\"salmon\", "
                   "tooltip=\"left: ExitCode:3: exited with 3\"];\n"));
    CHECK(has(dot, "  t2 [label=\"right\\nRUNNING\", fillcolor=\"lightskyblue\""));
    CHECK(has(dot, "  t3 [label=\"join\\nUPSTREAM_FAILED\", fillcolor=\"mistyrose\""));
    CHECK(dot.find("t0 [") < dot.find("t1 ["));
    CHECK(dot.find("t2 [") < dot.find("t3 ["));
  }

  TEST_CASE("an edge from each dependency to the task that depends on it, and no other") {
    const std::string dot = workflow_dot(diamond());
    CHECK(has(dot, "  t0 -> t1;\n"));
    CHECK(has(dot, "  t0 -> t2;\n"));
    CHECK(has(dot, "  t1 -> t3;\n"));
    CHECK(has(dot, "  t2 -> t3;\n"));
    CHECK(count(dot, " -> ") == 4);
  }

  TEST_CASE("every state has a colour of its own among the ended and the waiting") {
    std::vector<std::string> colours;
    for (size_t i = 1; i < task_state_names.size(); ++i) {
      colours.emplace_back(state_colour(static_cast<TaskStateCode>(i)));
      CHECK_FALSE(colours.back().empty());
    }
    CHECK(state_colour(TaskStateCode::SUCCESS) != state_colour(TaskStateCode::FORCED_SUCCESS));
    CHECK(state_colour(TaskStateCode::FAILURE) != state_colour(TaskStateCode::KILLED));
    CHECK(state_colour(TaskStateCode::FAILURE) != state_colour(TaskStateCode::UPSTREAM_FAILED));
    CHECK(state_colour(TaskStateCode::WAITING) == "white");
    CHECK(state_colour(TaskStateCode::UNKNOWN) == "white");
  }

  TEST_CASE("names with quotes, backslashes and line ends are escaped; node ids never carry them") {
    WorkflowStatus w;
    w.workflow_id = "wf \"odd\"";
    w.state = "SUCCESS";
    w.tasks = {task("say \"hi\"", TaskStateCode::SUCCESS), task("back\\slash\\", TaskStateCode::SUCCESS, {"say \"hi\""}),
               task("two\nlines\x01", TaskStateCode::WAITING, {"back\\slash\\"})};
    const std::string dot = workflow_dot(w);
    CHECK(has(dot, "label=\"wf \\\"odd\\\" SUCCESS\";"));
    CHECK(has(dot, "t0 [label=\"say \\\"hi\\\"\\nSUCCESS\""));
    // A backslash is doubled, so "\N" (the node's name to Graphviz) or a closing quote never forms.
    CHECK(has(dot, "t1 [label=\"back\\\\slash\\\\\\nSUCCESS\""));
    CHECK(has(dot, "t2 [label=\"two\\nlines \\nWAITING\""));
    CHECK(has(dot, "t0 -> t1;"));
    CHECK(has(dot, "t1 -> t2;"));
    CHECK(dot_label_text("a\\N\"b\"\r") == "a\\\\N\\\"b\\\" ");
  }

  TEST_CASE("a session's tasks are drawn inside its cluster, labelled with its name and state") {
    WorkflowStatus w = diamond();
    w.tasks[1].session = "gpu box";
    w.tasks[3].session = "gpu box";
    SessionStatus session;
    session.name = "gpu box";
    session.state = "OPEN";
    w.sessions = {session};
    const std::string dot = workflow_dot(w);
    const auto cluster = dot.find("  subgraph cluster_0 {\n");
    REQUIRE(cluster != std::string::npos);
    const auto cluster_end = dot.find("  }\n", cluster);
    const std::string inside = dot.substr(cluster, cluster_end - cluster);
    CHECK(has(inside, "label=\"session gpu box\\nOPEN\";"));
    CHECK(has(inside, "    t1 ["));
    CHECK(has(inside, "    t3 ["));
    CHECK_FALSE(has(inside, "t0 ["));
    CHECK_FALSE(has(inside, "t2 ["));
    CHECK(count(dot, "t1 [") == 1);  // drawn once, in its cluster
    CHECK(has(dot, "  t0 ["));
  }

  TEST_CASE("a dependency that names no task of the workflow draws no edge") {
    WorkflowStatus w;
    w.workflow_id = "wf-2";
    w.state = "RUNNING";
    w.tasks = {task("only", TaskStateCode::WAITING, {"ghost"})};
    const std::string dot = workflow_dot(w);
    CHECK(count(dot, " -> ") == 0);
    CHECK(has(dot, "t0 [label=\"only\\nWAITING\", fillcolor=\"white\""));
  }
}
