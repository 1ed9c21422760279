// Scrape's families and the Registry's run of its collectors.
#include "runtime/metrics/registry.hpp"

#include <exception>

namespace troupe::runtime::metrics {

Scrape::Family& Scrape::family(std::string_view name, std::string_view help, MetricType type) {
  // A handful of families per scrape: a scan beats a map here.
  for (auto& f : families_) {
    if (f.name == name) return f;
  }
  families_.push_back(Family{std::string(name), std::string(help), type, {}});
  return families_.back();
}

void Scrape::counter(std::string_view name, std::string_view help, double value, Labels labels) {
  Sample sample;
  sample.labels = std::move(labels);
  sample.value = value;
  family(name, help, MetricType::COUNTER).samples.push_back(std::move(sample));
}

void Scrape::gauge(std::string_view name, std::string_view help, double value, Labels labels) {
  Sample sample;
  sample.labels = std::move(labels);
  sample.value = value;
  family(name, help, MetricType::GAUGE).samples.push_back(std::move(sample));
}

void Scrape::histogram(std::string_view name, std::string_view help, const meters::HistogramSnapshot& snapshot,
                       double per_unit, Labels labels) {
  Sample sample;
  sample.labels = std::move(labels);
  sample.value = static_cast<double>(snapshot.sum) / per_unit;
  sample.upper_bounds.reserve(snapshot.upper_bounds.size());
  for (uint64_t bound : snapshot.upper_bounds) sample.upper_bounds.push_back(static_cast<double>(bound) / per_unit);
  sample.cumulative = snapshot.cumulative;
  sample.count = snapshot.count;
  family(name, help, MetricType::HISTOGRAM).samples.push_back(std::move(sample));
}

const Scrape::Family* Scrape::find(std::string_view name) const {
  for (const auto& f : families_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void Scrape::merge(Scrape&& other) {
  for (auto& theirs : other.families_) {
    auto& ours = family(theirs.name, theirs.help, theirs.type);
    for (auto& sample : theirs.samples) ours.samples.push_back(std::move(sample));
  }
}

void Registry::add(Collector collector) { collectors_.push_back(std::move(collector)); }

Scrape Registry::collect() const {
  Scrape all;
  size_t failures = 0;
  for (const auto& collector : collectors_) {
    Scrape part;
    try {
      collector(part);
    } catch (const std::exception&) {
      ++failures;  // its samples are dropped with `part`; the gauge below says so
      continue;
    }
    all.merge(std::move(part));
  }
  all.gauge("troupe_metrics_collector_failures",
            "Collectors of this node that failed during this scrape (their metrics are missing from it).",
            static_cast<double>(failures));
  return all;
}

}  // namespace troupe::runtime::metrics
