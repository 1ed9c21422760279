// next_incarnation: a counter in a file, advanced durably.
#include "runtime/incarnation.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/identity/durable_file.hpp"

namespace troupe::runtime {
namespace {

Error unavailable(const std::string& what, const std::string& path) {
  return fail(Errc::UNAVAILABLE, "cannot " + what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Result<uint64_t> next_incarnation(const std::string& data_dir) {
  const std::string path = data_dir + "/incarnation";
  uint64_t last = 0;
  std::ifstream in(path);
  if (in) {
    std::stringstream content;
    content << in.rdbuf();
    std::string text = content.str();
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), last);
    if (error != std::errc() || end != text.data() + text.size()) {
      return fail(Errc::CORRUPTION, path + " should hold this scheduler's incarnation number, and holds '" + text +
                                        "'; if the file was damaged, write a number larger than any this data "
                                        "directory has used (e.g. the seconds since 1970)");
    }
  } else if (errno != ENOENT) {
    return unavailable("read", path);
  }
  const uint64_t next = last + 1;
  if (auto written = write_durably(data_dir, path, std::to_string(next) + "\n"); !written) return written.error();
  return next;
}

}  // namespace troupe::runtime
