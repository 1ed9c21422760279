// Running the troupe CLI from tests.
#include "test/support/cli.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <capnp/compat/json.h>
#include <capnp/message.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "test/support/child_process.hpp"
#include "test/support/cluster.hpp"

namespace troupe::test {

std::string cli_binary() {
  const char* path = std::getenv("TROUPE_CLI");
  if (path == nullptr || *path == '\0') throw std::runtime_error("TROUPE_CLI must name the troupe binary");
  return path;
}

CliRun troupe_cli(const std::vector<std::string>& args) {
  std::string command = "exec '" + cli_binary() + "'";
  for (const auto& a : args) {
    if (a.find('\'') != std::string::npos) throw std::invalid_argument("a CLI test argument holds a quote: " + a);
    command += " '" + a + "'";
  }
  ChildProcess child({"/bin/sh", "-c", command + " 2>&1"});
  CliRun run;
  run.output = read_output(child, std::chrono::seconds(60));
  if (still_running(child)) child.kill(SIGKILL);  // read_output gave up: do not hang in wait()
  const int status = child.wait();
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

bool is_json(const std::string& text) {
  capnp::JsonCodec codec;
  capnp::MallocMessageBuilder message;
  auto value = message.initRoot<capnp::JsonValue>();
  try {
    codec.decodeRaw(kj::arrayPtr(text.data(), text.size()), value);
  } catch (const kj::Exception&) {
    return false;
  }
  return true;
}

size_t line_count(const std::string& text) {
  const auto newlines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return newlines + (text.empty() || text.back() == '\n' ? 0 : 1);
}

}  // namespace troupe::test
