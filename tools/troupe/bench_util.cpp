// Benchmark helpers.
#include "tools/troupe/bench_util.hpp"

#include <algorithm>
#include <fstream>
#include <tuple>
#include <utility>

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

/// The machine's steal and total CPU ticks from /proc/stat's first line.
std::pair<uint64_t, uint64_t> cpu_ticks() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  stat >> cpu;
  uint64_t value = 0, total = 0, steal = 0;
  // user nice system idle iowait irq softirq steal (guest times are included in user)
  for (int field = 0; field < 8 && stat >> value; ++field) {
    total += value;
    if (field == 7) steal = value;
  }
  return {steal, total};
}

}  // namespace

StealMeter::StealMeter() { std::tie(steal_, total_) = cpu_ticks(); }

double StealMeter::fraction() const {
  const auto [steal, total] = cpu_ticks();
  return total > total_ ? double(steal - steal_) / double(total - total_) : 0.0;
}

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

Json chain_report(const std::string& mode, int workflows, int tasks, int in_flight, double wall_s,
                  const std::vector<double>& sorted_latencies_ms) {
  Json report = Json::object();
  report.set("workload", "CHAIN");
  report.set("mode", mode);
  report.set("workflows", workflows);
  report.set("tasks_per_workflow", tasks);
  report.set("in_flight", in_flight);
  report.set("wall_s", wall_s);
  report.set("workflows_per_s", workflows / wall_s);
  report.set("tasks_per_s", double(workflows) * tasks / wall_s);
  report.set("latency_p50_ms", quantile(sorted_latencies_ms, 0.50));
  report.set("latency_p95_ms", quantile(sorted_latencies_ms, 0.95));
  report.set("latency_p99_ms", quantile(sorted_latencies_ms, 0.99));
  return report;
}

}  // namespace troupe::cli
