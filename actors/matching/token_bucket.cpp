// The token bucket in integer arithmetic: rates in tokens per million seconds, times in
// nanoseconds, products in 128 bits.
#include "actors/matching/token_bucket.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace troupe::actors {
namespace {

__extension__ typedef __int128 Int128;

/// Nanoseconds per token at a rate of one token per million seconds.
constexpr Int128 nanos_per_micro_rate = static_cast<Int128>(1'000'000'000) * 1'000'000;
/// A full refill may take at most this long (100 years), so every time fits in 64 bits.
constexpr int64_t max_refill_nanos = 100LL * 365 * 24 * 3600 * 1'000'000'000;

using Nanos = std::chrono::nanoseconds;

}  // namespace

Result<TokenBucket> TokenBucket::create(double rate, uint32_t burst) {
  if (!(rate >= min_rate && rate <= max_rate)) {
    return fail(Errc::INVALID_ARGUMENT,
                "rate limit: rate must be between 0.000001 and 1e9 tokens per second, not " +
                    std::to_string(rate) + "; leave the limit out for no limit");
  }
  if (burst == 0) {
    return fail(Errc::INVALID_ARGUMENT, "rate limit: burst must be at least 1");
  }
  const auto micro_rate = static_cast<uint64_t>(std::llround(rate * 1e6));
  TokenBucket bucket(micro_rate, burst);
  const Int128 refill =
      (static_cast<Int128>(burst) * nanos_per_micro_rate + micro_rate - 1) / micro_rate;
  if (refill > max_refill_nanos) {
    return fail(Errc::INVALID_ARGUMENT, "rate limit: a burst of " + std::to_string(burst) + " at " +
                                            std::to_string(rate) +
                                            " tokens per second takes more than 100 years to "
                                            "refill; raise the rate or lower the burst");
  }
  return bucket;
}

int64_t TokenBucket::nanos_for(uint64_t tokens) const {
  const Int128 nanos = (static_cast<Int128>(tokens) * nanos_per_micro_rate + micro_rate_ - 1) /
                       static_cast<Int128>(micro_rate_);
  // Only reached after ~292 years of continuous saturation.
  if (nanos > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(nanos);
}

TokenBucket::TimePoint TokenBucket::full_at() const {
  if (taken_ == 0) return anchor_;
  return anchor_ + std::chrono::ceil<Clock::duration>(Nanos(nanos_for(taken_)));
}

TokenBucket::TimePoint TokenBucket::next_token_at() const {
  // GCRA: token number taken_ + 1 conforms once taken_ + 1 - burst tokens have been refilled.
  if (taken_ < burst_) return anchor_;
  const auto wait = Nanos(nanos_for(taken_ + 1 - burst_));
  // Round up so that a clock coarser than nanoseconds never lets a token out early.
  return anchor_ + std::chrono::ceil<Clock::duration>(wait);
}

bool TokenBucket::try_take(TimePoint now) {
  if (is_unlimited()) return true;
  now = std::max(now, anchor_);
  if (now >= full_at()) {
    anchor_ = now;
    taken_ = 0;
  }
  if (now < next_token_at()) return false;
  ++taken_;
  return true;
}

TokenBucket::TimePoint TokenBucket::next_available(TimePoint now) const {
  if (is_unlimited()) return now;
  const TimePoint clamped = std::max(now, anchor_);
  if (clamped >= full_at()) return now;
  return std::max(now, next_token_at());
}

uint64_t TokenBucket::available(TimePoint now) const {
  if (is_unlimited()) return std::numeric_limits<uint64_t>::max();
  now = std::max(now, anchor_);
  if (now >= full_at()) return burst_;
  // The k-th token after the anchor is refilled once ceil(k / rate) <= elapsed, that is
  // k <= floor(elapsed * rate).
  const int64_t elapsed = std::chrono::duration_cast<Nanos>(now - anchor_).count();
  const auto refilled =
      static_cast<uint64_t>(static_cast<Int128>(elapsed) * micro_rate_ / nanos_per_micro_rate);
  // Not full means taken_ > refilled, and a take needs taken_ + 1 - burst <= refilled.
  return burst_ - std::min<uint64_t>(burst_, taken_ - refilled);
}

}  // namespace troupe::actors
