// Histogram's buckets and the bound presets.
#include "schema/meters.hpp"

#include <algorithm>

namespace troupe::meters {

Histogram::Histogram(std::span<const uint64_t> upper_bounds)
    : bounds_(upper_bounds.begin(), upper_bounds.end()),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::observe(uint64_t value) {
  const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  buckets_[static_cast<size_t>(at - bounds_.begin())].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::snapshot() const {
  HistogramSnapshot out;
  out.upper_bounds = bounds_;
  out.cumulative.reserve(bounds_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    out.cumulative.push_back(running);
  }
  out.count = running + buckets_[bounds_.size()].load(std::memory_order_relaxed);
  out.sum = sum_.load(std::memory_order_relaxed);
  return out;
}

std::span<const uint64_t> latency_bounds_us() {
  static constexpr uint64_t bounds[] = {
      100,       250,       500,        1'000,      2'500,      5'000,        10'000,
      25'000,    50'000,    100'000,    250'000,    500'000,    1'000'000,    2'500'000,
      5'000'000, 10'000'000, 30'000'000, 60'000'000, 300'000'000, 900'000'000, 3'600'000'000};
  return bounds;
}

std::span<const uint64_t> sync_bounds_us() {
  static constexpr uint64_t bounds[] = {50,     100,     250,     500,     1'000,     2'500,     5'000,   10'000,
                                        25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 5'000'000};
  return bounds;
}

std::span<const uint64_t> size_bounds() {
  static constexpr uint64_t bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  return bounds;
}

}  // namespace troupe::meters
