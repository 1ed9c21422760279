// http_get over a blocking socket with SO_RCVTIMEO/SO_SNDTIMEO, and promtool through sh.
#include "test/support/scrape.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "test/support/temp_dir.hpp"

namespace troupe::test {
namespace {

/// Closes the socket however the function returns.
struct Socket {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

HttpResponse http_get(uint16_t port, const std::string& path, std::chrono::milliseconds timeout) {
  HttpResponse out;
  Socket s;
  if (s.fd < 0) return out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(s.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return out;
  // HTTP/1.0: the server closes the connection after its answer, which ends the read.
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n";
  if (::send(s.fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) return out;
  std::string all;
  char buffer[16384];
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline) return out;
    const ssize_t n = ::recv(s.fd, buffer, sizeof buffer, 0);
    if (n < 0) return out;  // timed out or failed
    if (n == 0) break;
    all.append(buffer, static_cast<size_t>(n));
  }
  const size_t end = all.find("\r\n\r\n");
  if (end == std::string::npos || !all.starts_with("HTTP/")) return out;
  out.headers = all.substr(0, end);
  out.body = all.substr(end + 4);
  const size_t space = out.headers.find(' ');
  out.status = space == std::string::npos ? 0 : std::atoi(out.headers.c_str() + space + 1);
  return out;
}

std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > series.size() && line.starts_with(series) && line[series.size()] == ' ') {
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
    }
  }
  return std::nullopt;
}

PromtoolVerdict promtool_check(const std::string& text) {
  TempDir dir;
  const std::string input = dir / "metrics.txt";
  const std::string output = dir / "promtool.out";
  std::ofstream(input) << text;
  const std::string command = "promtool check metrics < '" + input + "' > '" + output + "' 2>&1";
  const int status = std::system(command.c_str());
  PromtoolVerdict verdict;
  std::ifstream in(output);
  verdict.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (status == -1 || !WIFEXITED(status)) return verdict;
  verdict.exit_code = WEXITSTATUS(status);
  // sh's "command not found"
  if (verdict.exit_code == 127) verdict.exit_code = -1;
  return verdict;
}

}  // namespace troupe::test
