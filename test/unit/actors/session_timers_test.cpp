// A session's timers from its history: the creation timeout while it looks for a worker, the
// execution timeout from its first placement (once), the re-establishment window from its
// worker's loss; and what the end of that window leads to.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "actors/session/session_timers.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using Body = schema::EventBody::Builder;

namespace {

using Fill = std::function<void(Body)>;

void apply(SessionModel& model, int64_t now, const Fill& fill) {
  auto event = make_event(storage::ActorKind::SESSION, model.name, 0, now, fill);
  NewEventReader reader(event);
  auto applied = model.apply(reader.view());
  REQUIRE_MESSAGE(applied, applied.error().message);
}

Fill creating(uint32_t attempt, int64_t timeout_us) {
  return [=](Body b) {
    auto c = b.initSessionCreating();
    c.setCreationTimeoutUs(timeout_us);
    c.setAttempt(attempt);
  };
}
const Fill placed = [](Body b) {
  auto o = b.initSessionOpened();
  o.setWorkerShard("w1");
  o.setResourceId("box");
};
const Fill placed_without_resource = [](Body b) { b.initSessionOpened().setWorkerShard("w2"); };
const Fill entered = [](Body b) { b.setSessionEntered(); };
const Fill lost = [](Body b) { b.initSessionWorkerLost().setWorkerShard("w1"); };
const Fill execution_timeout = [](Body b) { b.initSessionTimedOut().setKind(schema::SessionTimeoutKind::EXECUTION); };

std::string text(const std::vector<SessionDue>& due) {
  std::string out;
  for (const auto& d : due) {
    out += std::string(out.empty() ? "" : ", ") +
           (d.timer == SessionTimer::CREATION ? "creation" : d.timer == SessionTimer::EXECUTION ? "execution" : "reestablish") +
           "@" + std::to_string(d.at_us);
  }
  return out;
}

SessionSpec spec_with(std::optional<Duration> execution) {
  SessionSpec spec;
  spec.name = "s";
  spec.execution_timeout = execution;
  spec.reestablish_within = 30s;
  return spec;
}

}  // namespace

TEST_SUITE("actors.session_timers") {
  TEST_CASE("creation while it looks for a worker, execution from its first placement, the window from the loss") {
    const auto spec = spec_with(2h);
    SessionModel s;
    s.name = "s";
    CHECK(text(session_timers(s, spec)).empty());  // WAITING: nothing armed
    apply(s, 1'000, creating(1, 60'000'000));
    CHECK(text(session_timers(s, spec)) == "creation@60001000");
    apply(s, 5'000, placed);
    apply(s, 6'000, entered);
    CHECK(text(session_timers(s, spec)) == "execution@7200005000");
    apply(s, 10'000, lost);
    CHECK(text(session_timers(s, spec)) == "execution@7200005000, reestablish@30010000");
    apply(s, 20'000, creating(2, 60'000'000));  // recreated: its execution timeout still counts from the first placement
    CHECK(text(session_timers(s, spec)) == "creation@60020000, execution@7200005000");
    // A worker without a resource id cannot come back as the same resource: no window.
    apply(s, 30'000, placed_without_resource);
    apply(s, 31'000, entered);
    apply(s, 40'000, [](Body b) { b.initSessionWorkerLost().setWorkerShard("w2"); });
    CHECK(text(session_timers(s, spec)) == "execution@7200005000, reestablish@40000");
  }

  TEST_CASE("an execution timeout fires once: not again while envExit runs") {
    const auto spec = spec_with(1h);
    SessionModel s;
    s.name = "s";
    apply(s, 1'000, creating(1, 0));
    CHECK(text(session_timers(s, spec)).empty());  // no creation timeout given
    apply(s, 2'000, placed);
    apply(s, 3'000, entered);
    apply(s, 3'600'002'000, execution_timeout);
    CHECK(s.state == SessionState::FAILING);
    CHECK(text(session_timers(s, spec)).empty());
    CHECK(text(session_timers(s, spec_with(std::nullopt))).empty());
  }

  TEST_CASE("the end of the window recreates while recreations are left, else abandons") {
    SessionSpec spec = spec_with(std::nullopt);
    SessionModel s;
    s.name = "s";
    apply(s, 1'000, creating(1, 0));
    apply(s, 2'000, placed);
    apply(s, 3'000, lost);
    CHECK(after_window(s, spec) == SessionEvent::ABANDON);  // onFailure fail
    spec.on_failure = SessionFailurePolicy::RECREATE;
    spec.max_recreates = 2;
    CHECK(after_window(s, spec) == SessionEvent::RECREATE);
    apply(s, 4'000, creating(2, 0));
    apply(s, 5'000, placed);
    apply(s, 6'000, lost);
    CHECK(after_window(s, spec) == SessionEvent::RECREATE);  // one recreation so far
    apply(s, 7'000, creating(3, 0));
    apply(s, 8'000, placed);
    apply(s, 9'000, lost);
    CHECK(after_window(s, spec) == SessionEvent::ABANDON);  // two: none left
  }

  TEST_CASE("a move off a drained worker takes none of the session's recreations") {
    SessionSpec spec = spec_with(std::nullopt);
    spec.on_failure = SessionFailurePolicy::RECREATE;
    spec.max_recreates = 1;
    SessionModel s;
    s.name = "s";
    apply(s, 1'000, creating(1, 0));
    apply(s, 2'000, placed);
    apply(s, 3'000, [](schema::EventBody::Builder b) {
      auto d = b.initSessionWorkerDrained();
      d.setWorkerShard("w1");
      d.setImmediate(false);
    });
    apply(s, 4'000, [](schema::EventBody::Builder b) { b.initSessionExited().setSucceeded(true); });
    REQUIRE(s.state == SessionState::CREATING);
    CHECK(s.attempt == 2);
    apply(s, 5'000, placed);
    apply(s, 6'000, lost);
    CHECK(after_window(s, spec) == SessionEvent::RECREATE);  // the move was none
    apply(s, 7'000, creating(3, 0));
    apply(s, 8'000, placed);
    apply(s, 9'000, lost);
    CHECK(after_window(s, spec) == SessionEvent::ABANDON);
  }
}
