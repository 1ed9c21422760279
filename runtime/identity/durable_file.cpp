// write_durably: temporary file, fsync, rename, fsync of the directory.
#include "runtime/identity/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace troupe::runtime {
namespace {

Error unavailable(const std::string& what, const std::string& path) {
  return fail(Errc::UNAVAILABLE, "cannot " + what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Result<void> write_durably(const std::string& dir, const std::string& path, const std::string& text, mode_t mode) {
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
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

}  // namespace troupe::runtime
