#include "schema/meters.hpp"

#include <doctest/doctest.h>

#include <thread>
#include <vector>

using namespace troupe::meters;

TEST_SUITE("schema.meters") {
  TEST_CASE("a histogram counts each value in the first bucket whose bound it does not exceed") {
    const uint64_t bounds[] = {10, 100, 1000};
    Histogram h(bounds);
    for (uint64_t v : {0, 10, 11, 100, 999, 1000, 1001, 50000}) h.observe(v);
    const auto s = h.snapshot();
    CHECK(s.upper_bounds == std::vector<uint64_t>{10, 100, 1000});
    // le=10: 0, 10; le=100: + 11, 100; le=1000: + 999, 1000; +Inf: + 1001, 50000.
    CHECK(s.cumulative == std::vector<uint64_t>{2, 4, 6});
    CHECK(s.count == 8);
    CHECK(s.sum == 0 + 10 + 11 + 100 + 999 + 1000 + 1001 + 50000);
  }

  TEST_CASE("an empty histogram has every bucket at 0") {
    Histogram h(latency_bounds_us());
    const auto s = h.snapshot();
    CHECK(s.cumulative.size() == latency_bounds_us().size());
    CHECK(s.count == 0);
    CHECK(s.sum == 0);
    for (uint64_t c : s.cumulative) CHECK(c == 0);
  }

  TEST_CASE("the bound presets ascend, each bound once") {
    for (auto bounds : {latency_bounds_us(), sync_bounds_us(), size_bounds()}) {
      REQUIRE_FALSE(bounds.empty());
      for (size_t i = 1; i < bounds.size(); ++i) CHECK(bounds[i - 1] < bounds[i]);
    }
    CHECK(size_bounds().back() == 4096);  // a group commit's largest batch (StoreOptions)
  }

  TEST_CASE("counts from many threads add up, with no lock") {
    Histogram h(size_bounds());
    Counter counter;
    Gauge gauge;
    constexpr int threads = 4, each = 10000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&] {
        for (int i = 0; i < each; ++i) {
          h.observe(static_cast<uint64_t>(i % 8));
          counter.add();
          gauge.add(1);
          gauge.add(-1);
        }
      });
    }
    for (auto& w : workers) w.join();
    const auto s = h.snapshot();
    CHECK(s.count == uint64_t{threads} * each);
    CHECK(s.cumulative.back() == s.count);
    CHECK(s.sum == uint64_t{threads} * (each / 8) * (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7));
    CHECK(counter.value() == uint64_t{threads} * each);
    CHECK(gauge.value() == 0);
    gauge.set(-3);
    CHECK(gauge.value() == -3);
  }
}
