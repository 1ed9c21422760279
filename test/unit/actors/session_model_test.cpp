// A session's state from its history events: each is an event its table took, so a history
// replays to the same state; one the table would ignore is refused; every way to FAILED keeps
// its cause, the first one, and CLOSED has none.
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "actors/session/session_model.hpp"

using namespace troupe;
using namespace troupe::actors;
using Body = schema::EventBody::Builder;

namespace {

using Fill = std::function<void(Body)>;

Result<void> apply(SessionModel& model, int64_t now, const Fill& fill) {
  auto event = make_event(storage::ActorKind::SESSION, model.name, 0, now, fill);
  NewEventReader reader(event);
  return model.apply(reader.view());
}

Fill creating(uint32_t attempt, int64_t timeout_us = 60'000'000) {
  return [=](Body b) {
    auto c = b.initSessionCreating();
    c.setCreationTimeoutUs(timeout_us);
    c.setAttempt(attempt);
  };
}

Fill opened(const std::string& shard, bool reestablished = false) {
  return [=](Body b) {
    auto o = b.initSessionOpened();
    o.setWorkerShard(shard);
    o.setInstanceId(shard + "-process");
    o.setResourceId("gpu0");
    o.setRecreateToken(as_bytes("rt-" + shard));
    o.setReestablished(reestablished);
  };
}

const Fill entered = [](Body b) { b.setSessionEntered(); };
const Fill tasks_done = [](Body b) { b.setSessionTasksDone(); };
const Fill cancelled = [](Body b) { b.initSessionCancelled().setText("stopped by a client"); };
const Fill lost = [](Body b) {
  auto l = b.initSessionWorkerLost();
  l.setWorkerShard("w1");
  l.setReason("was declared dead");
};
Fill exited(bool ok) {
  return [=](Body b) {
    auto x = b.initSessionExited();
    x.setSucceeded(ok);
    if (!ok) x.initFailure().setReason("ExitCode:2");
  };
}
Fill timed_out(schema::SessionTimeoutKind kind) {
  return [=](Body b) { b.initSessionTimedOut().setKind(kind); };
}
const Fill enter_failed = [](Body b) {
  auto f = b.initSessionEnterFailed();
  f.setReason("ExitCode:1");
  f.setDetails("setup.sh: no dataset");
};
const Fill task_failed = [](Body b) {
  auto f = b.initSessionTaskFailed();
  f.setTaskName("train");
  f.initFailure().setReason("ExitCode:3");
};
const Fill abandoned = [](Body b) { b.initSessionFailed().setReason("WorkerLost"); };
Fill drained(bool immediate) {
  return [=](Body b) {
    auto d = b.initSessionWorkerDrained();
    d.setWorkerShard("w1");
    d.setImmediate(immediate);
  };
}

/// A body that records `event` (for a session whose placement attempt is `attempt`).
Fill body_for(SessionEvent event, uint32_t attempt, std::mt19937& rng) {
  switch (event) {
    case SessionEvent::FIRST_TASK_READY: return creating(1);
    case SessionEvent::RECREATE: return creating(attempt + 1 < 2 ? 2 : attempt + 1);
    case SessionEvent::PLACED: return opened("w" + std::to_string(rng() % 3));
    case SessionEvent::WORKER_BACK: return opened("w1", true);
    case SessionEvent::CREATION_TIMED_OUT: return timed_out(schema::SessionTimeoutKind::CREATION);
    case SessionEvent::EXECUTION_TIMED_OUT: return timed_out(schema::SessionTimeoutKind::EXECUTION);
    case SessionEvent::ENTERED: return entered;
    case SessionEvent::ENTER_FAILED: return enter_failed;
    case SessionEvent::TASKS_DONE: return tasks_done;
    case SessionEvent::TASK_FAILED: return task_failed;
    case SessionEvent::CANCEL: return cancelled;
    case SessionEvent::EXITED: return exited(rng() % 2 == 0);
    case SessionEvent::WORKER_LOST: return lost;
    case SessionEvent::ABANDON: return abandoned;
    case SessionEvent::WORKER_DRAINED: return drained(false);
    case SessionEvent::WORKER_DRAINED_NOW: return drained(true);
  }
  return entered;
}

SessionModel run(const std::vector<Fill>& events) {
  SessionModel s;
  s.name = "gpu-box";
  int64_t now = 1'000;
  for (const auto& fill : events) {
    auto applied = apply(s, now, fill);
    REQUIRE_MESSAGE(applied, applied.error().message);
    now += 1'000;
  }
  return s;
}

}  // namespace

