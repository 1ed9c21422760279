// A session's actions on its worker: envEnter first, tasks one at a time, envExit last, and
// Deadline Cloud's outcome rules for each way envEnter can fail, for closing mid-action, and for
// a failed envExit.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "actors/agent/session_runner.hpp"

using namespace troupe::actors;

namespace {

using K = SessionActionKind;
using O = SessionActionOutcome;

const SessionActionRef enter{K::ENV_ENTER, {}};
const SessionActionRef exit_action{K::ENV_EXIT, {}};
SessionActionRef task(const std::string& id) { return {K::TASK, id}; }

std::string name(const SessionActionRef& a) {
  switch (a.kind) {
    case K::ENV_ENTER: return "envEnter";
    case K::ENV_EXIT: return "envExit";
    case K::TASK: return a.id;
  }
  return "?";
}

std::string name(O o) {
  switch (o) {
    case O::SUCCEEDED: return "SUCCEEDED";
    case O::FAILED: return "FAILED";
    case O::CANCELED: return "CANCELED";
    case O::INTERRUPTED: return "INTERRUPTED";
    case O::NEVER_ATTEMPTED: return "NEVER_ATTEMPTED";
  }
  return "?";
}

/// A step as text: "report a SUCCEEDED, b NEVER_ATTEMPTED; start c; closed".
std::string text(const SessionStep& step) {
  std::string out;
  if (!step.report.empty()) {
    out += "report";
    for (size_t i = 0; i < step.report.size(); ++i) {
      out += (i ? ", " : " ") + name(step.report[i].first) + " " + name(step.report[i].second);
    }
  }
  if (step.start) out += (out.empty() ? "" : "; ") + std::string("start ") + name(*step.start);
  if (step.closed) out += (out.empty() ? "" : "; ") + std::string("closed");
  return out;
}

}  // namespace

TEST_SUITE("actors.session_runner") {
  TEST_CASE("envEnter first, then the tasks one at a time in the order they came, then envExit on close") {
    SessionRunner r(true, true);
    CHECK(text(r.add_task("t1")) == "");  // not open yet: it waits
    CHECK(text(r.open()) == "start envEnter");
    CHECK(text(r.add_task("t2")) == "");  // behind envEnter and t1
    CHECK(text(r.ended(enter, O::SUCCEEDED)) == "report envEnter SUCCEEDED; start t1");
    CHECK(r.takes_tasks());
    CHECK(text(r.ended(task("t1"), O::SUCCEEDED)) == "report t1 SUCCEEDED; start t2");
    CHECK(text(r.add_task("t3")) == "");
    // A failed task holds the session until the scheduler, which knows its retries, says on.
    CHECK(text(r.ended(task("t2"), O::FAILED)) == "report t2 FAILED");
    CHECK(text(r.add_task("t2-retry")) == "");
    CHECK(text(r.proceed()) == "start t3");
    CHECK(text(r.ended(task("t3"), O::SUCCEEDED)) == "report t3 SUCCEEDED; start t2-retry");
    CHECK(text(r.ended(task("t2-retry"), O::SUCCEEDED)) == "report t2-retry SUCCEEDED");
    CHECK(text(r.close()) == "start envExit");
    // A failed envExit affects only itself.
    CHECK(text(r.ended(exit_action, O::FAILED)) == "report envExit FAILED; closed");
    CHECK(r.closed());
    CHECK(text(r.add_task("late")) == "report late NEVER_ATTEMPTED; closed");
  }

  TEST_CASE("an envEnter that does not succeed stops the tasks, after its own outcome, and envExit still runs") {
    for (O outcome : {O::FAILED, O::CANCELED, O::INTERRUPTED}) {
      CAPTURE(name(outcome));
      SessionRunner r(true, true);
      r.open();
      r.add_task("t1");
      r.add_task("t2");
      CHECK(text(r.ended(enter, outcome)) ==
            "report envEnter " + name(outcome) + ", t1 NEVER_ATTEMPTED, t2 NEVER_ATTEMPTED; start envExit");
      CHECK_FALSE(r.takes_tasks());
      // Sent while envExit runs: decided only once envExit has its final status.
      CHECK(text(r.add_task("t3")) == "");
      CHECK(text(r.ended(exit_action, O::SUCCEEDED)) == "report envExit SUCCEEDED, t3 NEVER_ATTEMPTED; closed");
    }
  }

  TEST_CASE("closing while a task runs: queued tasks end NEVER_ATTEMPTED only after its final status") {
    SessionRunner r(false, true);
    CHECK(text(r.open()) == "");  // no envEnter: entered at once, nothing to run yet
    CHECK(text(r.add_task("t1")) == "start t1");
    CHECK(text(r.add_task("t2")) == "");
    CHECK(text(r.close()) == "");  // t1 runs: nothing is decided before it ends
    CHECK(text(r.add_task("t3")) == "");
    CHECK(text(r.ended(task("t1"), O::INTERRUPTED)) ==
          "report t1 INTERRUPTED, t2 NEVER_ATTEMPTED, t3 NEVER_ATTEMPTED; start envExit");
    CHECK(text(r.ended(exit_action, O::SUCCEEDED)) == "report envExit SUCCEEDED; closed");
  }

  TEST_CASE("a task that failed for good: the scheduler closes, and what was queued is never attempted") {
    SessionRunner r(false, true);
    r.open();
    r.add_task("t1");
    r.add_task("t2");
    CHECK(text(r.ended(task("t1"), O::FAILED)) == "report t1 FAILED");  // t2 does not start
    CHECK(text(r.close()) == "report t2 NEVER_ATTEMPTED; start envExit");
  }

  TEST_CASE("closing while envEnter runs: envExit follows it whatever it did") {
    SessionRunner r(true, true);
    r.open();
    r.add_task("t1");
    CHECK(text(r.close()) == "");
    CHECK(text(r.ended(enter, O::SUCCEEDED)) == "report envEnter SUCCEEDED, t1 NEVER_ATTEMPTED; start envExit");
  }

  TEST_CASE("without envExit a session closes once its last action ended; one never opened has nothing to exit") {
    SessionRunner plain(false, false);
    plain.open();
    CHECK(text(plain.add_task("t1")) == "start t1");
    CHECK(text(plain.close()) == "");
    CHECK(text(plain.ended(task("t1"), O::SUCCEEDED)) == "report t1 SUCCEEDED; closed");

    SessionRunner entering(true, false);
    entering.open();
    CHECK(text(entering.ended(enter, O::FAILED)) == "report envEnter FAILED; closed");

    SessionRunner never(true, true);
    never.add_task("t1");
    CHECK(text(never.close()) == "report t1 NEVER_ATTEMPTED; closed");
    CHECK(text(never.open()) == "");  // closed: it does not open any more
  }

  TEST_CASE("an end that is not the running action's, or a second open, changes nothing") {
    SessionRunner r(true, true);
    r.open();
    CHECK(text(r.open()) == "");
    CHECK(text(r.ended(task("t9"), O::SUCCEEDED)) == "");
    CHECK(text(r.ended(exit_action, O::SUCCEEDED)) == "");
    CHECK(text(r.ended(enter, O::NEVER_ATTEMPTED)) == "");  // not a final status of a started action
    REQUIRE(r.running());
    CHECK(*r.running() == enter);
  }
}
