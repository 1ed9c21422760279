// The local executor's slots, driven directly.
#include <doctest/doctest.h>

#include <caf/event_based_actor.hpp>

#include "test/support/actor_fixture.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

TEST_SUITE("actors.local_executor") {
  TEST_CASE("a free slot is the asking task's in the answer; a task that ends while it waits does not keep the slot") {
    test::ActorFixture fx(LocalExecutorOptions{"local", 1, {}});
    auto executor = fx.wiring.executor;
    // The first task is answered with the free slot.
    auto first = fx.ask<std::string>(executor, enqueue_atom::value, caf::actor_cast<task_port>(fx.self), int32_t{0},
                                     std::string(), std::string(), std::string());
    REQUIRE(first);
    CHECK(*first == "local");
    // A task that waits for the taken slot and ends: the grant will find no one.
    fx.sys.spawn(
        [](caf::event_based_actor* self, executor_actor to) {
          self->request(to, caf::infinite, enqueue_atom::value, caf::actor_cast<task_port>(self), int32_t{0},
                        std::string(), std::string(), std::string())
              .then([](const std::string&) {});
          self->quit();
        },
        executor);
    fx.run();
    // The next one waits too (an empty answer), and gets the slot once the first gives it back.
    auto next = fx.ask<std::string>(executor, enqueue_atom::value, caf::actor_cast<task_port>(fx.self), int32_t{0},
                                    std::string(), std::string(), std::string());
    REQUIRE(next);
    CHECK(next->empty());
    fx.self->send(executor, release_atom::value);
    fx.run();
    std::optional<std::string> granted;
    fx.self->receive(
        [&](grant_atom, const std::string& name) {
          granted = name;
          return true;
        },
        caf::after(0s) >> [] {});
    REQUIRE(granted);
    CHECK(*granted == "local");
  }

  TEST_CASE("slots are granted by priority, then in arrival order, and come back on release") {
    test::ActorFixture fx(LocalExecutorOptions{"local", 1, {}});
    auto executor = fx.wiring.executor;
    auto order = std::make_shared<std::vector<std::string>>();
    // The holder takes the only slot and gives it back when told (release_atom from the test).
    auto holder = fx.own(fx.sys.spawn(
        [](caf::event_based_actor* self, executor_actor to,
           std::shared_ptr<std::vector<std::string>> seen) -> caf::behavior {
          self->request(to, caf::infinite, enqueue_atom::value, caf::actor_cast<task_port>(self), int32_t{0},
                        std::string(), std::string(), std::string())
              .then([=](const std::string& granted) {
                if (!granted.empty()) seen->push_back("holder");
              });
          return {
              [=](grant_atom, const std::string&) {
                seen->push_back("holder");
                return true;
              },
              [=](release_atom) { self->send(to, release_atom::value); },
          };
        },
        executor, order));
    fx.run();
    auto waiter = [&](std::string name, int32_t priority) {
      fx.own(fx.sys.spawn(
          [](caf::event_based_actor* self, executor_actor to, std::string me, int32_t rank,
             std::shared_ptr<std::vector<std::string>> seen) -> caf::behavior {
            self->request(to, caf::infinite, enqueue_atom::value, caf::actor_cast<task_port>(self), rank,
                          std::string(), std::string(), std::string())
                .then([=](const std::string& granted) {
                  if (!granted.empty()) seen->push_back(me + " at once");
                });
            return {[=](grant_atom, const std::string&) {
              seen->push_back(me);
              self->send(to, release_atom::value);  // took it, then gives it back unused
              return true;
            }};
          },
          executor, name, priority, order));
      fx.run();
    };
    waiter("low", 1);
    waiter("high-1", 5);
    waiter("high-2", 5);
    CHECK(*order == std::vector<std::string>{"holder"});  // the slot is taken
    fx.self->send(holder, release_atom::value);
    fx.run();
    CHECK(*order == std::vector<std::string>{"holder", "high-1", "high-2", "low"});
  }
}
