// The scheduler's actor metrics on actors of the test's own, in a threaded actor system: the
// roster counted by kind, and mailboxes probed as the node's actors answer (their own inbox's
// depth), a real backlog included.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/system/actor_probe.hpp"
#include "actors/system/actor_roster.hpp"
#include "runtime/metrics/actor_metrics.hpp"
#include "runtime/metrics/server.hpp"
#include "test/support/scrape.hpp"

using namespace std::chrono_literals;
using namespace troupe;
using namespace troupe::runtime;
using troupe::test::sample;

namespace {

using hold_atom = caf::atom_constant<caf::atom("hold")>;
using chore_atom = caf::atom_constant<caf::atom("chore")>;

/// Where a test holds an actor busy in one step (`hold`), as a long handler would: the step
/// starts, and ends when the test opens the gate.
struct Hold {
  std::promise<void> started;
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  std::once_flag open_once;
  void open() {
    std::call_once(open_once, [this] { gate.set_value(); });
  }
};

/// Answers probes as the node's actors do, with the depth of its own mailbox, and counts them;
/// `on_probe` runs first, if any.
caf::behavior probed_actor(caf::event_based_actor* self, std::shared_ptr<std::atomic<int>> probes,
                           std::shared_ptr<Hold> hold, std::function<void()> on_probe) {
  return {
      [=](actors::probe_atom) {
        if (on_probe) on_probe();
        ++*probes;
        auto probe = std::make_shared<actors::ActorProbe>();
        probe->mailbox = actors::mailbox_depth(self);
        return actors::ProbeAnswer(std::move(probe));
      },
      [=](hold_atom) {
        hold->started.set_value();
        hold->opened.wait_for(10s);
      },
      [](chore_atom) {},
  };
}

/// Promises that are never kept, shared by the silent actors of a test (on several threads).
struct Unanswered {
  std::mutex mutex;
  std::vector<caf::response_promise> promises;
};

/// Takes a probe and never answers it, as an actor stuck in one step would not.
caf::behavior silent_actor(caf::event_based_actor* self, std::shared_ptr<Unanswered> kept) {
  return {[=](actors::probe_atom) {
    auto promise = self->make_response_promise();
    std::lock_guard lock(kept->mutex);
    kept->promises.push_back(promise);
    return promise;
  }};
}

/// A threaded actor system with the actors a test spawns and seats in a roster, ended with it.
struct Actors {
  caf::actor_system_config cfg;
  caf::actor_system system{quiet(cfg)};
  std::shared_ptr<actors::ActorRoster> roster = std::make_shared<actors::ActorRoster>();
  std::shared_ptr<std::atomic<int>> probes = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<Unanswered> kept = std::make_shared<Unanswered>();
  std::vector<caf::actor> spawned;
  std::vector<std::unique_ptr<actors::RosterSeat>> seats;

  static caf::actor_system_config& quiet(caf::actor_system_config& cfg) {
    cfg.set("logger.file-verbosity", caf::atom("quiet"));
    cfg.set("logger.console-verbosity", caf::atom("quiet"));
    return cfg;
  }

  std::shared_ptr<Hold> hold = std::make_shared<Hold>();

  /// A probed actor of `kind`, on a thread of its own (a held one blocks it).
  caf::actor probed(const std::string& kind, const std::string& id, std::function<void()> on_probe = {}) {
    return seat(kind, id, system.spawn<caf::detached>(probed_actor, probes, hold, std::move(on_probe)));
  }
  caf::actor silent(const std::string& kind, const std::string& id) {
    return seat(kind, id, system.spawn(silent_actor, kept));
  }
  caf::actor seat(const std::string& kind, const std::string& id, caf::actor actor) {
    actors::ActorRoster::Entry entry{kind, id, 0, actor.address()};
    seats.push_back(std::make_unique<actors::RosterSeat>(roster, std::move(entry)));
    spawned.push_back(actor);
    return actor;
  }

  ~Actors() {
    hold->open();
    for (auto& actor : spawned) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }
};

MailboxProbeOptions quick() {
  MailboxProbeOptions options;
  options.deadline = 300ms;
  options.hand_over = 2s;
  return options;
}

}  // namespace

