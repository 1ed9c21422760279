// load_or_create_worker_id: read the id file, or make the id from the kernel's random source.
#include "runtime/identity/worker_id.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "runtime/identity/durable_file.hpp"

namespace troupe::runtime {
namespace {

constexpr std::string_view prefix = "wkr-";
constexpr size_t hex_digits = 16;
/// Larger files are not worker ids; reading stops there.
constexpr size_t max_file_bytes = 4096;

Error unavailable(const std::string& what, const std::string& path, int error) {
  return fail(Errc::UNAVAILABLE, "cannot " + what + " " + path + ": " + std::strerror(error) +
                                     "; check the directory's permissions and free space (the worker keeps its "
                                     "identity there)");
}

/// A new worker id: 64 bits from getrandom(2), which blocks only until the kernel's pool is
/// first seeded.
Result<std::string> new_worker_id() {
  unsigned char raw[hex_digits / 2];
  size_t got = 0;
  while (got < sizeof raw) {
    const ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Errc::UNAVAILABLE, std::string("no random bytes for a new worker id: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string id(prefix);
  for (unsigned char c : raw) {
    id += hex[c >> 4];
    id += hex[c & 15];
  }
  return id;
}

/// `text` as a message may quote it: at most 40 characters, anything unprintable as '?'.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > 40) out += "...";
  return out;
}

/// The content of `path`; NOT_FOUND when it does not exist.
Result<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return fail(Errc::NOT_FOUND, path + " does not exist");
    return unavailable("read", path, errno);
  }
  std::string text;
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return unavailable("read", path, error);
    }
    if (n == 0 || text.size() >= max_file_bytes) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace

bool is_worker_id(std::string_view text) {
  if (text.size() != prefix.size() + hex_digits || text.substr(0, prefix.size()) != prefix) return false;
  for (char c : text.substr(prefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::string> load_or_create_worker_id(const std::string& dir) {
  const std::string path = dir + "/" + worker_id_file;
  auto existing = read_file(path);
  if (existing) {
    std::string text = std::move(*existing);
    if (!text.empty() && text.back() == '\n') text.pop_back();  // as written, and as an editor leaves it
    if (is_worker_id(text)) return text;
    return fail(Errc::CORRUPTION,
                path + " should hold this worker's id (\"wkr-\" and 16 hex digits) and holds '" + shown(text) +
                    "'; write the worker's id back into it (the scheduler's record of this worker holds the id "
                    "it presented last), or delete the file to start this node as a new worker with a new id");
  }
  if (existing.error().code != Errc::NOT_FOUND) return existing.error();

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return unavailable("create the directory", dir, ec.value());
  auto id = new_worker_id();
  if (!id) return id.error();
  if (auto written = write_durably(dir, path, *id + "\n", 0600); !written) return written.error();
  return id;
}

}  // namespace troupe::runtime
