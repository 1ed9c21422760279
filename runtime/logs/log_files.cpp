// Invocation logs on a worker's disk: their names, and reads of a range by invocation id.
#include "runtime/logs/log_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "actors/invocation_id.hpp"

namespace troupe::runtime {
namespace {

/// Closes a file descriptor when it goes.
struct FileCloser {
  int fd;
  ~FileCloser() {
    if (fd >= 0) ::close(fd);
  }
};

/// Whether `path` lies inside `dir`, both with their symbolic links resolved.
bool lies_inside(const std::filesystem::path& dir, const std::filesystem::path& path) {
  std::error_code ec;
  const auto root = std::filesystem::weakly_canonical(dir, ec);
  if (ec) return false;
  const auto file = std::filesystem::weakly_canonical(path, ec);
  if (ec) return false;
  auto [root_end, file_at] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  // Inside means below: every component of the root matched and one more follows.
  return root_end == root.end() && file_at != file.end();
}

}  // namespace

std::string file_name_tag(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3;
  }
  char tag[17];
  std::snprintf(tag, sizeof tag, "%016llx", static_cast<unsigned long long>(hash));
  return tag;
}

std::string safe_file_name(std::string_view part, size_t max_bytes) {
  std::string out;
  out.reserve(part.size());
  for (char c : part) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                       c == '_' || c == '.';
    out += plain ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  if (out.size() > max_bytes) {
    // Shortened names keep their start, which a person reads, and the whole part's hash.
    out.resize(std::max<size_t>(max_bytes, 32) - 17);
    out += "~" + file_name_tag(part);
  }
  return out;
}

std::string invocation_log_path(std::string_view log_dir, std::string_view workflow_id, std::string_view task_name,
                                std::string_view invocation_id) {
  // The id ends in ATTEMPT.DISPATCH after its last '/'.
  const auto slash = invocation_id.rfind('/');
  const std::string_view suffix = slash == std::string_view::npos ? invocation_id : invocation_id.substr(slash + 1);
  const std::string attempt = "." + safe_file_name(suffix, 64);
  // TASK.ATTEMPT.DISPATCH, and the names made beside the log from it, stay within NAME_MAX.
  const size_t task_bytes = max_file_name_bytes - log_stem_growth_bytes - attempt.size();
  std::string path(log_dir);
  path += "/" + safe_file_name(workflow_id) + "/" + safe_file_name(task_name, task_bytes) + attempt + ".log";
  return path;
}

Result<std::string> invocation_log_path(std::string_view log_dir, std::string_view invocation_id) {
  auto parts = actors::parse_invocation_id(invocation_id);
  const auto suffix = invocation_id.substr(invocation_id.rfind('/') + 1);
  if (!parts || suffix.empty()) {
    return fail(Errc::INVALID_ARGUMENT, "'" + std::string(invocation_id) +
                                            "' is not an invocation id (WORKFLOW/TASK/ATTEMPT.DISPATCH)");
  }
  return invocation_log_path(log_dir, parts->workflow_id, parts->task_name, invocation_id);
}

Result<LogRange> read_invocation_log(const std::string& log_dir, std::string_view invocation_id, uint64_t offset,
                                     size_t max_bytes) {
  auto path = invocation_log_path(log_dir, invocation_id);
  if (!path) return path.error();
  if (!lies_inside(log_dir, *path)) {
    return fail(Errc::INVALID_ARGUMENT, "the log of '" + std::string(invocation_id) +
                                            "' would lie outside this worker's log_dir (a symbolic link on the way "
                                            "to " + *path + "): refused");
  }
  // O_NOFOLLOW: the file itself may not be a link either, whatever changed since the check.
  FileCloser file{::open(path->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
  if (file.fd < 0) {
    const int error = errno;
    if (error == ENOENT) return fail(Errc::NOT_FOUND, "no log of '" + std::string(invocation_id) + "' (" + *path + ")");
    if (error == ELOOP) {
      return fail(Errc::INVALID_ARGUMENT, "the log of '" + std::string(invocation_id) + "' is a symbolic link: refused");
    }
    return fail(Errc::UNAVAILABLE, "cannot open " + *path + ": " + std::strerror(error));
  }
  struct stat status {};
  if (::fstat(file.fd, &status) != 0) return fail(Errc::UNAVAILABLE, "cannot stat " + *path + ": " + std::strerror(errno));
  if (!S_ISREG(status.st_mode)) return fail(Errc::INVALID_ARGUMENT, *path + " is not a regular file: refused");
  LogRange range;
  range.size = static_cast<uint64_t>(status.st_size);
  range.next_offset = offset;
  if (offset >= range.size) return range;
  const size_t want = static_cast<size_t>(
      std::min<uint64_t>(range.size - offset, std::min(max_bytes, max_log_read_bytes)));
  range.data.resize(want);
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(file.fd, range.data.data() + got, want - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::UNAVAILABLE, "cannot read " + *path + ": " + std::strerror(errno));
    if (n == 0) break;  // truncated meanwhile
    got += static_cast<size_t>(n);
  }
  range.data.resize(got);
  range.next_offset = offset + got;
  return range;
}

}  // namespace troupe::runtime
