// The matching actor's plain building blocks: token buckets (rates over simulated time, bursts,
// exact next_available, unlimited), the ready queue against a brute-force model, and credit-based
// dispatch under random assign/release, with a retry's avoided worker and what holds an
// assignment back. A random test prints TROUPE_TEST_SEED=… on failure.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "actors/matching/credit.hpp"
#include "actors/matching/ready_queue.hpp"
#include "actors/matching/token_bucket.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using TimePoint = TokenBucket::TimePoint;

namespace {

/// An arbitrary start, away from the clock's epoch.
const TimePoint t0 = TimePoint{} + 12345s + 678ns;

uint64_t test_seed() {
  uint64_t seed = std::random_device{}();
  if (const char* fixed = std::getenv("TROUPE_TEST_SEED")) seed = std::strtoull(fixed, nullptr, 10);
  return seed;
}

TokenBucket bucket(double rate, uint32_t burst) {
  auto made = TokenBucket::create(rate, burst);
  REQUIRE(made);
  return *made;
}

/// Takes every token as soon as it is available, jumping from one next_available to the next.
uint64_t greedy_count(TokenBucket b, TimePoint start, TimePoint end) {
  uint64_t count = 0;
  for (TimePoint now = start; now <= end; now = b.next_available(now)) {
    if (!b.try_take(now)) {
      FAIL("no token at next_available");
    }
    ++count;
  }
  return count;
}

/// Polls every `step` and at `end`, and takes all the tokens available at each poll.
uint64_t polling_count(TokenBucket b, TimePoint start, TimePoint end,
                       std::chrono::nanoseconds step) {
  uint64_t count = 0;
  for (TimePoint now = start;; now = std::min(now + step, end)) {
    while (b.try_take(now)) ++count;
    if (now == end) return count;
  }
}

}  // namespace

