// Placing sessions: session slots per worker (max_concurrent_sessions), resource ids, every task
// list served, workers that take no sessions now, a recreated session's lost worker as a last
// resort, and why a session waits.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "actors/session/session_placement.hpp"

using namespace troupe::actors;

namespace {

using Placed = std::vector<std::pair<std::string, std::string>>;

SessionRequest any(const std::string& key, std::set<std::string> lists = {"default"}) {
  return SessionRequest{key, "", std::move(lists), ""};
}

}  // namespace

TEST_SUITE("actors.session_placement") {
  TEST_CASE("a request for one worker (a recreate token's) goes there only, and says so while it is not live") {
    SessionPlacement p;
    p.join("w1", "", 1, {"default"});
    SessionRequest pinned = any("wf-1/s");
    pinned.only_shard = "w2";
    CHECK(p.request(pinned));
    CHECK(p.place().empty());
    CHECK(p.why_waiting("wf-1/s") == "worker 'w2' (its recreate token's) is not live");
    p.join("w2", "", 1, {"default"});
    CHECK(p.place() == Placed{{"wf-1/s", "w2"}});
  }

  TEST_CASE("a worker holds at most its session slots; a closed session frees one for the next request") {
    SessionPlacement p;
    p.join("w1", "", 1, {"default"});
    CHECK(p.request(any("wf-1/s")));
    CHECK(p.request(any("wf-2/s")));
    CHECK_FALSE(p.request(any("wf-2/s")));  // waits already
    CHECK(p.place() == Placed{{"wf-1/s", "w1"}});
    CHECK(p.place().empty());
    CHECK(p.why_waiting("wf-2/s") == "every worker that fits holds as many sessions as it takes (1 of 1)");
    p.release("wf-1/s", "w1");
    p.release("wf-1/s", "w1");  // twice: still one slot, not another session's
    CHECK(p.place() == Placed{{"wf-2/s", "w1"}});
    CHECK(p.why_waiting("wf-2/s").empty());
    CHECK(p.held("w1") == 1);
  }

  TEST_CASE("a session placed again before it gave back a placement holds both slots until it frees each") {
    SessionPlacement p;
    p.join("w1", "", 2, {"default"});
    CHECK(p.request(any("s")));
    CHECK(p.place() == Placed{{"s", "w1"}});
    CHECK(p.request(any("s")));  // asked again (recreated) before it gave back w1's slot
    CHECK(p.place() == Placed{{"s", "w1"}});
    CHECK(p.held("w1") == 2);
    p.release("s", "w2");  // not a worker it holds a slot of
    CHECK(p.held("w1") == 2);
    p.release("s", "w1");
    CHECK(p.held("w1") == 1);
    p.release("s", "w1");
    CHECK(p.held("w1") == 0);
  }

  TEST_CASE("a session goes to a worker of its resource that serves every one of its task lists") {
    SessionPlacement p;
    p.join("cpu", "", 4, {"default", "io"});
    p.join("gpu-a", "gpu0", 1, {"default"});
    p.join("gpu-b", "gpu1", 1, {"default", "gpu"});
    p.request(SessionRequest{"train", "gpu1", {"default", "gpu"}, ""});
    p.request(SessionRequest{"etl", "", {"default", "io"}, ""});
    p.request(SessionRequest{"render", "gpu7", {"default"}, ""});
    p.request(SessionRequest{"mixed", "", {"gpu", "io"}, ""});
    CHECK(p.place() == Placed{{"train", "gpu-b"}, {"etl", "cpu"}});  // the others wait without holding them back
    CHECK(p.why_waiting("render") == "no live worker declares resource 'gpu7'");
    CHECK(p.why_waiting("mixed") == "no live worker serves task lists 'gpu' and 'io'");
    p.request(SessionRequest{"wrong-lists", "gpu0", {"gpu"}, ""});
    CHECK(p.why_waiting("wrong-lists") == "no live worker of resource 'gpu0' serves task list 'gpu'");
  }

  TEST_CASE("the emptiest worker is chosen, then the one that took a session longest ago") {
    SessionPlacement p;
    p.join("a", "", 2, {"default"});
    p.join("b", "", 3, {"default"});
    for (const std::string key : {"s1", "s2", "s3", "s4"}) p.request(any(key));
    // b (3 free) takes s1; then a and b have 2 free each, a took none yet; then b, then the last.
    CHECK(p.place() == Placed{{"s1", "b"}, {"s2", "a"}, {"s3", "b"}, {"s4", "a"}});
  }

  TEST_CASE("workers that take no sessions now, or none at all, are passed over and said why") {
    SessionPlacement p;
    p.join("none", "", 0, {"default"});
    p.request(any("s"));
    CHECK(p.place().empty());
    CHECK(p.why_waiting("s") ==
          "no worker that serves task list 'default' takes sessions (max_concurrent_sessions = 0)");
    p.join("w1", "", 1, {"default"});
    p.accepting("w1", false);
    CHECK(p.place().empty());
    CHECK(p.why_waiting("s") == "the workers that fit take no sessions now (draining, quarantined or unhealthy)");
    p.accepting("w1", true);
    CHECK(p.place() == Placed{{"s", "w1"}});
    p.leave("w1");
    CHECK(p.held("w1") == 0);
    CHECK(p.why_waiting("s").empty());  // nothing waits
  }

  TEST_CASE("a recreated session goes back to the worker it lost only when no other can take it") {
    SessionPlacement p;
    p.join("lost", "", 2, {"default"});
    p.join("other", "", 1, {"default"});
    p.request(SessionRequest{"s1", "", {"default"}, "lost"});
    CHECK(p.place() == Placed{{"s1", "other"}});  // though "lost" has more free slots
    p.request(SessionRequest{"s2", "", {"default"}, "lost"});
    CHECK(p.place() == Placed{{"s2", "lost"}});  // "other" is full
  }

  TEST_CASE("a session re-established on its worker's new process claims a slot there, within the cap") {
    SessionPlacement p;
    p.join("w1", "gpu0", 1, {"default"});
    p.request(any("s1"));
    REQUIRE(p.place() == Placed{{"s1", "w1"}});
    p.leave("w1");  // lost: its slots go with it
    p.join("w1", "gpu0", 1, {"default"});
    p.request(any("s2"));
    REQUIRE(p.place() == Placed{{"s2", "w1"}});  // the new process's slot went to another session
    CHECK_FALSE(p.claim("s1", "w1"));            // full: s1 waits for its window, or moves on
    p.release("s2", "w1");
    CHECK(p.claim("s1", "w1"));
    CHECK(p.claim("s1", "w1"));  // holds it already
    CHECK(p.held("w1") == 1);
    CHECK_FALSE(p.claim("s1", "w9"));
  }

  TEST_CASE("a withdrawn request is no longer placed") {
    SessionPlacement p;
    CHECK(p.request(any("s")));
    CHECK(p.why_waiting("s") == "no live worker takes sessions");
    CHECK(p.waiting() == 1);
    CHECK(p.withdraw("s"));
    CHECK_FALSE(p.withdraw("s"));
    p.join("w1", "", 1, {"default"});
    CHECK(p.place().empty());
  }
}
