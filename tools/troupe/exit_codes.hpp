// How a troupe command ends: its exit code and the line it prints on stderr. The codes are
// part of the CLI's contract (scripts test them), documented in `troupe help` and the README.
#pragma once

#include <string>
#include <vector>

#include "schema/result.hpp"
#include "tools/troupe/args.hpp"

namespace troupe::cli {

inline constexpr int exit_ok = 0;
/// The workflow failed or was stopped, or the operation failed.
inline constexpr int exit_failed = 1;
/// A usage error (an unknown option, a missing argument) or bad input (a definition's problems,
/// malformed JSON, an unknown workflow id, an action the workflow's state does not allow).
inline constexpr int exit_usage = 2;
/// The scheduler cannot be reached; for `troupe dev`, its node could not start (run_node's 3).
inline constexpr int exit_unreachable = 3;
/// `troupe dev` only: the history store failed a write (a full disk) and the node stopped
/// (run_node's 4). No client command exits with it.
inline constexpr int exit_store_failed = 4;
/// A wait ran out (--timeout) before the workflow ended; it goes on running.
inline constexpr int exit_timed_out = 5;

/// An exit code and what it means for one command, for its help.
struct ExitStatus {
  int code;
  std::string meaning;
};

/// Every exit code with its general meaning: the table of `troupe help` and the README.
std::vector<ExitStatus> exit_code_table();

/// The exit code for an error a command or the scheduler returned.
int exit_code_of(const Error& error);

/// Prints "troupe: MESSAGE" on stderr and returns `code`.
int complain(int code, const std::string& message);

/// complain(exit_code_of(error), error.message).
int failed(const Error& error);

/// A usage error of `args`' command: "troupe: CMD: MESSAGE" and "see 'troupe CMD --help'" on
/// stderr; returns exit_usage.
int usage_error(const Args& args, const std::string& message);
int usage_error(const std::string& command, const std::string& message);

}  // namespace troupe::cli