TEST_SUITE("actors.session_model") {
  TEST_CASE("a session placed, entered, done and exited is CLOSED, with its worker and token") {
    auto s = run({creating(1), opened("w1"), entered, tasks_done, exited(false)});
    CHECK(s.state == SessionState::CLOSED);
    CHECK(s.worker == "w1");
    CHECK(s.instance == "w1-process");
    CHECK(s.resource == "gpu0");
    CHECK(s.recreate_token == "rt-w1");
    CHECK(s.first_placed_us == 2'000);
    CHECK(s.exit_succeeded == false);  // a failed envExit affects only itself
    CHECK(s.exit_failure == "ExitCode:2");
    CHECK(s.failure_reason.empty());
    CHECK(s.ended_us == 5'000);
    CHECK(s.applied == 5);
  }

  TEST_CASE("while creating, its creation deadline is known; placement clears it") {
    SessionModel s;
    s.name = "s";
    REQUIRE(apply(s, 1'000, creating(1, 5'000)));
    CHECK(s.state == SessionState::CREATING);
    CHECK(s.creation_deadline_us == 6'000);
    REQUIRE(apply(s, 2'000, opened("w1")));
    CHECK(s.creation_deadline_us == 0);
  }

  TEST_CASE("a lost worker: its resource back within the window, or a recreation elsewhere") {
    auto back = run({creating(1), opened("w1"), entered, lost, opened("w1", true), entered});
    CHECK(back.state == SessionState::OPEN);
    CHECK(back.reestablished == 1);
    CHECK(back.first_placed_us == 2'000);  // the execution timeout still counts from the first placement
    CHECK(back.lost_us == 0);

    auto recreated = run({creating(1), opened("w1"), entered, lost, creating(2), opened("w2"), entered});
    CHECK(recreated.state == SessionState::OPEN);
    CHECK(recreated.attempt == 2);
    CHECK(recreated.worker == "w2");
    CHECK(recreated.recreate_token == "rt-w2");
  }

  TEST_CASE("a session on a drained worker exits there and moves: a new attempt, no recreation") {
    auto moved = run({creating(1, 5'000), opened("w1"), entered, drained(false), exited(true)});
    CHECK(moved.state == SessionState::CREATING);
    CHECK(moved.attempt == 2);
    CHECK(moved.moves == 1);
    CHECK(moved.creation_deadline_us == 5'000 + 5'000);  // its creationTimeout again, from the move
    CHECK(moved.exit_succeeded == true);
    CHECK(moved.failure_reason.empty());
    // The drained worker went before envExit answered (it stopped once drained): it moves all the same.
    auto gone = run({creating(1), opened("w1"), drained(true), lost});
    CHECK(gone.state == SessionState::CREATING);
    CHECK(gone.attempt == 2);
    CHECK(gone.moves == 1);
    CHECK(gone.lost_us == 0);
    // envEnter stopped by an immediate drain is recorded, and fails nothing.
    auto cancelled_enter = run({creating(1), opened("w1"), drained(true), enter_failed, exited(true), opened("w2"), entered});
    CHECK(cancelled_enter.state == SessionState::OPEN);
    CHECK(cancelled_enter.failure_reason.empty());
    CHECK(cancelled_enter.worker == "w2");
    // A recreation after a move is the next attempt, and still the first recreation.
    auto recreated = run({creating(1), opened("w1"), entered, drained(false), exited(true), opened("w2"), entered,
                          lost, creating(3)});
    CHECK(recreated.attempt == 3);
    CHECK(recreated.moves == 1);
  }

  TEST_CASE("every way to FAILED keeps its cause, the first one") {
    struct Case {
      std::vector<Fill> events;
      std::string message;
    };
    const std::vector<Case> cases = {
        {{creating(1), timed_out(schema::SessionTimeoutKind::CREATION)},
         "Timeout:creation: no worker with a free session slot took it within its creationTimeout"},
        {{creating(1), opened("w1"), enter_failed, exited(true)}, "EnvEnterFailed: ExitCode:1: setup.sh: no dataset"},
        {{creating(1), opened("w1"), entered, task_failed, exited(true)}, "TaskFailed: task 'train' failed: ExitCode:3"},
        {{creating(1), opened("w1"), entered, timed_out(schema::SessionTimeoutKind::EXECUTION), lost},
         "Timeout:execution: it stayed open longer than its executionTimeout"},
        {{creating(1), opened("w1"), entered, lost, abandoned}, "WorkerLost: worker w1 was declared dead"},
        {{creating(1), opened("w1"), entered, lost, task_failed}, "TaskFailed: task 'train' failed: ExitCode:3"},
        {{creating(1), opened("w1"), entered, lost, creating(2), timed_out(schema::SessionTimeoutKind::EXECUTION)},
         "Timeout:execution: it stayed open longer than its executionTimeout"},
        // The envEnter failure came first; the execution timeout during envExit does not replace it.
        {{creating(1), opened("w1"), enter_failed, timed_out(schema::SessionTimeoutKind::EXECUTION), exited(false)},
         "EnvEnterFailed: ExitCode:1: setup.sh: no dataset"},
    };
    for (const auto& c : cases) {
      auto s = run(c.events);
      CHECK(s.state == SessionState::FAILED);
      CHECK(s.failure_message() == c.message);
    }
  }

  TEST_CASE("a cancelled session closes after envExit; one never needed closes at once") {
    CHECK(run({creating(1), opened("w1"), entered, cancelled, exited(true)}).state == SessionState::CLOSED);
    auto never = run({cancelled});
    CHECK(never.state == SessionState::CLOSED);
    CHECK(never.worker.empty());
  }

  TEST_CASE("an event the table ignores in the session's state is refused, and changes nothing") {
    auto s = run({creating(1), opened("w1"), entered});
    const auto before = s.canonical();
    auto again = apply(s, 9'000, opened("w2"));
    REQUIRE_FALSE(again);
    CHECK(again.error().code == Errc::NOT_ALLOWED_IN_STATE);
    CHECK(again.error().message == "session 'gpu-box' recorded PLACED in state OPEN, which takes no such event (it is placed already)");
    CHECK(s.canonical() == before);
    auto not_session = apply(s, 9'000, [](Body b) { b.setWorkflowStarted(); });
    REQUIRE_FALSE(not_session);
    CHECK(not_session.error().code == Errc::INVALID_ARGUMENT);
  }

  TEST_CASE("closing is no failure: a timeout during envExit, or envEnter failing after a cancel, is only recorded") {
    auto timed = run({creating(1), opened("w1"), entered, tasks_done, timed_out(schema::SessionTimeoutKind::EXECUTION),
                      exited(false)});
    CHECK(timed.state == SessionState::CLOSED);
    CHECK(timed.failure_reason.empty());
    CHECK(timed.exit_failure == "ExitCode:2");
    auto cancelled_entering = run({creating(1), opened("w1"), cancelled, enter_failed, exited(true)});
    CHECK(cancelled_entering.state == SessionState::CLOSED);
    CHECK(cancelled_entering.failure_reason.empty());
    CHECK(cancelled_entering.enter_failure == "ExitCode:1: setup.sh: no dataset");
  }

  TEST_CASE("random walks: the model follows the table, refuses what it ignores, and replays to the same state") {
    std::mt19937 rng(20261124);
    for (int walk = 0; walk < 200; ++walk) {
      SessionModel live;
      live.name = "s";
      std::vector<Fill> taken;
      int64_t now = 1'000;
      for (int step = 0; step < 40 && !SessionMachine::is_terminal(live.state); ++step) {
        const auto event = static_cast<SessionEvent>(rng() % SessionMachineTraits::events);
        const Fill fill = body_for(event, live.attempt, rng);
        const auto expected = SessionMachine::transition(live.state, event);
        const auto before = live.canonical();
        auto applied = apply(live, now, fill);
        CAPTURE(std::string(SessionMachineTraits::name(event)));
        if (expected.ignored) {
          CHECK_FALSE(applied);
          CHECK(live.canonical() == before);
        } else {
          REQUIRE_MESSAGE(applied, applied.error().message);
          CHECK(live.state == expected.to);
          taken.push_back(fill);
        }
        now += 1'000;
      }
      if (live.state == SessionState::FAILED) CHECK_FALSE(live.failure_reason.empty());
      if (live.state == SessionState::CLOSED) CHECK(live.failure_reason.empty());
      // Replayed from what was recorded, at the same times.
      SessionModel replayed;
      replayed.name = "s";
      int64_t at = 1'000;
      for (const auto& fill : taken) {
        REQUIRE(apply(replayed, at, fill));
        at += 1'000;
      }
      CHECK(replayed.state == live.state);
      CHECK(replayed.applied == live.applied);
    }
  }
}