TEST_SUITE("actors.matching") {
  TEST_CASE("a token bucket holds its rate within 1% over a simulated minute") {
    for (double rate : {2.0, 3.3, 7.5, 10.0, 123.4, 1000.0, 4321.5, 20000.0}) {
      for (uint32_t burst : {1u, 5u, 100u}) {
        CAPTURE(rate);
        CAPTURE(burst);
        const TokenBucket b = bucket(rate, burst);
        const double nominal = rate * 60;
        const auto whole = static_cast<uint64_t>(std::floor(nominal + 1e-9));
        // Driven by next_available: the burst at once, then floor(60 s x rate) more. With burst 1
        // the bucket is full whenever a token is due, so a taker that is late by the rounding to
        // whole nanoseconds loses that fraction of a nanosecond, as a real bucket would.
        const uint64_t greedy = greedy_count(b, t0, t0 + 60s) - burst;
        if (burst > 1) {
          CHECK(greedy == whole);
        } else {
          CHECK(greedy <= whole);
          CHECK(greedy + 1 + static_cast<uint64_t>(nominal * rate * 1e-9) >= whole);
        }
        CHECK(std::abs(static_cast<double>(greedy) - nominal) <= 0.01 * nominal);
        // Polled at most every millisecond, and often enough that the bucket cannot fill up between
        // polls (with burst 1 it always can: then often enough to lose under 1%): within 1% too.
        const double seconds = burst > 1 ? (burst - 1) / rate : 0.005 / rate;
        const auto step = std::min<std::chrono::nanoseconds>(
            1ms, std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9)));
        if (step < 20us) continue;  // millions of polls for nothing new
        const uint64_t polled = polling_count(b, t0, t0 + 60s, step) - burst;
        if (burst > 1) CHECK(polled == whole);
        CHECK(std::abs(static_cast<double>(polled) - nominal) <= 0.01 * nominal);
        CHECK(polled <= whole);
      }
    }
  }

  TEST_CASE("a token bucket does not drift over a simulated day at a rate with no exact interval") {
    // 3 tokens per second: 333333333.3 ns apart. The k-th token after the burst is available at
    // exactly t0 + ceil(k / 3 s), however many came before it.
    // A burst of 2 keeps the bucket from filling up between takes, so no refill is lost.
    TokenBucket b = bucket(3, 2);
    REQUIRE(b.try_take(t0));
    REQUIRE(b.try_take(t0));
    TimePoint now = t0;
    for (uint64_t k = 1; k <= 3 * 86400; ++k) {
      now = b.next_available(now);
      const int64_t want = static_cast<int64_t>((k * 1'000'000'000 + 2) / 3);
      REQUIRE((now - t0) == std::chrono::nanoseconds(want));
      REQUIRE(b.try_take(now));
    }
    CHECK(now == t0 + 24h);
  }

  TEST_CASE("a token bucket gives its burst at once, then one token per interval") {
    TokenBucket b = bucket(10, 5);
    CHECK(b.available(t0) == 5);
    for (int i = 0; i < 5; ++i) CHECK(b.try_take(t0));
    CHECK_FALSE(b.try_take(t0));
    CHECK(b.available(t0) == 0);
    CHECK(b.next_available(t0) == t0 + 100ms);
    CHECK_FALSE(b.try_take(t0 + 100ms - 1ns));
    CHECK(b.available(t0 + 250ms) == 2);
    CHECK(b.try_take(t0 + 100ms));
    CHECK(b.available(t0 + 250ms) == 1);

    SUBCASE("an idle bucket fills up to its burst and no further") {
      CHECK(b.available(t0 + 1h) == 5);
      for (int i = 0; i < 5; ++i) CHECK(b.try_take(t0 + 1h));
      CHECK_FALSE(b.try_take(t0 + 1h));
      CHECK(b.next_available(t0 + 1h) == t0 + 1h + 100ms);
    }
    SUBCASE("a partly refilled bucket gives what was refilled") {
      const TimePoint later = t0 + 100ms + 300ms;  // 3 more tokens refilled since the last take
      int taken = 0;
      while (b.try_take(later)) ++taken;
      CHECK(taken == 3);
    }
    SUBCASE("time going backwards grants nothing") {
      CHECK_FALSE(b.try_take(t0));
      CHECK_FALSE(b.try_take(t0 - 1h));
      CHECK(b.next_available(t0 - 1h) == t0 + 200ms);
    }
  }

  TEST_CASE("next_available is exactly the first instant try_take succeeds") {
    const uint64_t seed = test_seed();
    INFO("TROUPE_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 200; ++round) {
      CAPTURE(round);
      const double rate =
          std::round(std::exp(std::uniform_real_distribution<double>(-3, 12)(rng)) * 1e3) / 1e3;
      const uint32_t burst = 1 + static_cast<uint32_t>(rng() % 8);
      CAPTURE(rate);
      CAPTURE(burst);
      TokenBucket b = bucket(rate, burst);
      TimePoint now = t0;
      for (int step = 0; step < 50; ++step) {
        now += std::chrono::nanoseconds(rng() % static_cast<uint64_t>(3e9 / rate + 1));
        const TimePoint next = b.next_available(now);
        REQUIRE(next >= now);
        CHECK((b.available(now) > 0) == (next == now));
        if (next > now) {
          TokenBucket probe = b;
          CHECK_FALSE(probe.try_take(next - 1ns));
        }
        TokenBucket probe = b;
        CHECK(probe.try_take(next));
        if (rng() % 2) (void)b.try_take(now);
      }
    }
  }

  TEST_CASE("an unlimited bucket always has a token") {
    TokenBucket b;
    CHECK(b.is_unlimited());
    CHECK(TokenBucket::unlimited().is_unlimited());
    for (int i = 0; i < 100000; ++i) REQUIRE(b.try_take(t0));
    CHECK(b.next_available(t0) == t0);
    CHECK(b.available(t0) == std::numeric_limits<uint64_t>::max());
    CHECK(b.rate() == 0);
  }

  TEST_CASE("token bucket limits out of range are rejected with a message") {
    for (double rate :
         {0.0, -1.0, 1e-7, 2e9, std::nan(""), std::numeric_limits<double>::infinity()}) {
      CAPTURE(rate);
      auto made = TokenBucket::create(rate, 1);
      REQUIRE_FALSE(made);
      CHECK(made.error().code == Errc::INVALID_ARGUMENT);
      CHECK(made.error().message.find("rate") != std::string::npos);
    }
    auto no_burst = TokenBucket::create(1, 0);
    REQUIRE_FALSE(no_burst);
    CHECK(no_burst.error().message.find("burst must be at least 1") != std::string::npos);
    auto glacial = TokenBucket::create(1e-6, 4000);
    REQUIRE_FALSE(glacial);
    CHECK(glacial.error().message.find("100 years") != std::string::npos);
    auto slow = TokenBucket::create(1e-6, 1);
    REQUIRE(slow);
    CHECK(slow->rate() == doctest::Approx(1e-6));
    CHECK(slow->burst() == 1);
  }

  TEST_CASE("the ready queue serves higher priority first, then older") {
    ReadyQueue q;
    CHECK(q.empty());
    CHECK_FALSE(q.pop());
    CHECK_FALSE(q.peek());
    REQUIRE(q.push("a", 0));
    REQUIRE(q.push("b", 5));
    REQUIRE(q.push("c", 0));
    REQUIRE(q.push("d", 5));
    REQUIRE(q.push("e", -2));
    CHECK(q.size() == 5);
    CHECK(q.next_arrival() == 5);
    CHECK(q.peek()->key == "b");
    std::vector<std::string> order;
    for (const auto& e : q.entries()) order.push_back(e.key);
    CHECK(order == std::vector<std::string>{"b", "d", "a", "c", "e"});
    std::vector<std::string> popped;
    while (auto e = q.pop()) popped.push_back(e->key);
    CHECK(popped == order);
    CHECK(q.empty());
  }

  TEST_CASE("the ready queue rejects a key it holds and removes by key") {
    ReadyQueue q;
    REQUIRE(q.push("x", 1));
    REQUIRE(q.push("y", 1));
    REQUIRE(q.push("z", 1));
    CHECK_FALSE(q.push("y", 9));
    CHECK_FALSE(q.push(ReadyEntry{"x", 9, 0}));
    CHECK(q.size() == 3);
    CHECK(q.peek() == ReadyEntry{"x", 1, 0});

    auto removed = q.remove("y");
    REQUIRE(removed);
    CHECK(*removed == ReadyEntry{"y", 1, 1});
    CHECK_FALSE(q.contains("y"));
    CHECK_FALSE(q.remove("y"));
    CHECK_FALSE(q.remove("never"));
    // Requeued, it is the newest.
    REQUIRE(q.push("y", 1));
    CHECK(q.entries() == std::vector<ReadyEntry>{{"x", 1, 0}, {"z", 1, 2}, {"y", 1, 3}});
    // An entry with an older arrival number (kept in a history) goes before newer ones.
    REQUIRE(q.push(ReadyEntry{"old", 1, 0}));
    CHECK(q.peek()->key == "old");  // ties on arrival are broken by key
    CHECK(q.next_arrival() == 4);

    ReadyQueue moved = std::move(q);
    CHECK(moved.size() == 4);
    CHECK(moved.pop()->key == "old");
    CHECK(moved.remove("z"));
    CHECK(moved.pop()->key == "x");
    CHECK(moved.pop()->key == "y");
    CHECK(moved.empty());
  }

  TEST_CASE("the ready queue matches a brute-force model over random operations") {
    const uint64_t seed = test_seed();
    INFO("TROUPE_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return rng() % n; };
    // The model: an unordered list; the best is found by scanning it.
    std::vector<ReadyEntry> model;
    auto best_of = [](std::vector<ReadyEntry>& entries) {
      auto best = entries.begin();
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        if (it->priority != best->priority) {
          if (it->priority > best->priority) best = it;
        } else if (it->arrival != best->arrival) {
          if (it->arrival < best->arrival) best = it;
        } else if (it->key < best->key) {
          best = it;
        }
      }
      return best;
    };
    auto model_best = [&] { return best_of(model); };
    auto model_find = [&](const std::string& key) {
      return std::find_if(model.begin(), model.end(),
                          [&](const ReadyEntry& e) { return e.key == key; });
    };

    ReadyQueue q;
    uint64_t next_arrival = 0;
    for (int step = 0; step < 20000; ++step) {
      CAPTURE(step);
      const std::string key = "k" + std::to_string(pick(60));
      const auto priority = static_cast<int32_t>(pick(7)) - 3;
      switch (pick(6)) {
        case 0:
        case 1: {
          const bool fresh = model_find(key) == model.end();
          CHECK(q.push(key, priority) == fresh);
          if (fresh) model.push_back({key, priority, next_arrival++});
          break;
        }
        case 2: {
          const uint64_t arrival = pick(next_arrival + 1);
          const bool fresh = model_find(key) == model.end();
          CHECK(q.push(ReadyEntry{key, priority, arrival}) == fresh);
          if (fresh) {
            model.push_back({key, priority, arrival});
            next_arrival = std::max(next_arrival, arrival + 1);
          }
          break;
        }
        case 3: {
          auto got = q.pop();
          if (model.empty()) {
            CHECK_FALSE(got);
          } else {
            auto best = model_best();
            REQUIRE(got);
            CHECK(*got == *best);
            model.erase(best);
          }
          break;
        }
        case 4: {
          auto got = q.remove(key);
          auto it = model_find(key);
          CHECK(got.has_value() == (it != model.end()));
          if (it != model.end()) {
            CHECK(*got == *it);
            model.erase(it);
          }
          break;
        }
        default: {
          CHECK(q.contains(key) == (model_find(key) != model.end()));
          auto peeked = q.peek();
          CHECK(peeked.has_value() == !model.empty());
          if (peeked) CHECK(*peeked == *model_best());
        }
      }
      REQUIRE(q.size() == model.size());
      CHECK(q.next_arrival() == next_arrival);
      if (step % 500 == 0) {
        std::vector<ReadyEntry> rest = model;
        std::vector<ReadyEntry> expected;
        while (!rest.empty()) {
          auto best = best_of(rest);
          expected.push_back(*best);
          rest.erase(best);
        }
        CHECK(q.entries() == expected);
      }
    }
  }

  TEST_CASE("credit never exceeds a worker's slots under random assign and release") {
    const uint64_t seed = test_seed();
    INFO("TROUPE_TEST_SEED=" << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return rng() % n; };
    struct ModelWorker {
      uint32_t slots;
      uint32_t in_use;
      uint64_t last;  // when last assigned; 0 = never
    };
    std::map<std::string, ModelWorker> model;
    uint64_t clock = 0;

    CreditPool pool;
    TimePoint now = t0;
    for (int step = 0; step < 20000; ++step) {
      CAPTURE(step);
      now += 1ms;
      const std::string id = "w" + std::to_string(pick(8));
      auto known = model.find(id);
      switch (pick(10)) {
        case 0: {
          const auto slots = static_cast<uint32_t>(pick(5));
          CHECK(pool.add_worker(id, slots) == (known == model.end()));
          if (known == model.end()) model[id] = {slots, 0, 0};
          break;
        }
        case 1: {
          const auto slots = static_cast<uint32_t>(pick(5));
          CHECK(pool.set_slots(id, slots) == (known != model.end()));
          if (known != model.end()) known->second.slots = slots;
          break;
        }
        case 2: {
          auto held = pool.remove_worker(id);
          CHECK(held.has_value() == (known != model.end()));
          if (known != model.end()) {
            CHECK(*held == known->second.in_use);
            model.erase(known);
          }
          break;
        }
        case 3:
        case 4:
        case 5:
        case 6: {
          // The model's choice: most free, then least recently assigned, then smallest id.
          const std::string* want = nullptr;
          uint32_t want_free = 0;
          uint64_t want_last = 0;
          for (auto& [wid, w] : model) {
            const uint32_t free = w.in_use < w.slots ? w.slots - w.in_use : 0;
            if (free == 0) continue;
            if (!want || free > want_free || (free == want_free && w.last < want_last)) {
              want = &wid;
              want_free = free;
              want_last = w.last;
            }
          }
          auto got = pool.assign(now);
          REQUIRE(got.has_value() == (want != nullptr));
          if (got) {
            CHECK(*got == *want);
            auto& w = model[*got];
            CHECK(w.in_use < w.slots);
            ++w.in_use;
            w.last = ++clock;
          }
          CHECK(pool.next_assign_time(now).has_value() == (pool.free_slots() > 0));
          break;
        }
        default: {
          const bool can = known != model.end() && known->second.in_use > 0;
          CHECK(pool.release(id) == can);
          if (can) --known->second.in_use;
        }
      }
      uint64_t free_total = 0;
      for (const auto& [wid, w] : model) {
        auto seen = pool.find_worker(wid);
        REQUIRE(seen);
        CHECK(seen->slots == w.slots);
        CHECK(seen->in_use == w.in_use);
        free_total += seen->free();
      }
      CHECK(pool.worker_count() == model.size());
      CHECK(pool.free_slots() == free_total);
    }
  }

  TEST_CASE("most free first; among equals the worker assigned longest ago") {
    CreditPool pool;
    REQUIRE(pool.add_worker("a", 2));
    REQUIRE(pool.add_worker("b", 4));
    REQUIRE(pool.add_worker("c", 2));
    std::vector<std::string> order;
    while (auto w = pool.assign(t0)) order.push_back(*w);
    // b down to 2 free, then rotation among the three.
    CHECK(order == std::vector<std::string>{"b", "b", "a", "c", "b", "a", "c", "b"});
    CHECK(pool.free_slots() == 0);
    CHECK_FALSE(pool.next_assign_time(t0));
    REQUIRE(pool.release("c"));
    CHECK(pool.next_assign_time(t0) == t0);
    CHECK(pool.assign(t0) == std::optional<std::string>("c"));
  }

  TEST_CASE("a worker's own rate limit is respected and others take up the slack") {
    CreditPool pool;
    REQUIRE(pool.add_worker("limited", 1000, bucket(10, 1)));
    REQUIRE(pool.add_worker("free", 1000));
    std::map<std::string, int> got;
    for (TimePoint now = t0; now <= t0 + 10s; now += 1ms) {
      for (int i = 0; i < 2; ++i) {
        auto w = pool.assign(now);
        REQUIRE(w);
        ++got[*w];
        REQUIRE(pool.release(*w));
      }
    }
    CHECK(got["limited"] == 1 + 10 * 10);  // its burst, then 10 per second, to the nanosecond
    CHECK(got["limited"] + got["free"] == 2 * 10001);
  }

  TEST_CASE("the task list's global rate limits every worker together") {
    CreditPool pool(bucket(50, 5));
    for (const char* id : {"a", "b", "c"}) REQUIRE(pool.add_worker(id, 100));
    int assigned = 0;
    TimePoint now = t0;
    while (now <= t0 + 10s) {
      if (auto w = pool.assign(now)) {
        ++assigned;
        REQUIRE(pool.release(*w));
        continue;
      }
      auto next = pool.next_assign_time(now);
      REQUIRE(next);
      REQUIRE(*next > now);
      CHECK_FALSE(pool.assign(*next - 1ns));
      now = *next;
    }
    CHECK(assigned == 5 + 50 * 10);
  }

  TEST_CASE("a failed assignment takes no token from the global bucket") {
    CreditPool pool(bucket(1, 1));
    REQUIRE(pool.add_worker("slow", 4, bucket(0.5, 1)));
    CHECK(pool.assign(t0) == std::optional<std::string>("slow"));
    // The later of the two buckets decides: the global one refills at 1 s, the worker's at 2 s.
    CHECK(pool.next_assign_time(t0) == t0 + 2s);
    CHECK_FALSE(pool.assign(t0 + 1s));
    REQUIRE(pool.add_worker("fast", 1));
    CHECK(pool.next_assign_time(t0 + 1s) == t0 + 1s);
    CHECK(pool.assign(t0 + 1s) == std::optional<std::string>("fast"));
    CHECK(pool.next_assign_time(t0 + 1s) == t0 + 2s);
    CHECK_FALSE(pool.assign(t0 + 2s - 1ns));
    CHECK(pool.assign(t0 + 2s) == std::optional<std::string>("slow"));
  }

  TEST_CASE("a worker is never assigned past its slots, even after they shrink") {
    CreditPool pool;
    REQUIRE(pool.add_worker("w", 3));
    for (int i = 0; i < 3; ++i) REQUIRE(pool.assign(t0));
    CHECK_FALSE(pool.assign(t0));
    REQUIRE(pool.set_slots("w", 1));  // e.g. a drain: 2 over
    CHECK(pool.find_worker("w")->free() == 0);
    REQUIRE(pool.release("w"));
    CHECK_FALSE(pool.assign(t0));
    REQUIRE(pool.release("w"));
    CHECK_FALSE(pool.assign(t0));
    REQUIRE(pool.release("w"));
    CHECK(pool.free_slots() == 1);
    CHECK(pool.assign(t0) == std::optional<std::string>("w"));
    CHECK_FALSE(pool.release("nobody"));
  }

  TEST_CASE("a removed worker gets nothing more and its late releases are refused") {
    CreditPool pool;
    REQUIRE(pool.add_worker("gone", 2));
    REQUIRE(pool.add_worker("stays", 1));
    CHECK(pool.assign(t0) == std::optional<std::string>("gone"));
    CHECK_FALSE(pool.add_worker("gone", 9));
    CHECK(pool.remove_worker("gone") == std::optional<uint32_t>(1));
    CHECK_FALSE(pool.remove_worker("gone"));
    CHECK_FALSE(pool.release("gone"));
    CHECK_FALSE(pool.find_worker("gone"));
    CHECK(pool.worker_count() == 1);
    CHECK(pool.assign(t0) == std::optional<std::string>("stays"));
    CHECK_FALSE(pool.assign(t0));
    // The same id registering again starts afresh.
    REQUIRE(pool.add_worker("gone", 1));
    CHECK(pool.find_worker("gone")->in_use == 0);
    CHECK(pool.assign(t0) == std::optional<std::string>("gone"));
  }

  TEST_CASE("assign_to takes a slot on the named worker only") {
    CreditPool pool(bucket(1, 2));
    REQUIRE(pool.add_worker("pinned", 1));
    REQUIRE(pool.add_worker("other", 5));
    CHECK_FALSE(pool.assign_to("nobody", t0));
    CHECK(pool.assign_to("pinned", t0));
    CHECK_FALSE(pool.assign_to("pinned", t0));  // no free slot
    CHECK(pool.find_worker("other")->in_use == 0);
    CHECK(pool.assign_to("other", t0));
    CHECK_FALSE(pool.assign_to("other", t0));  // the global bucket is empty
    CHECK(pool.assign_to("other", t0 + 1s));
  }

  TEST_CASE("a retry avoids the worker its last attempt failed on while another can take it") {
    CreditPool pool;
    REQUIRE(pool.add_worker("failed-there", 3));
    REQUIRE(pool.add_worker("other", 1));
    // The most free slots would choose failed-there; the retry goes to the other worker.
    CHECK(pool.assign(t0, "failed-there") == std::optional<std::string>("other"));
    // No other worker has a free slot now: the avoided one takes it rather than let it wait.
    CHECK(pool.assign(t0, "failed-there") == std::optional<std::string>("failed-there"));
    // A name that is no worker of the list changes nothing.
    CHECK(pool.assign(t0, "unknown") == std::optional<std::string>("failed-there"));
    CHECK(pool.find_worker("failed-there")->in_use == 2);
    CHECK(pool.find_worker("other")->in_use == 1);
  }

  TEST_CASE("a worker at its own rate limit does not count as one that can take a retry") {
    CreditPool pool;
    REQUIRE(pool.add_worker("failed-there", 4));
    REQUIRE(pool.add_worker("limited", 4, bucket(1, 1)));
    CHECK(pool.assign(t0, "failed-there") == std::optional<std::string>("limited"));
    // limited has free slots but no token until t0 + 1s.
    CHECK(pool.assign(t0, "failed-there") == std::optional<std::string>("failed-there"));
    CHECK(pool.assign(t0 + 1s, "failed-there") == std::optional<std::string>("limited"));
  }

  TEST_CASE("the only worker of a list takes the retry it would avoid; the list's rate limit still holds") {
    CreditPool pool(bucket(1, 1));
    REQUIRE(pool.add_worker("only", 2));
    CHECK(pool.assign(t0, "only") == std::optional<std::string>("only"));
    CHECK_FALSE(pool.assign(t0, "only"));  // the global bucket is empty
    CHECK(pool.assign(t0 + 1s, "only") == std::optional<std::string>("only"));
    CHECK_FALSE(pool.assign(t0 + 2s, "only"));  // no free slot
  }

  TEST_CASE("the credit pool names what holds an assignment back, most fundamental first") {
    CreditPool pool(bucket(1, 1));
    CHECK(pool.hold(t0) == CreditHold::NO_WORKER);  // nobody joined
    REQUIRE(pool.add_worker("sick", 0));
    CHECK(pool.hold(t0) == CreditHold::NO_WORKER);  // joined with no slot (unhealthy, draining)
    CHECK(pool.offering_count() == 0);
    REQUIRE(pool.set_slots("sick", 1));
    CHECK(pool.offering_count() == 1);
    CHECK(pool.hold(t0) == CreditHold::NONE);
    REQUIRE(pool.assign(t0));
    CHECK(pool.hold(t0) == CreditHold::BUSY);
    REQUIRE(pool.add_worker("paced", 2, bucket(1, 1)));
    CHECK(pool.hold(t0) == CreditHold::LIST_RATE);  // paced is free; the list used its token
    CHECK(pool.assign(t0 + 1s) == std::optional<std::string>("paced"));
    CHECK(pool.hold(t0 + 2s) == CreditHold::NONE);
    CHECK(pool.hold(t0 + 1500ms) == CreditHold::LIST_RATE);
    REQUIRE(pool.release("sick"));
    REQUIRE(pool.assign(t0 + 2s));  // sick again (the most free slots)
    CHECK(pool.hold(t0 + 3s) == CreditHold::NONE);
    REQUIRE(pool.set_slots("sick", 0));
    CHECK(pool.offering_count() == 1);
    CHECK(pool.remove_worker("paced"));
    CHECK(pool.offering_count() == 0);
    CHECK(pool.hold(t0 + 3s) == CreditHold::NO_WORKER);
  }

  TEST_CASE("a free worker at its own rate limit holds the task when the list's bucket does not") {
    CreditPool pool;
    REQUIRE(pool.add_worker("paced", 4, bucket(2, 1)));
    REQUIRE(pool.assign(t0));
    CHECK(pool.hold(t0) == CreditHold::WORKER_RATE);
    CHECK(pool.hold(t0 + 500ms) == CreditHold::NONE);
  }
}
