// The ledger script, its parser, and the overlap check.
#include "test/chaos/ledger.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <tuple>

namespace troupe::chaos {

const std::string& ledger_script() {
  // Bash builtins only inside the loop (read -t on a pipe nobody writes is a sleep without a
  // fork; $EPOCHREALTIME is the clock), so a tick costs no process. A run stops by itself when
  // the ledger's directory is gone, so nothing it leaves behind outlives the test for long.
  static const std::string script = R"SH(export LC_ALL=C
L=$1 mode=$2 n=$3 below=$4 code=$5 late=$6 hb=$7 tokens=$8
p=${TROUPE_PROGRESS_FILE:-/none/none/none.progress}; p=${p%.progress}
inv=${p##*/}; inv=${inv#"$TROUPE_TASK".}; d=${p%/*}; d=${d%/*}; w=${d##*/}
me="$TROUPE_WORKFLOW_ID $TROUPE_TASK $TROUPE_ATTEMPT $inv $w $$"
dir=${L%/*}
line() { [ -d "$dir" ] || exit 0; printf '%s %s %s\n' "$1" "$me" "${EPOCHREALTIME/./}" >> "$L"; }
line start
exec 9<> <(:)
a=$TROUPE_ATTEMPT rc=0
case $mode in
  fail-before) if [ "$a" -lt "$below" ]; then n=2 rc=$code; fi ;;
  fail-from) n=2; if [ "$a" -lt "$below" ]; then rc=$code; else rc=$late; fi ;;
  hang-before) if [ "$a" -lt "$below" ]; then n=300 rc=5; [ "$hb" = 1 ] && hb=once; fi ;;
  forever) n=600 rc=5 ;;
  token) printf '%s' "$TROUPE_TASK_TOKEN" > "$tokens/.$TROUPE_WORKFLOW_ID.$TROUPE_TASK.$a" &&
         mv "$tokens/.$TROUPE_WORKFLOW_ID.$TROUPE_TASK.$a" "$tokens/$TROUPE_WORKFLOW_ID.$TROUPE_TASK.$a"; n=0 ;;
esac
[ "$hb" = once ] && printf 'silent' > "$TROUPE_PROGRESS_FILE"
i=0
while [ "$i" -lt "$n" ]; do
  read -t 0.1 -u 9 _
  i=$((i + 1))
  [ "$hb" = 1 ] && printf '%s' "$i" > "$TROUPE_PROGRESS_FILE"
  line tick
done
line end
exit $rc
)SH";
  return script;
}

std::vector<std::string> ledger_command(const std::string& ledger, const TaskBehaviour& b) {
  const char* mode = "ok";
  switch (b.mode) {
    case TaskBehaviour::OK:
      mode = "ok";
      break;
    case TaskBehaviour::FAIL_BEFORE:
      mode = "fail-before";
      break;
    case TaskBehaviour::FAIL_FROM:
      mode = "fail-from";
      break;
    case TaskBehaviour::HANG_BEFORE:
      mode = "hang-before";
      break;
    case TaskBehaviour::FOREVER:
      mode = "forever";
      break;
    case TaskBehaviour::TOKEN:
      mode = "token";
      break;
  }
  return {"bash",
          "-c",
          ledger_script(),
          "chaos-task",
          ledger,
          mode,
          std::to_string(b.ticks),
          std::to_string(b.attempt),
          std::to_string(b.code),
          std::to_string(b.late_code),
          b.heartbeat ? "1" : "0",
          b.token_dir.empty() ? "-" : b.token_dir};
}

std::vector<LedgerLine> parse_ledger(const std::string& text, size_t* malformed) {
  std::vector<LedgerLine> out;
  size_t bad = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t newline = text.find('\n', at);
    if (newline == std::string::npos) {
      ++bad;  // a line being written right now, or torn
      break;
    }
    LedgerLine line;
    line.text = text.substr(at, newline - at);
    at = newline + 1;
    std::istringstream in(line.text);
    std::string extra;
    if (!(in >> line.kind >> line.workflow >> line.task >> line.attempt >> line.invocation >>
          line.worker >> line.pid >> line.time_us) ||
        (in >> extra) || (line.kind != "start" && line.kind != "tick" && line.kind != "end")) {
      ++bad;
      continue;
    }
    out.push_back(std::move(line));
  }
  if (malformed) *malformed = bad;
  return out;
}

std::string Run::describe() const {
  std::ostringstream out;
  out << workflow << "/" << task << " attempt " << attempt << " invocation " << invocation << " on "
      << worker << " pid " << pid << " [" << start_us << ".." << last_us << "]"
      << (ended ? " ended" : " no end line");
  return out.str();
}

namespace {

using RunKey = std::tuple<std::string, std::string, std::string, int64_t>;

void add_line(std::map<RunKey, Run>& by_key, const LedgerLine& line) {
  auto [it, fresh] = by_key.try_emplace({line.workflow, line.task, line.invocation, line.pid});
  Run& run = it->second;
  if (fresh) {
    run.workflow = line.workflow;
    run.task = line.task;
    run.attempt = line.attempt;
    run.invocation = line.invocation;
    run.worker = line.worker;
    run.pid = line.pid;
    run.start_us = line.time_us;
    run.last_us = line.time_us;
    run.first_line = line.text;
    run.last_line = line.text;
  }
  if (line.kind == "start") {
    run.started = true;
    run.start_us = line.time_us;
    run.first_line = line.text;
  }
  if (line.time_us >= run.last_us) {
    run.last_us = line.time_us;
    run.last_line = line.text;
  }
  run.start_us = std::min(run.start_us, line.time_us);
  if (line.kind == "end") run.ended = true;
}

std::vector<Run> sorted_runs(const std::map<RunKey, Run>& by_key) {
  std::vector<Run> out;
  out.reserve(by_key.size());
  for (const auto& [key, run] : by_key) out.push_back(run);
  std::sort(out.begin(), out.end(), [](const Run& a, const Run& b) {
    return std::tie(a.start_us, a.workflow, a.task, a.pid) <
           std::tie(b.start_us, b.workflow, b.task, b.pid);
  });
  return out;
}

}  // namespace

std::vector<Run> runs_of(const std::vector<LedgerLine>& lines) {
  std::map<RunKey, Run> by_key;
  for (const auto& line : lines) add_line(by_key, line);
  return sorted_runs(by_key);
}

const std::vector<Run>& LedgerReader::update() {
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string fresh((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += fresh.size();
  partial_ += fresh;
  const size_t complete = partial_.rfind('\n');
  if (complete == std::string::npos) return sorted_;
  for (const auto& line : parse_ledger(partial_.substr(0, complete + 1))) add_line(runs_, line);
  partial_.erase(0, complete + 1);
  sorted_ = sorted_runs(runs_);
  return sorted_;
}

std::map<std::string, std::vector<const Run*>> runs_by_task(const std::vector<Run>& runs) {
  std::map<std::string, std::vector<const Run*>> out;
  for (const auto& run : runs) out[run.workflow + "/" + run.task].push_back(&run);
  for (auto& [key, group] : out) {
    std::stable_sort(group.begin(), group.end(),
                     [](const Run* a, const Run* b) { return a->start_us < b->start_us; });
  }
  return out;
}

std::vector<Overlap> overlaps(const std::vector<Run>& runs) {
  std::vector<Overlap> out;
  for (const auto& [key, group] : runs_by_task(runs)) {
    for (size_t i = 0; i < group.size(); ++i) {
      for (size_t j = i + 1; j < group.size(); ++j) {
        // group[j] started at or after group[i]; it overlaps if group[i] was still writing after
        // that.
        if (group[j]->start_us < group[i]->last_us) {
          out.push_back(Overlap{*group[i], *group[j], group[i]->last_us - group[j]->start_us});
        }
      }
    }
  }
  return out;
}

std::vector<Overlap> session_overlaps(const std::vector<Run>& runs,
                                      const std::map<std::string, std::set<std::string>>& sessions) {
  // The session's tasks as one: overlaps() then compares every two of their runs.
  std::vector<Run> as_one;
  for (const auto& run : runs) {
    auto session = sessions.find(run.workflow);
    if (session == sessions.end() || session->second.count(run.task) == 0) continue;
    as_one.push_back(run);
    as_one.back().task = "(session)";
  }
  auto found = overlaps(as_one);
  // Name the tasks again, from the runs' own lines.
  for (auto& o : found) {
    for (Run* r : {&o.earlier, &o.later}) {
      for (const auto& run : runs) {
        if (run.workflow == r->workflow && run.pid == r->pid && run.start_us == r->start_us) r->task = run.task;
      }
    }
  }
  return found;
}

}  // namespace troupe::chaos
