// The sessions a worker holds: which invocation starts when, which call is answered when, and
// which tasks end without running, as the worker agent carries it out.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "actors/agent/hosted_sessions.hpp"

using namespace troupe::actors;

namespace {

Invocation action(const std::string& id) {
  Invocation inv;
  inv.invocation_id = id;
  inv.command = {"true"};
  return inv;
}

SessionOpening opening(bool enter, bool exit) {
  SessionOpening o;
  o.id = "wf/s";
  o.workflow_id = "wf";
  o.name = "s";
  o.directory = "/sessions/wf/s";
  if (enter) o.env_enter = action("wf/s.envEnter/1.1");
  if (exit) o.env_exit = action("wf/s.envExit/1.1");
  return o;
}

Invocation task(const std::string& id) {
  Invocation inv = action(id);
  inv.session_id = "wf/s";
  return inv;
}

TaskReport outcome(const std::string& id, uint8_t kind) {
  TaskReport r;
  r.invocation_id = id;
  r.kind = kind;
  if (kind == TaskReport::FAILED) r.reason = "ExitCode:1";
  return r;
}

std::vector<std::string> started(const SessionEffects& e) {
  std::vector<std::string> ids;
  for (const auto& inv : e.start) ids.push_back(inv.invocation_id);
  return ids;
}

}  // namespace

