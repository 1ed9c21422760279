// A process that owns a ProcessSupervisor, for tests that kill or freeze the owner.
//   supervisor_child RECORD_DIR LOG_DIR LEASE_MS MARK SCRIPT
// RECORD_DIR "-": no records; LEASE_MS "-": no lease, else the lease ends that many milliseconds
// after the start. Prints "ready KILLED" (what start() killed of a previous instance), runs
// `sh -c SCRIPT` with TROUPE_TEST_MARK=MARK and prints "spawned" (or "error MESSAGE"), then
// "exit PID DESCRIPTION" when it ends. At end of stdin it destroys the supervisor and exits.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>

#include "runtime/process/process_supervisor.hpp"

using namespace troupe;
using namespace troupe::runtime;

namespace {

std::mutex out_mutex;

void say(const std::string& line) {
  std::lock_guard lock(out_mutex);
  std::cout << line << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s RECORD_DIR|- LOG_DIR LEASE_MS|- MARK SCRIPT\n", argv[0]);
    return 2;
  }
  const std::string record_dir = argv[1], log_dir = argv[2], lease = argv[3], mark = argv[4], script = argv[5];
  SupervisorOptions options;
  if (record_dir != "-") options.record_dir = record_dir;
  auto supervisor = ProcessSupervisor::start(options);
  if (!supervisor) {
    std::fprintf(stderr, "%s\n", supervisor.error().to_string().c_str());
    return 1;
  }
  say("ready " + std::to_string((*supervisor)->leftovers_killed()));
  if (lease != "-") {
    (*supervisor)->extend_lease(std::chrono::steady_clock::now() + std::chrono::milliseconds(std::stol(lease)));
  }
  ProcessSpec spec;
  spec.argv = {"sh", "-c", script};
  spec.env = {"TROUPE_TEST_MARK=" + mark};
  spec.log_path = log_dir + "/task.log";
  auto id = (*supervisor)->spawn(spec, [](ProcessExit exit) {
    say("exit " + std::to_string(exit.pid) + " " + exit.describe());
  });
  say(id ? "spawned" : "error " + id.error().message);
  for (std::string line; std::getline(std::cin, line);) {
    // nop: runs until stdin closes
  }
  return 0;
}
