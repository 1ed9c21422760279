// Benchmark helpers.
#include "tools/troupe/bench_util.hpp"

#include <algorithm>
#include <fstream>

namespace troupe::cli {
namespace {

uint64_t status_field_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

}  // namespace

double quantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t index = std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5));
  return sorted[index];
}

uint64_t peak_rss_bytes() { return status_field_kib("VmHWM"); }
uint64_t rss_bytes() { return status_field_kib("VmRSS"); }

std::string chain_definition(int tasks) {
  std::string json = R"({"name": "chain", "tasks": [)";
  for (int t = 1; t <= tasks; ++t) {
    if (t > 1) json += ",";
    json += R"({"name": "t)" + std::to_string(t) + R"(", "handler": "noop")";
    if (t > 1) json += R"(, "dependsOn": ["t)" + std::to_string(t - 1) + R"("])";
    json += "}";
  }
  return json + "]}";
}

}  // namespace troupe::cli
