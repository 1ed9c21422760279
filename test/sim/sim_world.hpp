// The simulation's time, randomness and event queue. Everything that happens in a schedule is
// an event at a simulated time, run in time order (ties in the order they were made), so one
// seed always gives the same run. The scheduler's actors live on CAF's test coordinator, whose
// timers the world fires at their own simulated times between its events.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "schema/duration.hpp"

namespace troupe::sim {

/// Simulated time since the schedule began.
using Time = Duration;
using namespace std::chrono_literals;

inline constexpr Time never = Time::max();

/// A time or duration for reports: seconds with milliseconds, "13.943s".
inline std::string show(Duration d) {
  if (d == never) return "never";
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%lld.%03llds", ms < 0 ? "-" : "", static_cast<long long>(std::llabs(ms) / 1000),
                static_cast<long long>(std::llabs(ms) % 1000));
  return buf;
}

/// What the world needs from the actors of the scheduler that is up: their timers.
class ActorClock {
 public:
  virtual ~ActorClock() = default;
  /// When the earliest actor timer falls due; `never` if none is armed.
  virtual Time next_due() const = 0;
  /// Moves the actors' clock to `t`, fires the timers due by then, and runs every actor.
  virtual void advance_to(Time t) = 0;
  /// Runs every actor until no message is left.
  virtual void run() = 0;
};

class World {
 public:
  explicit World(uint64_t seed) : random_(seed) {}

  Time now() const { return now_; }

  // --- randomness: the only source in a schedule -------------------------------------------
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(random_) < p; }
  /// Uniform in [lo, hi].
  Duration between(Duration lo, Duration hi) {
    if (hi <= lo) return lo;
    return Duration(std::uniform_int_distribution<int64_t>(lo.count(), hi.count())(random_));
  }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(random_); }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(random_); }
  std::mt19937_64& random() { return random_; }

  // --- events -------------------------------------------------------------------------------
  /// Runs `fn` at `t` (now, if `t` has passed). Ignored once the world is stopping: callbacks
  /// that fire while actors are torn down schedule nothing.
  void at(Time t, std::function<void()> fn) {
    if (stopping_) return;
    queue_.push(Event{std::max(t, now_), next_++, std::move(fn)});
  }
  void after(Duration d, std::function<void()> fn) { at(now_ + d, std::move(fn)); }

  /// The scheduler's actors whose timers interleave with the events; nullptr while it is down.
  void set_actors(ActorClock* actors) { actors_ = actors; }
  ActorClock* actors() const { return actors_; }

  /// Runs events and actor timers in time order until `done()` holds (true) or `limit` passes
  /// with it still false, or nothing is left to happen (false).
  bool run_until(const std::function<bool()>& done, Time limit) {
    while (true) {
      if (done()) return true;
      Time next = queue_.empty() ? never : queue_.top().at;
      if (actors_ != nullptr) next = std::min(next, actors_->next_due());
      if (next == never || next > limit) return false;
      now_ = std::max(now_, next);
      if (actors_ != nullptr) actors_->advance_to(now_);
      while (!queue_.empty() && queue_.top().at <= now_) {
        auto fn = std::move(const_cast<Event&>(queue_.top()).fn);
        queue_.pop();
        fn();
        if (actors_ != nullptr) actors_->run();
      }
    }
  }

  /// From now on nothing is scheduled: the schedule is being torn down.
  void stop() {
    stopping_ = true;
    actors_ = nullptr;
    while (!queue_.empty()) queue_.pop();
  }

  // --- the trace, printed when a schedule fails ----------------------------------------------
  void note(std::string line) {
    trace_.push_back(show(now_) + " " + std::move(line));
    if (trace_.size() > trace_limit) trace_.pop_front();
  }
  const std::deque<std::string>& trace() const { return trace_; }

 private:
  struct Event {
    Time at;
    uint64_t order;
    std::function<void()> fn;
    bool operator>(const Event& other) const { return at != other.at ? at > other.at : order > other.order; }
  };
  static constexpr size_t trace_limit = 400;

  std::mt19937_64 random_;
  Time now_{0};
  uint64_t next_ = 0;
  bool stopping_ = false;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  ActorClock* actors_ = nullptr;
  std::deque<std::string> trace_;
};

}  // namespace troupe::sim
