// The suite's timings and the seed, with their environment overrides.
#include "test/chaos/timings.hpp"

#include <cstdlib>
#include <random>
#include <string>

namespace troupe::chaos {

Timings chaos_timings() {
  Timings t;
  if (const char* keys = std::getenv("TROUPE_CHAOS_CLUSTER_KEYS");
      keys != nullptr && *keys != '\0') {
    t.extra_cluster_keys += (t.extra_cluster_keys.empty() ? "" : "\n") + std::string(keys);
  }
  return t;
}

uint64_t chaos_seed() {
  static const uint64_t seed = []() -> uint64_t {
    if (const char* text = std::getenv("TROUPE_TEST_SEED"); text != nullptr && *text != '\0') {
      return static_cast<uint64_t>(std::strtoull(text, nullptr, 10));
    }
    std::random_device device;
    return static_cast<uint64_t>((static_cast<uint64_t>(device()) << 20 ^ device()) %
                                 1000000000ULL);
  }();
  return seed;
}

int chaos_kills(int fallback) {
  if (const char* text = std::getenv("TROUPE_CHAOS_KILLS"); text != nullptr && *text != '\0') {
    const int n = std::atoi(text);
    if (n > 0) return n;
  }
  return fallback;
}

}  // namespace troupe::chaos
