// A node's metrics as plain data: collectors (std::function) that write what they read into a
// Scrape, and the Registry that holds them and runs them at each scrape. Std-only, so what
// reads the node's parts needs no prometheus-cpp header; server.hpp serves a Registry over HTTP.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/meters.hpp"

namespace troupe::runtime::metrics {

/// Label names and values of one sample, e.g. {{"task_list", "gpu"}}.
using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType : uint8_t { COUNTER, GAUGE, HISTOGRAM };

/// What one scrape found: metric families, each a name, help, type and its samples, in the
/// order collectors first wrote them. Samples of the same name from several calls join one
/// family (a labelled metric is written one label set at a time).
class Scrape {
 public:
  struct Sample {
    Labels labels;
    double value = 0;  ///< counters and gauges
    /// Histograms: bounds and sum already in the metric's unit (see histogram()).
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;
    uint64_t count = 0;
  };
  struct Family {
    std::string name;
    std::string help;
    MetricType type = MetricType::GAUGE;
    std::vector<Sample> samples;
  };

  /// A counter: a name ending in `_total` (Prometheus' convention), a value that never falls.
  void counter(std::string_view name, std::string_view help, double value, Labels labels = {});
  void gauge(std::string_view name, std::string_view help, double value, Labels labels = {});
  /// A histogram from meters' snapshot; `per_unit` is how many of the snapshot's units make one
  /// of the metric's: 1e6 for microseconds into a `_seconds` histogram, 1 for counts. (A
  /// division, so that 100 µs is le="0.0001", not 9.999999999999999e-05.)
  void histogram(std::string_view name, std::string_view help, const meters::HistogramSnapshot& snapshot,
                 double per_unit = 1, Labels labels = {});

  const std::vector<Family>& families() const { return families_; }
  /// The family called `name`, or nullptr.
  const Family* find(std::string_view name) const;
  /// Adds `other`'s samples to this scrape's families of the same names.
  void merge(Scrape&& other);

 private:
  Family& family(std::string_view name, std::string_view help, MetricType type);
  std::vector<Family> families_;
};

/// Writes what it reads of one part of the node into the scrape. Runs on the metrics server's
/// thread, at each scrape: it must be thread-safe against the part it reads, and quick.
using Collector = std::function<void(Scrape&)>;

/// The collectors of one node. Filled once before the server starts (node_metrics.cpp is the one
/// place that does it), read-only after, so scrapes may run at once.
class Registry {
 public:
  /// Adds `collector`; scrapes run it after those added before it.
  void add(Collector collector);
  /// Runs every collector. One that throws loses its own samples only (each writes into a
  /// scrape of its own, merged after), and is counted in `troupe_metrics_collector_failures`,
  /// a gauge always present: how many collectors failed in this scrape.
  Scrape collect() const;

 private:
  std::vector<Collector> collectors_;
};

}  // namespace troupe::runtime::metrics
