// Property: whatever happens to a workflow, replaying its stored history rebuilds exactly the
// state its live actors ended in. Random definitions (DAG shape, handlers, retries, timeouts,
// a session with its own timeouts and failure policy) meet random interventions (pause,
// resume, stop, time passing, an operator's retry, skip or update of a task, a session's
// worker lost or drained, eventually or immediately, and reruns, retries and skips once
// finished); every end state, the sessions' too, is compared with the replay. Sessions get a
// stand-in worker whose envEnter and envExit fail, hang, take a while or never find a slot now
// and then (fake_session_host.hpp). The store now and then holds its commits, as a group
// commit does, so actors run ahead of durability. A failure prints TROUPE_TEST_SEED=… to
// replay it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <set>

#include "actors/system/replay.hpp"
#include "actors/workflow/workflow_actor.hpp"
#include "test/support/actor_fixture.hpp"
#include "test/support/fake_session_host.hpp"
#include "test/support/history.hpp"
#include "test/support/random_workflows.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

TEST_SUITE("actors.replay_property") {
  TEST_CASE("replayed histories rebuild exactly the states live actors ended in") {
    uint64_t seed = std::random_device{}();
    if (const char* fixed = std::getenv("TROUPE_TEST_SEED")) seed = std::strtoull(fixed, nullptr, 10);
    INFO("TROUPE_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };

    for (int round = 0; round < 40; ++round) {
      CAPTURE(round);
      test::ActorFixture fx(LocalExecutorOptions{"local", static_cast<size_t>(1 + pick(3)), {}});
      test::add_random_handlers(fx);
      fx.wiring.kill_grace = 3s;
      const bool with_sessions = pick(2) == 0;
      test::fake_session_host host;
      if (with_sessions) {
        test::FakeSessionHostOptions options{rng(), 1 + pick(6), 1 + pick(6), 1 + pick(6), 1 + pick(4), 1 + pick(3)};
        host = fx.own(fx.sys.spawn(test::fake_session_host_behavior, options));
        fx.wiring.sessions = caf::actor_cast<session_host>(host);
      }
      const std::string json = test::random_definition(rng, with_sessions);
      CAPTURE(json);
      const auto spec = parse_definition(json);
      REQUIRE(spec);
      // An operator's command on a random task; refusals are part of the property too.
      auto random_command = [&] {
        TaskCommand c;
        c.task = spec->tasks[static_cast<size_t>(pick(static_cast<int>(spec->tasks.size())))].name;
        switch (pick(3)) {
          case 0: c.kind = TaskCommandKind::RETRY; break;
          case 1:
            c.kind = TaskCommandKind::SKIP;
            c.reason = "random";
            break;
          default:
            c.kind = TaskCommandKind::UPDATE;
            switch (pick(4)) {
              case 0:
                c.options.set_priority = true;
                c.options.priority = pick(10) - 5;
                break;
              case 1: c.options.start_to_close = std::to_string(5 + pick(30)) + "s"; break;
              case 2: c.options.retry_json = R"({"initialInterval": "1s", "maximumAttempts": )" + std::to_string(1 + pick(4)) + "}"; break;
              default: c.options.remove_retry = true; break;
            }
        }
        CAPTURE(c.task);
        CAPTURE(static_cast<int>(c.kind));
        return c;
      };
      const std::string id = "wf-" + std::to_string(round);
      auto wf = fx.own(spawn_workflow(fx.sys, WorkflowSetup{id, json, "{}", "", fx.shared_wiring(), nullptr}));
      REQUIRE(fx.ask<std::string>(wf, start_atom::value));

      bool stopped = false;
      // A drained worker takes no session until undrained: a drain lasts a step or a few, so
      // that a session moving off it meets time passing, a loss, or a restart meanwhile.
      bool drained = false;
      auto undrain = [&] {
        if (!drained) return;
        fx.self->send(host, accept_atom::value);
        fx.run();
        drained = false;
      };
      for (int step = 0; step < 12 && !fx.ended_workflows.count(id); ++step) {
        if (drained && pick(2) == 0) undrain();
        switch (pick(12)) {
          case 11:
            if (with_sessions) {
              // Immediate, or eventual (a second drain of it may be immediate: its deadline passed).
              fx.self->send(host, drain_atom::value, pick(2) == 0);
              fx.run();
              drained = true;
            }
            break;
          case 10: {
            // The scheduler dies (what it wrote is durable) and revives the workflow from its
            // history; what ran in its process is lost with it.
            if (auto durable = actors::replay(*fx.store, id); !durable || WorkflowMachine::is_terminal(durable->workflow.state)) {
              break;  // ending: a restart now is the close's business, not this test's
            }
            fx.self->send_exit(wf, caf::exit_reason::kill);
            fx.run();
            auto replayed = actors::replay(*fx.store, id);
            REQUIRE_MESSAGE(replayed, (replayed ? "" : replayed.error().message));
            WorkflowSetup setup{id, "", "", "", fx.shared_wiring(), nullptr};
            setup.replayed = std::make_shared<const ReplayedWorkflow>(std::move(*replayed));
            wf = fx.own(spawn_workflow(fx.sys, std::move(setup)));
            fx.run();
            break;
          }
          case 9:
            if (with_sessions) {
              fx.self->send(host, lost_atom::value);
              fx.run();
            }
            break;
          case 8: (void)fx.ask<TaskCommandOutcome>(wf, operate_atom::value, random_command()); break;
          case 0: (void)fx.ask<std::string>(wf, pause_atom::value); break;
          case 1: (void)fx.ask<std::string>(wf, resume_atom::value); break;
          case 2:
            if (pick(3) == 0) {
              (void)fx.ask<std::string>(wf, stop_atom::value);
              stopped = true;
            }
            break;
          default: {
            // Now and then the store holds its commits through the interval (see
            // advance_holding_commits).
            const bool held = pick(3) == 0;
            const auto interval = std::chrono::milliseconds(100 + pick(6000));
            if (held) {
              fx.advance_holding_commits(interval);
            } else {
              fx.advance(interval);
            }
            break;
          }
        }
      }
      // The history's events, one line each: actor and body.
      auto history_of = [&](const std::string& workflow) {
        std::string out;
        for (const auto& event : test::decoded_history(*fx.store, workflow)) {
          out += "\n" + std::string(event.get().getActorId().cStr()) + " " + test::body_kind(event);
        }
        return out;
      };
      auto run_out = [&] {
        // Let everything run out: undrain its worker (a session without a creation timeout would
        // wait for it forever), resume a paused workflow, then give every timeout time.
        undrain();
        for (int i = 0; i < 20 && !fx.ended_workflows.count(id); ++i) {
          (void)fx.ask<std::string>(wf, resume_atom::value);
          fx.advance(1min);
        }
        if (fx.ended_workflows.count(id) == 1) return;
        // Where it stands, as its history says.
        std::string where = "the workflow never ended:";
        if (auto replayed = actors::replay(*fx.store, id)) {
          where += "\n" + replayed->workflow.canonical();
          for (const auto& [name, task] : replayed->tasks) where += "\n" + task.canonical();
          for (const auto& [name, session] : replayed->sessions) where += "\n" + session.canonical();
        }
        where += history_of(id);
        FAIL(where);
      };
      auto check_replay = [&] {
        auto replayed = actors::replay(*fx.store, id);
        REQUIRE_MESSAGE(replayed, (replayed ? "" : replayed.error().message));
        CHECK(replayed->workflow.canonical() == fx.ended_workflows.at(id));
        std::set<std::string> live(fx.ended_tasks.begin(), fx.ended_tasks.end());
        for (const auto& [name, task] : replayed->tasks) {
          CAPTURE(name);
          if (!task.scheduled) continue;  // only updated by an operator before it could run
          if (TaskMachine::is_terminal(task.state)) {
            CHECK_MESSAGE(live.count(task.canonical()) == 1, (task.canonical() + history_of(id)));
          } else {
            // Only a task left paused by a stop may outlive its workflow unfinished.
            CHECK(task.state == TaskState::PAUSED);
          }
        }
        // A workflow ends only after its sessions, each in the state its actor ended in.
        std::set<std::string> sessions(fx.ended_sessions.begin(), fx.ended_sessions.end());
        for (const auto& [name, session] : replayed->sessions) {
          CAPTURE(name);
          CHECK_MESSAGE(SessionMachine::is_terminal(session.state), session.canonical());
          CHECK_MESSAGE(sessions.count(session.canonical()) == 1, (session.canonical() + history_of(id)));
        }
        return std::move(*replayed);
      };
      run_out();
      (void)stopped;
      auto replayed = check_replay();

      // Reruns: from a random task, or of everything that did not succeed. A refused one (a
      // dependency outside it did not succeed, or nothing to rerun) leaves the history alone.
      // Or an operator's command on the finished workflow: a retry or skip that reopens it, an
      // update for later, or a refusal that records nothing.
      for (int rerun = 0; rerun < 2; ++rerun) {
        CAPTURE(rerun);
        if (pick(2) == 0) {
          const auto events_before = fx.store->read(id, 1, 1000000)->size();
          fx.ended_workflows.erase(id);
          WorkflowSetup setup{id, "", "", "", fx.shared_wiring(), nullptr};
          setup.replayed = std::make_shared<const ReplayedWorkflow>(std::move(replayed));
          setup.closed = true;
          wf = fx.own(spawn_workflow(fx.sys, std::move(setup)));
          auto answer = fx.ask<TaskCommandOutcome>(wf, operate_atom::value, random_command());
          if (!answer) CHECK(fx.store->read(id, 1, 1000000)->size() == events_before);
          if (answer && answer->workflow_state == "RUNNING") {
            run_out();
            replayed = check_replay();
          } else {
            auto again = actors::replay(*fx.store, id);
            REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
            replayed = std::move(*again);
          }
          CHECK((*fx.store->find_workflow(id))->status == storage::WorkflowStatus::CLOSED);
          continue;
        }
        const auto& tasks = replayed.workflow.spec->tasks;
        const std::string from = pick(3) == 0 ? std::string() : tasks[static_cast<size_t>(pick(static_cast<int>(tasks.size())))].name;
        CAPTURE(from);
        const auto expected = replayed.workflow.rerun_plan(from);
        const auto events_before = fx.store->read(id, 1, 1000000)->size();
        fx.ended_workflows.erase(id);
        WorkflowSetup setup{id, "", "", "", fx.shared_wiring(), nullptr};
        setup.replayed = std::make_shared<const ReplayedWorkflow>(std::move(replayed));
        setup.closed = true;
        wf = fx.own(spawn_workflow(fx.sys, std::move(setup)));
        auto answer = fx.ask<std::string>(wf, rerun_atom::value, from);
        CHECK(bool(answer) == bool(expected));
        if (!answer) {
          CHECK(fx.store->read(id, 1, 1000000)->size() == events_before);
          replayed = *actors::replay(*fx.store, id);
          continue;
        }
        CHECK(*answer == "RUNNING");
        run_out();
        replayed = check_replay();
        CHECK((*fx.store->find_workflow(id))->status == storage::WorkflowStatus::CLOSED);
      }
    }
  }
}
