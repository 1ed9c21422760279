// Why a task waits in its task list (CreditPool::hold decides the cause, see actors.matching):
// wait_reason says it in words, the WaitBoard carries it across threads, and the matching actor
// posts it when it changes.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "actors/matching/list_wait.hpp"
#include "actors/matching/matching_actor.hpp"
#include "actors/matching/wait_board.hpp"
#include "test/support/actor_fixture.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

ListWait wait_of(CreditHold hold, uint32_t workers, uint32_t offering, double list_rate = 0) {
  return ListWait{hold, workers, offering, list_rate};
}

}  // namespace

TEST_SUITE("actors.wait_reason") {
  TEST_CASE("the reason in words, for each cause") {
    CHECK(wait_reason("gpu", wait_of(CreditHold::NONE, 1, 1)).empty());
    CHECK(wait_reason("gpu", wait_of(CreditHold::NO_WORKER, 0, 0)) == "no live worker serves task list 'gpu'");
    CHECK(wait_reason("gpu", wait_of(CreditHold::NO_WORKER, 2, 0)) ==
          "no worker of task list 'gpu' takes tasks now (2 draining/quarantined/unhealthy)");
    CHECK(wait_reason("gpu", wait_of(CreditHold::BUSY, 1, 1)) == "the only worker of 'gpu' is busy");
    CHECK(wait_reason("gpu", wait_of(CreditHold::BUSY, 2, 2)) == "all 2 workers of 'gpu' are busy");
    CHECK(wait_reason("gpu", wait_of(CreditHold::BUSY, 3, 1)) ==
          "the only worker of 'gpu' taking tasks is busy (2 draining/quarantined/unhealthy besides)");
    CHECK(wait_reason("gpu", wait_of(CreditHold::BUSY, 4, 3)) ==
          "all 3 workers of 'gpu' taking tasks are busy (1 draining/quarantined/unhealthy besides)");
    CHECK(wait_reason("gpu", wait_of(CreditHold::LIST_RATE, 2, 2, 2)) ==
          "rate limited: task list 'gpu' starts at most 2 tasks/s");
    CHECK(wait_reason("gpu", wait_of(CreditHold::LIST_RATE, 2, 2, 1)) ==
          "rate limited: task list 'gpu' starts at most 1 task/s");
    CHECK(wait_reason("gpu", wait_of(CreditHold::LIST_RATE, 2, 2, 0.5)) ==
          "rate limited: task list 'gpu' starts at most 0.5 tasks/s");
    CHECK(wait_reason("gpu", wait_of(CreditHold::WORKER_RATE, 2, 2)) ==
          "rate limited: each worker of 'gpu' with a free slot is at its own rate limit");
  }

  TEST_CASE("the board keeps each list's latest post; a list never posted has no reason") {
    WaitBoard board;
    CHECK_FALSE(board.find("gpu"));
    CHECK(board.reason_for("gpu").empty());
    board.post("gpu", wait_of(CreditHold::NO_WORKER, 0, 0));
    board.post("cpu", wait_of(CreditHold::BUSY, 1, 1));
    CHECK(board.reason_for("gpu") == "no live worker serves task list 'gpu'");
    board.post("gpu", wait_of(CreditHold::NONE, 1, 1));
    CHECK(board.reason_for("gpu").empty());
    CHECK(board.find("gpu") == wait_of(CreditHold::NONE, 1, 1));
    CHECK(board.reason_for("cpu") == "the only worker of 'cpu' is busy");
  }

  TEST_CASE("the matching actor posts why its tasks wait as that changes, and nothing while tasks get slots at once") {
    test::ActorFixture fx;
    auto board = std::make_shared<WaitBoard>();
    auto matcher = fx.own(spawn_matching(fx.sys, "gpu", MatchingLimits{}, board));
    auto me = caf::actor_cast<task_port>(fx.self);
    auto enqueue = [&] {
      auto granted = fx.ask<std::string>(matcher, enqueue_atom::value, me, int32_t{0}, std::string("gpu"),
                                         std::string(), std::string());
      REQUIRE(granted);
      return *granted;
    };
    // A worker serving the list with one slot; the test actor plays the worker actor too.
    fx.self->send(matcher, join_atom::value, std::string("w1"), uint32_t{1}, 0.0);
    fx.run();
    CHECK(board->find("gpu") == wait_of(CreditHold::NONE, 1, 1));
    CHECK(enqueue() == "w1");  // a slot at once: nobody waits
    CHECK(board->reason_for("gpu").empty());

    // The same task asks again while w1 is busy (a second task in all that matters here).
    CHECK(enqueue().empty());
    CHECK(board->reason_for("gpu") == "the only worker of 'gpu' is busy");
    fx.self->send(matcher, join_atom::value, std::string("w1"), uint32_t{0}, 0.0);  // w1 unhealthy
    fx.run();
    CHECK(board->reason_for("gpu") == "no worker of task list 'gpu' takes tasks now (1 draining/quarantined/unhealthy)");
    fx.self->send(matcher, leave_atom::value, std::string("w1"));
    fx.run();
    CHECK(board->reason_for("gpu") == "no live worker serves task list 'gpu'");
    fx.self->send(matcher, withdraw_atom::value, me, std::string("gpu"));
    fx.run();
    CHECK(board->find("gpu") == wait_of(CreditHold::NONE, 0, 0));
  }
}
