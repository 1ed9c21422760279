#include "actors/system/probe_text.hpp"

#include <cstdio>
#include <ctime>

namespace troupe::actors {

std::string probe_time(int64_t us) {
  if (us == 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(us / 1000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>((us / 1000) % 1000));
  return buf;
}

std::string waiting_for_durability(size_t events) {
  if (events == 0) return {};
  return std::to_string(events) + (events == 1 ? " event" : " events") + " to be written to the history store";
}

}  // namespace troupe::actors
