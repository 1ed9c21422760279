// Scraping a metrics endpoint as Prometheus does: a plain HTTP/1.0 GET on 127.0.0.1 with a
// deadline, the sample values read back from the text, and promtool's verdict on the text.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace troupe::test {

struct HttpResponse {
  int status = 0;       ///< 0: no answer (connection refused, timed out, not HTTP)
  std::string headers;  ///< the status line and headers, as sent
  std::string body;
};

/// GET `path` from 127.0.0.1:`port`, waiting at most `timeout` for the whole answer.
HttpResponse http_get(uint16_t port, const std::string& path,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// The value of the sample `series` (the name with its labels as the text has them, e.g.
/// `troupe_tasks_ended_total{outcome="SUCCESS"}`) in exposition `text`; empty if absent.
std::optional<double> sample(const std::string& text, const std::string& series);

/// What `promtool check metrics` says of `text` (given on its stdin), and its exit code
/// (-1: promtool could not be run; tools/setup installs it with the `prometheus` package).
struct PromtoolVerdict {
  int exit_code = -1;
  std::string output;
};
PromtoolVerdict promtool_check(const std::string& text);

}  // namespace troupe::test
