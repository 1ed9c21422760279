// next_incarnation: a counter in a file, advanced durably.
#include "runtime/incarnation.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace troupe::runtime {
namespace {

Error unavailable(const std::string& what, const std::string& path) {
  return fail(Errc::UNAVAILABLE, "cannot " + what + " " + path + ": " + std::strerror(errno));
}

/// Writes `text` to `path` so that after a crash the file holds either its old content or
/// `text`, never a part.
Result<void> write_durably(const std::string& dir, const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return unavailable("create", temporary);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (!written) return unavailable("write", temporary);
  if (::rename(temporary.c_str(), path.c_str()) != 0) return unavailable("replace", path);
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return unavailable("open", dir);
  const bool synced = ::fsync(dir_fd) == 0;
  ::close(dir_fd);
  if (!synced) return unavailable("sync", dir);
  return ok();
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
