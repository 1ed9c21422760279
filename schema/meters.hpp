// Meters: counters, gauges and histograms that code on hot paths updates with relaxed atomics
// (no lock, no allocation), and that a metrics scrape reads on its own thread. Std-only, so
// every layer may hold them; turning them into Prometheus' format is runtime/metrics' job.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace troupe::meters {

/// A count that only goes up. Thread-safe; relaxed: a scrape sees some recent value, which is
/// all a metric needs.
class Counter {
 public:
  void add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

/// A value that goes up and down (a queue's depth, what runs now). Thread-safe, relaxed.
class Gauge {
 public:
  void set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

/// A histogram's counts at one moment: `cumulative[i]` observations were <= `upper_bounds[i]`,
/// and `count` (the last, +Inf, bucket) were made in all, summing to `sum`. Units are those of
/// the observations (microseconds, operations...).
struct HistogramSnapshot {
  std::vector<uint64_t> upper_bounds;
  std::vector<uint64_t> cumulative;
  uint64_t count = 0;
  uint64_t sum = 0;
};

/// Observations of an integer quantity (microseconds, operations) in fixed buckets, as
/// Prometheus' histograms count them: a value lands in the first bucket whose upper bound it
/// does not exceed, or in the last (+Inf) one. observe() is a short search over the bounds and
/// two relaxed increments: no lock, unlike prometheus-cpp's Histogram, which takes a mutex per
/// observation. Thread-safe.
class Histogram {
 public:
  /// `upper_bounds` ascending, each once.
  explicit Histogram(std::span<const uint64_t> upper_bounds);

  void observe(uint64_t value);
  /// The counts now. Observations made meanwhile may be in some buckets and not yet in the
  /// sum; `count` always equals the last bucket, as Prometheus requires.
  HistogramSnapshot snapshot() const;

 private:
  std::vector<uint64_t> bounds_;
  /// One per bound, then +Inf; not cumulative (snapshot adds them up).
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> sum_{0};
};

/// Bucket bounds, in microseconds, for latencies from 100 µs (a dispatch with nothing waiting)
/// to an hour (a long task): about three per decade.
std::span<const uint64_t> latency_bounds_us();
/// Bucket bounds, in microseconds, for a sync of the history store: 50 µs to 5 s.
std::span<const uint64_t> sync_bounds_us();
/// Bucket bounds for sizes: the powers of 2 from 1 to 4096 (a group commit's largest batch).
std::span<const uint64_t> size_bounds();

}  // namespace troupe::meters
