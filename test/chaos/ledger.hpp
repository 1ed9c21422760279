// The ledger: one file every shell task of a chaos run appends to, so the test sees every real
// run of a task, whichever worker ran it and whatever the scheduler recorded.
//
// A run appends `start`, then a `tick` every Timings::tick while it runs, then `end` when it
// exits of its own accord. A run killed with its worker or by a cancel leaves no `end`, so its
// interval is [start, last line]: it certainly ran then, and died before its next tick was due.
// Each line is one O_APPEND write, so lines never interleave:
//
//   KIND WORKFLOW TASK ATTEMPT INVOCATION WORKER PID TIME_US
//
// INVOCATION is the invocation id's last part (ATTEMPT.DISPATCH, from $TROUPE_PROGRESS_FILE's
// name), WORKER the log_dir's last part (the worker's name), PID the task's shell, TIME_US
// microseconds since the Unix epoch ($EPOCHREALTIME).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace troupe::chaos {

/// What a ledger task does, given as the script's arguments.
struct TaskBehaviour {
  enum Mode {
    OK,           ///< `ticks` ticks, then exit 0
    FAIL_BEFORE,  ///< attempts below `attempt` exit `code` after a few ticks; later ones are OK
    FAIL_FROM,    ///< attempts below `attempt` exit `code`; later ones exit `late_code`
    HANG_BEFORE,  ///< attempts below `attempt` tick (without progress) until killed, or exit 5
                  ///< after 30 s (a timeout that never fired); later ones are OK
    FOREVER,      ///< ticks until killed, or exit 5 after 60 s (a stop or timeout that never came)
    TOKEN,        ///< hands $TROUPE_TASK_TOKEN to the test through `token_dir`, then exit 0
  };
  Mode mode = OK;
  int ticks = 5;
  int attempt = 0;
  int code = 0;
  int late_code = 0;
  bool heartbeat = false;  ///< write progress at every tick (a hanging attempt writes it once)
  std::string token_dir;
};

/// The bash script every ledger task runs; its arguments come from ledger_command().
const std::string& ledger_script();

/// The task's `command` (argv) for `behaviour`, appending to `ledger`.
std::vector<std::string> ledger_command(const std::string& ledger, const TaskBehaviour& behaviour);

/// One line of the ledger.
struct LedgerLine {
  std::string kind;  ///< start, tick or end
  std::string workflow, task;
  uint32_t attempt = 0;
  std::string invocation, worker;
  int64_t pid = 0;
  int64_t time_us = 0;
  std::string text;  ///< the line as written
};

/// The lines of a ledger's text. Lines that do not parse (a torn last line) are skipped and
/// counted in `*malformed` when given.
std::vector<LedgerLine> parse_ledger(const std::string& text, size_t* malformed = nullptr);

/// One real run of a task: the lines of one shell process.
struct Run {
  std::string workflow, task;
  uint32_t attempt = 0;
  std::string invocation, worker;
  int64_t pid = 0;
  int64_t start_us = 0;  ///< its start line (its first line if the start is missing)
  int64_t last_us = 0;   ///< its last line of any kind
  bool started = false;  ///< it has a start line
  bool ended = false;    ///< it has an end line: it exited of its own accord
  std::string first_line, last_line;

  /// "WORKFLOW/TASK inv INVOCATION on WORKER pid PID [start..last]".
  std::string describe() const;
};

/// The runs in `lines`, one per (workflow, task, invocation, pid), ordered by start.
std::vector<Run> runs_of(const std::vector<LedgerLine>& lines);

/// A ledger read as it grows: each update() parses only what was appended since the last.
class LedgerReader {
 public:
  explicit LedgerReader(std::string path) : path_(std::move(path)) {}
  /// Reads what was appended (whole lines only); the runs so far, ordered by start.
  const std::vector<Run>& update();

 private:
  using Key = std::tuple<std::string, std::string, std::string, int64_t>;
  std::string path_;
  uint64_t offset_ = 0;
  std::string partial_;
  std::map<Key, Run> runs_;
  std::vector<Run> sorted_;
};

/// Two runs of one (workflow, task) at once: `later` started before `earlier`'s last line.
/// Runs overlapping by less than a tick cannot be told apart from ones that did not overlap;
/// anything more is reported, with no further tolerance.
struct Overlap {
  Run earlier, later;
  int64_t overlap_us = 0;  ///< earlier.last_us - later.start_us
};

/// Every overlapping pair of runs of the same (workflow, task).
std::vector<Overlap> overlaps(const std::vector<Run>& runs);

/// Every overlapping pair of runs of the tasks of one session: a session's worker runs its
/// actions one at a time, on one worker, so no two of its tasks' runs may be live at once,
/// whichever workers ran them. `sessions` maps a workflow id to the tasks of its session.
std::vector<Overlap> session_overlaps(const std::vector<Run>& runs,
                                      const std::map<std::string, std::set<std::string>>& sessions);

/// Runs grouped by "WORKFLOW/TASK", each group ordered by start.
std::map<std::string, std::vector<const Run*>> runs_by_task(const std::vector<Run>& runs);

}  // namespace troupe::chaos
