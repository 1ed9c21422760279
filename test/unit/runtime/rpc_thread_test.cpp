// The RPC thread's post queue: work posted from many threads all runs, on the RPC thread, in
// each poster's order, whether the loop is asleep or busy when it arrives (no lost wake-ups).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/rpc_thread.hpp"
#include "schema/node_log.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<runtime::RpcThread> start_idle_loop() {
  auto rpc = runtime::RpcThread::start(std::make_shared<NodeLog>("test-rpc", LogLevel::INFO, LogFormat::TEXT), [](runtime::RpcThread&, kj::AsyncIoContext&, kj::TaskSet&) -> Result<std::function<void()>> {
    return std::function<void()>([] {});
  });
  REQUIRE_MESSAGE(rpc, (rpc ? "" : rpc.error().message));
  return std::move(*rpc);
}

/// Polls until `count` reaches `target` or 10 s pass.
bool reaches(const std::atomic<uint64_t>& count, uint64_t target) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (count.load() < target) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace

TEST_SUITE("runtime.rpc_thread") {
  TEST_CASE("work posted by many threads in bursts and trickles all runs on the RPC thread, in each poster's order") {
    auto rpc = start_idle_loop();
    constexpr int posters = 4;
    constexpr uint64_t per_round = 2000;
    std::atomic<uint64_t> ran{0};
    std::atomic<bool> off_thread{false};
    std::vector<uint64_t> last_seen(posters, 0);  // touched on the RPC thread only
    std::atomic<bool> out_of_order{false};
    uint64_t expected = 0;
    // Rounds alternate bursts (the loop busy, the queue non-empty) with single posts to an
    // idle loop (the queue empty, the loop asleep): both sides of the one-wake-per-burst rule.
    for (int round = 0; round < 20; ++round) {
      const uint64_t n = round % 2 == 0 ? per_round : 1;
      std::vector<std::thread> threads;
      for (int p = 0; p < posters; ++p) {
        threads.emplace_back([&, p, n, base = expected / posters] {
          for (uint64_t i = 1; i <= n; ++i) {
            const uint64_t seq = base + i;
            rpc->post([&, p, seq, raw = rpc.get()] {
              if (!raw->on_thread()) off_thread = true;
              if (last_seen[p] + 1 != seq) out_of_order = true;
              last_seen[p] = seq;
              ++ran;
            });
          }
        });
      }
      for (auto& t : threads) t.join();
      expected += n * posters;
      REQUIRE_MESSAGE(reaches(ran, expected), "round " << round << ": " << ran.load() << " of " << expected << " ran");
    }
    CHECK_FALSE(off_thread.load());
    CHECK_FALSE(out_of_order.load());
    rpc->stop();
  }
}
