// Exit codes and error lines.
#include "tools/troupe/exit_codes.hpp"

#include <iostream>

namespace troupe::cli {

std::vector<ExitStatus> exit_code_table() {
  return {{exit_ok, "success"},
          {exit_failed, "the workflow failed or was stopped, or the operation failed"},
          {exit_usage, "a usage or input error: an unknown option, a bad definition or JSON, an unknown workflow"},
          {exit_unreachable, "the scheduler cannot be reached (troupe dev: its node could not start)"},
          {exit_store_failed, "troupe dev only: its history store failed a write (a full disk) and it stopped"},
          {exit_timed_out, "timed out waiting (--timeout): the workflow has not ended and goes on"}};
}

int exit_code_of(const Error& error) {
  switch (error.code) {
    case Errc::UNAVAILABLE: return exit_unreachable;
    case Errc::TIMED_OUT: return exit_timed_out;
    case Errc::INVALID_ARGUMENT:
    case Errc::NOT_FOUND:
    case Errc::ALREADY_EXISTS:
    case Errc::NOT_ALLOWED_IN_STATE: return exit_usage;
    default: return exit_failed;
  }
}

int complain(int code, const std::string& message) {
  std::cerr << "troupe: " << message << "\n";
  return code;
}

int failed(const Error& error) { return complain(exit_code_of(error), error.message); }

int usage_error(const std::string& command, const std::string& message) {
  std::cerr << "troupe: " << (command.empty() ? "" : command + ": ") << message << "\n"
            << "see 'troupe " << (command.empty() ? "help" : command + " --help") << "'\n";
  return exit_usage;
}

int usage_error(const Args& args, const std::string& message) { return usage_error(args.command(), message); }

}  // namespace troupe::cli