TEST_SUITE("actors.hosted_sessions") {
  TEST_CASE("envEnter runs first and answers the opening; tasks then run one at a time in their session's directory") {
    HostedSessions hosted;
    const uint64_t call = hosted.next_call();
    auto opened = hosted.open(opening(true, true), call);
    CHECK(started(opened) == std::vector<std::string>{"wf/s.envEnter/1.1"});
    CHECK(opened.start[0].session_dir == "/sessions/wf/s");
    CHECK(opened.answers.empty());  // not before envEnter ended
    CHECK(hosted.is_env_action("wf/s.envEnter/1.1"));
    CHECK_FALSE(hosted.takes_tasks("wf/s"));

    auto entered = hosted.ended("wf/s.envEnter/1.1", outcome("wf/s.envEnter/1.1", TaskReport::SUCCEEDED));
    REQUIRE(entered.answers.size() == 1);
    CHECK(entered.answers[0].call == call);
    CHECK(entered.answers[0].opening);
    REQUIRE(entered.answers[0].outcome);
    CHECK(entered.answers[0].outcome->kind == TaskReport::SUCCEEDED);
    CHECK(hosted.takes_tasks("wf/s"));

    auto first = hosted.add_task(task("wf/a/1.1"));
    CHECK(started(first) == std::vector<std::string>{"wf/a/1.1"});
    CHECK(first.start[0].session_dir == "/sessions/wf/s");
    auto second = hosted.add_task(task("wf/b/1.1"));
    CHECK(second.start.empty());  // behind a
    CHECK(hosted.owns("wf/b/1.1"));
    auto next = hosted.ended("wf/a/1.1", outcome("wf/a/1.1", TaskReport::SUCCEEDED));
    CHECK(started(next) == std::vector<std::string>{"wf/b/1.1"});
    CHECK_FALSE(hosted.owns("wf/a/1.1"));

    // Closing waits for b, then runs envExit, then answers with its outcome.
    const uint64_t close_call = hosted.next_call();
    auto closing = hosted.close("wf/s", close_call);
    CHECK(closing.start.empty());
    CHECK(closing.answers.empty());
    auto exit = hosted.ended("wf/b/1.1", outcome("wf/b/1.1", TaskReport::SUCCEEDED));
    CHECK(started(exit) == std::vector<std::string>{"wf/s.envExit/1.1"});
    auto closed = hosted.ended("wf/s.envExit/1.1", outcome("wf/s.envExit/1.1", TaskReport::FAILED));
    REQUIRE(closed.answers.size() == 1);
    CHECK(closed.answers[0].call == close_call);
    CHECK_FALSE(closed.answers[0].opening);
    REQUIRE(closed.answers[0].outcome);
    CHECK(closed.answers[0].outcome->kind == TaskReport::FAILED);
    CHECK(hosted.open_ids().empty());

    // A repeated close (its answer lost with a connection) hears the same.
    auto again = hosted.close("wf/s", hosted.next_call());
    REQUIRE(again.answers.size() == 1);
    REQUIRE(again.answers[0].outcome);
    CHECK(again.answers[0].outcome->kind == TaskReport::FAILED);
  }

  TEST_CASE("a session without envEnter is entered as it opens; a repeated opening is answered as the first") {
    HostedSessions hosted;
    auto opened = hosted.open(opening(false, false), hosted.next_call());
    CHECK(opened.start.empty());
    REQUIRE(opened.answers.size() == 1);
    CHECK_FALSE(opened.answers[0].outcome);  // none ran: it succeeded
    auto again = hosted.open(opening(false, false), hosted.next_call());
    REQUIRE(again.answers.size() == 1);
    CHECK(hosted.takes_tasks("wf/s"));
    auto closed = hosted.close("wf/s", hosted.next_call());
    REQUIRE(closed.answers.size() == 1);
    CHECK_FALSE(closed.answers[0].outcome);  // no envExit
  }

  TEST_CASE("a failed envEnter answers the opening, takes no task, and runs envExit") {
    HostedSessions hosted;
    (void)hosted.open(opening(true, true), hosted.next_call());
    auto failed = hosted.ended("wf/s.envEnter/1.1", outcome("wf/s.envEnter/1.1", TaskReport::FAILED));
    REQUIRE(failed.answers.size() == 1);
    REQUIRE(failed.answers[0].outcome);
    CHECK(failed.answers[0].outcome->kind == TaskReport::FAILED);
    CHECK(started(failed) == std::vector<std::string>{"wf/s.envExit/1.1"});
    CHECK_FALSE(hosted.takes_tasks("wf/s"));
  }

  TEST_CASE("a queued task cancelled ends without running; closing never attempts what is queued") {
    HostedSessions hosted;
    (void)hosted.open(opening(false, false), hosted.next_call());
    (void)hosted.add_task(task("wf/a/1.1"));
    (void)hosted.add_task(task("wf/b/1.1"));
    (void)hosted.add_task(task("wf/c/1.1"));
    CHECK(hosted.cancel_queued("wf/a/1.1").never_ran.empty());  // it runs: its executor stops it
    auto cancelled = hosted.cancel_queued("wf/b/1.1");
    CHECK(cancelled.never_ran == std::vector<std::string>{"wf/b/1.1"});
    CHECK_FALSE(hosted.owns("wf/b/1.1"));
    auto closing = hosted.close("wf/s", hosted.next_call());
    CHECK(closing.never_ran.empty());  // not before the running action's end
    auto ended = hosted.ended("wf/a/1.1", outcome("wf/a/1.1", TaskReport::CANCELLED));
    CHECK(ended.never_ran == std::vector<std::string>{"wf/c/1.1"});
    CHECK(ended.start.empty());
    REQUIRE(ended.answers.size() == 1);
  }

  TEST_CASE("after a task that did not succeed the queue waits until the scheduler sends another task") {
    HostedSessions hosted;
    (void)hosted.open(opening(false, false), hosted.next_call());
    auto a = task("wf/a/1.1");
    a.task_name = "a";
    (void)hosted.add_task(a);
    auto b = task("wf/b/1.1");
    b.task_name = "b";
    (void)hosted.add_task(b);
    auto failed = hosted.ended("wf/a/1.1", outcome("wf/a/1.1", TaskReport::FAILED));
    CHECK(failed.start.empty());  // the scheduler decides whether that was a's last attempt
    // A task granted a slot meanwhile (a parallel branch, or a's retry) moves it on: held, it
    // would keep the slot a's retry needs.
    auto c = task("wf/c/1.1");
    c.task_name = "c";
    auto moved = hosted.add_task(c);
    CHECK(started(moved) == std::vector<std::string>{"wf/b/1.1"});
  }

  TEST_CASE("an opening of a session still closing here waits for envExit, then opens a new instance with envEnter") {
    HostedSessions hosted;
    hosted.open(opening(true, true), hosted.next_call());
    hosted.ended("wf/s.envEnter/1.1", outcome("wf/s.envEnter/1.1", TaskReport::SUCCEEDED));
    auto running = hosted.add_task(task("t1"));
    REQUIRE(started(running) == std::vector<std::string>{"t1"});
    auto closing = hosted.close("wf/s", hosted.next_call());
    CHECK(closing.answers.empty());  // envExit waits for t1
    // Placed here again before the close is over: not joined to the closing instance.
    SessionOpening again = opening(true, true);
    again.env_enter->invocation_id = "wf/s.envEnter/2.1";
    again.env_exit->invocation_id = "wf/s.envExit/2.1";
    const uint64_t reopen = hosted.next_call();
    auto deferred = hosted.open(again, reopen);
    CHECK(deferred.answers.empty());
    CHECK(deferred.start.empty());
    auto exit = hosted.ended("t1", outcome("t1", TaskReport::SUCCEEDED));
    CHECK(started(exit) == std::vector<std::string>{"wf/s.envExit/1.1"});
    auto reopened = hosted.ended("wf/s.envExit/1.1", outcome("wf/s.envExit/1.1", TaskReport::SUCCEEDED));
    REQUIRE(reopened.answers.size() == 1);  // the close's
    CHECK_FALSE(reopened.answers[0].opening);
    CHECK(started(reopened) == std::vector<std::string>{"wf/s.envEnter/2.1"});
    auto entered = hosted.ended("wf/s.envEnter/2.1", outcome("wf/s.envEnter/2.1", TaskReport::SUCCEEDED));
    REQUIRE(entered.answers.size() == 1);
    CHECK(entered.answers[0].opening);
    CHECK(entered.answers[0].call == reopen);
    CHECK(hosted.takes_tasks("wf/s"));
  }

  TEST_CASE("a task of a session this worker does not hold never runs") {
    HostedSessions hosted;
    auto refused = hosted.add_task(task("wf/a/1.1"));
    CHECK(refused.never_ran == std::vector<std::string>{"wf/a/1.1"});
    CHECK_FALSE(hosted.takes_tasks("wf/s"));
  }
}
