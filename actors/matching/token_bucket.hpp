// A token bucket (GCRA: generic cell rate algorithm) for dispatch rate limits, per task list and
// per worker. Plain code: time is passed in by the caller, never read from a clock here.
#pragma once

#include <chrono>
#include <cstdint>

#include "schema/result.hpp"

namespace troupe::actors {

/// Allows `rate` tokens per second on average and up to `burst` at once after an idle spell.
///
/// Exact over any run length: the bucket keeps an anchor time and the count of tokens taken since
/// it, and computes the time of the k-th token as anchor + ceil(k / rate) in integer nanoseconds,
/// so rounding never accumulates. The rate is kept to a millionth of a token per second.
///
/// A value: copy it freely. Not thread-safe; it belongs to one actor. `now` must not go backwards;
/// an earlier `now` than a previous one counts as that previous one.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  /// The limits `create` accepts for `rate` (tokens per second).
  static constexpr double min_rate = 1e-6;
  static constexpr double max_rate = 1e9;

  /// An unlimited bucket: every take succeeds.
  TokenBucket() = default;
  static TokenBucket unlimited() { return TokenBucket(); }

  /// A full bucket of `burst` tokens refilled at `rate` tokens per second. INVALID_ARGUMENT when
  /// `rate` is outside [min_rate, max_rate] (or not a number), `burst` is 0, or a full refill
  /// (burst / rate) would take more than 100 years.
  static Result<TokenBucket> create(double rate, uint32_t burst);

  bool is_unlimited() const { return micro_rate_ == 0; }
  /// Tokens per second as kept (rounded to a millionth); 0 when unlimited.
  double rate() const { return static_cast<double>(micro_rate_) / 1e6; }
  /// Capacity; 0 when unlimited.
  uint32_t burst() const { return burst_; }

  /// Takes one token if one is available at `now`.
  [[nodiscard]] bool try_take(TimePoint now);

  /// The earliest time, at or after `now`, at which `try_take` succeeds if nothing is taken
  /// before: an actor arms one timer for it instead of polling. `now` when a token is available.
  TimePoint next_available(TimePoint now) const;

  /// Tokens that could be taken at `now` (at most `burst`); UINT64_MAX when unlimited.
  uint64_t available(TimePoint now) const;

 private:
  TokenBucket(uint64_t micro_rate, uint32_t burst) : micro_rate_(micro_rate), burst_(burst) {}

  /// ceil(tokens / rate) in nanoseconds: when the `tokens`-th token after the anchor is refilled.
  int64_t nanos_for(uint64_t tokens) const;
  /// The theoretical arrival time: when the bucket is full again.
  TimePoint full_at() const;
  /// The time the next token can be taken, assuming the bucket is not full at `now`.
  TimePoint next_token_at() const;

  uint64_t micro_rate_ = 0;  ///< tokens per million seconds; 0 means unlimited
  uint32_t burst_ = 0;
  TimePoint anchor_ = TimePoint::min();  ///< the bucket was full here
  uint64_t taken_ = 0;                   ///< tokens taken since `anchor_`
};

}  // namespace troupe::actors