TEST_SUITE("runtime.metrics") {
  TEST_CASE("troupe_actors counts the roster's live actors by kind, every known kind at 0 when it has none") {
    auto roster = std::make_shared<actors::ActorRoster>();
    actors::RosterSeat w1(roster, {"workflow", "wf-1", 0, {}});
    actors::RosterSeat w2(roster, {"workflow", "wf-2", 0, {}});
    actors::RosterSeat t1(roster, {"task", "wf-1/a", 0, {}});
    metrics::Scrape scrape;
    count_actors(scrape, *roster);
    const auto text = metrics::to_text(scrape);
    INFO(text);
    CHECK(sample(text, R"(troupe_actors{kind="workflow"})") == 2);
    CHECK(sample(text, R"(troupe_actors{kind="task"})") == 1);
    for (const char* none : {"session", "worker", "matching", "directory", "dispatcher"}) {
      CHECK(sample(text, std::string(R"(troupe_actors{kind=")") + none + "\"}") == 0);
    }
    REQUIRE(scrape.find("troupe_actors"));
    CHECK(scrape.find("troupe_actors")->samples.size() == actors::actor_kinds().size());
  }

  TEST_CASE("the largest mailbox of each kind is the deepest backlog its actors report, probed at the scrape") {
    Actors a;
    a.probed("dispatcher", "dispatcher");
    auto busy = a.probed("task", "wf-1/a");
    a.probed("task", "wf-2/a");
    a.probed("workflow", "wf-1");
    // Asked after the task actors (the roster's sample lists kinds in alphabetical order, and the
    // prober asks in the sample's order): once it is, the busy task's probe is in its mailbox.
    a.probed("workflow", "wf-2", [hold = a.hold] { hold->open(); });
    // The busy task is in one long step while three messages, then the probe, queue behind it:
    // the probe overtakes them once the step ends, and finds them waiting.
    caf::anon_send(busy, hold_atom::value);
    REQUIRE(a.hold->started.get_future().wait_for(10s) == std::future_status::ready);
    for (int i = 0; i < 3; ++i) caf::anon_send(busy, chore_atom::value);

    metrics::Scrape scrape;
    largest_mailboxes(scrape, a.system, *a.roster);
    const auto text = metrics::to_text(scrape);
    INFO(text);
    CHECK(sample(text, R"(troupe_actor_mailbox_largest{kind="task"})") == 3);
    CHECK(sample(text, R"(troupe_actor_mailbox_largest{kind="workflow"})") == 0);
    CHECK(sample(text, R"(troupe_actor_mailbox_largest{kind="dispatcher"})") == 0);
    CHECK(sample(text, R"(troupe_actor_mailbox_largest{kind="matching"})") == 0);  // none live: no backlog
    CHECK(*a.probes == 5);
    const auto verdict = test::promtool_check(text);
    CHECK_MESSAGE(verdict.exit_code == 0, verdict.output);
  }

  TEST_CASE("a kind none of whose actors answered in time is left out; the others are kept") {
    Actors a;
    a.silent("matching", "gpu");
    a.probed("matching", "cpu");
    a.silent("dispatcher", "dispatcher");
    a.probed("workflow", "wf-1");
    metrics::Scrape scrape;
    largest_mailboxes(scrape, a.system, *a.roster, quick());
    const auto text = metrics::to_text(scrape);
    INFO(text);
    CHECK(sample(text, R"(troupe_actor_mailbox_largest{kind="matching"})") == 0);
    CHECK(sample(text, R"(troupe_actor_mailbox_largest{kind="workflow"})") == 0);
    CHECK_FALSE(sample(text, R"(troupe_actor_mailbox_largest{kind="dispatcher"})"));
  }

  TEST_CASE("a probe no actor answered fails its collector: counted, and the metric left out") {
    Actors a;
    a.silent("dispatcher", "dispatcher");
    a.silent("directory", "directory");
    metrics::Registry registry;
    registry.add([&](metrics::Scrape& s) { largest_mailboxes(s, a.system, *a.roster, quick()); });
    registry.add([&](metrics::Scrape& s) { count_actors(s, *a.roster); });
    const auto scrape = registry.collect();
    const auto text = metrics::to_text(scrape);
    INFO(text);
    CHECK_FALSE(scrape.find("troupe_actor_mailbox_largest"));
    CHECK(sample(text, R"(troupe_actors{kind="dispatcher"})") == 1);
    CHECK(sample(text, "troupe_metrics_collector_failures") == 1);
  }

  TEST_CASE("at most per_kind actors of a kind are probed at a scrape, every actor of a kind with fewer") {
    Actors a;
    for (int i = 0; i < 20; ++i) a.probed("workflow", "wf-" + std::to_string(i));
    a.probed("dispatcher", "dispatcher");
    MailboxProbeOptions options;
    options.per_kind = 5;
    metrics::Scrape scrape;
    largest_mailboxes(scrape, a.system, *a.roster, options);
    CHECK(*a.probes == 6);
    const auto text = metrics::to_text(scrape);
    CHECK(sample(text, R"(troupe_actor_mailbox_largest{kind="workflow"})") == 0);
    CHECK(text.find("at most 5 of each kind") != std::string::npos);
  }
}
