// The troupe command line. Thin: the command table (command_table.cpp) says what each command
// takes and runs; the command line (command_line.cpp) parses, helps and reports usage errors;
// exit codes are in exit_codes.hpp.
#include <string>
#include <vector>

#include "tools/troupe/command.hpp"
#include "tools/troupe/command_line.hpp"

int main(int argc, char** argv) {
  return troupe::cli::run_command_line(std::vector<std::string>(argv + 1, argv + argc), troupe::cli::command_table());
}
