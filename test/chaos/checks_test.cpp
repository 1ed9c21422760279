// The chaos checks themselves: a check that cannot fail proves nothing, so each is shown a
// planted violation (and a clean case) here, without any process.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "schema/definition.hpp"
#include "test/chaos/history_check.hpp"
#include "test/chaos/ledger.hpp"
#include "test/chaos/scenario.hpp"
#include "test/chaos/workload.hpp"
#include "test/support/temp_dir.hpp"

using namespace troupe::chaos;

namespace {

std::string line(const std::string& kind, const std::string& wf, const std::string& task,
                 int attempt, const std::string& inv, const std::string& worker, int pid,
                 int64_t t) {
  std::ostringstream out;
  out << kind << " " << wf << " " << task << " " << attempt << " " << inv << " " << worker << " "
      << pid << " " << t << "\n";
  return out.str();
}

/// A run of `ticks` lines 100 ms apart from `start`, with an end line when `ends`.
std::string run_lines(const std::string& wf, const std::string& task, int attempt,
                      const std::string& inv, const std::string& worker, int pid, int64_t start,
                      int ticks, bool ends) {
  std::string out = line("start", wf, task, attempt, inv, worker, pid, start);
  for (int i = 1; i <= ticks; ++i)
    out += line("tick", wf, task, attempt, inv, worker, pid, start + i * 100'000);
  if (ends) out += line("end", wf, task, attempt, inv, worker, pid, start + ticks * 100'000 + 10);
  return out;
}

struct History {
  std::vector<Event> events;
  int64_t t = 1'000'000;
  History& add(const std::string& kind, const std::string& actor = "", uint32_t attempt = 0,
               const std::string& invocation = "", const std::string& reason = "",
               const std::string& worker = "") {
    Event e;
    e.sequence = events.size() + 1;
    e.timestamp_us = t += 1000;
    e.actor_kind = actor.empty() ? "workflow" : "task";
    e.actor_id = actor.empty() ? "wf" : actor;
    e.attempt = attempt;
    e.kind = kind;
    e.invocation = invocation;
    e.reason = reason;
    e.worker = worker;
    if (kind == "taskRetryScheduled") e.next_attempt = attempt + 1;
    events.push_back(e);
    return *this;
  }
};

/// A task that failed over on its first attempt and succeeded on its second.
History failed_over_then_succeeded() {
  History h;
  h.add("workflowSubmitted").add("workflowStarted").add("taskScheduled", "t");
  h.add("taskDispatched", "t", 1, "wf/t/1.1", "", "w1").add("taskRunning", "t", 1, "wf/t/1.1");
  h.add("taskFailover", "t", 1, "wf/t/1.1", "worker w1 was lost", "w1")
      .add("taskRetryScheduled", "t", 1, "", "Failover");
  h.add("taskDispatched", "t", 2, "wf/t/2.2", "", "w2").add("taskRunning", "t", 2, "wf/t/2.2");
  h.add("taskSucceeded", "t", 2, "wf/t/2.2")
      .add("workflowTaskFinished")
      .add("workflowSucceeded")
      .add("workflowFinalized");
  return h;
}

bool mentions(const std::vector<HistoryProblem>& problems, const std::string& part) {
  for (const auto& p : problems) {
    if (p.text.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string first(const std::vector<HistoryProblem>& problems) {
  return problems.empty() ? "" : problems.front().text;
}

}  // namespace

TEST_SUITE("chaos.checks") {
  TEST_CASE("the ledger: runs are told apart by process, and two at once of one task overlap") {
    std::string text = run_lines("wf", "t", 1, "1.1", "w1", 100, 10'000'000, 20,
                                 false);  // killed, last line at +2 s
    text += run_lines("wf", "t", 2, "2.2", "w2", 200, 11'500'000, 5, true);  // starts at +1.5 s
    text +=
        run_lines("wf", "u", 1, "1.3", "w1", 300, 10'000'000, 5, true);  // another task: no overlap
    text += "tick wf t 2 2.2 w2 200";                                    // torn last line
    size_t malformed = 0;
    const auto lines = parse_ledger(text, &malformed);
    CHECK(malformed == 1);
    const auto runs = runs_of(lines);
    REQUIRE(runs.size() == 3);
    const auto found = overlaps(runs);
    REQUIRE(found.size() == 1);
    CHECK(found[0].earlier.pid == 100);
    CHECK_FALSE(found[0].earlier.ended);
    CHECK(found[0].later.pid == 200);
    CHECK(found[0].overlap_us == 500'000);

    SUBCASE("two tasks of one session running at once overlap, on one worker or two") {
      std::string session = run_lines("wf", "a", 1, "1.1", "w1", 100, 10'000'000, 20, false);  // to +2 s
      session += run_lines("wf", "b", 1, "1.2", "w2", 200, 11'000'000, 5, true);  // another worker, +1 s
      session += run_lines("wf", "c", 1, "1.3", "w1", 300, 13'000'000, 5, true);  // after both: fine
      session += run_lines("other", "a", 1, "1.4", "w2", 400, 10'500'000, 5, true);  // another workflow
      const auto found_in_session = session_overlaps(runs_of(parse_ledger(session)), {{"wf", {"a", "b", "c"}}});
      REQUIRE(found_in_session.size() == 1);
      CHECK(found_in_session[0].earlier.task == "a");
      CHECK(found_in_session[0].later.task == "b");
      CHECK(found_in_session[0].overlap_us == 1'000'000);
      CHECK(session_overlaps(runs_of(parse_ledger(session)), {{"wf", {"a", "c"}}}).empty());
    }
    SUBCASE("a run that starts after the other's last line does not overlap") {
      std::string apart = run_lines("wf", "t", 1, "1.1", "w1", 100, 10'000'000, 20, false);
      apart += run_lines("wf", "t", 2, "2.2", "w2", 200, 12'000'001, 5, true);
      CHECK(overlaps(runs_of(parse_ledger(apart))).empty());
    }
    SUBCASE("read as it grows, the ledger gives the same runs") {
      troupe::test::TempDir dir;
      LedgerReader reader(dir / "ledger");
      std::ofstream out(dir / "ledger", std::ios::binary);
      const size_t cut = text.size() / 2 + 3;  // mid-line
      out << text.substr(0, cut) << std::flush;
      CHECK_FALSE(reader.update().empty());
      out << text.substr(cut) << std::flush;
      const auto& grown = reader.update();
      REQUIRE(grown.size() == runs.size());
      for (size_t i = 0; i < runs.size(); ++i) {
        CHECK(grown[i].pid == runs[i].pid);
        CHECK(grown[i].last_us == runs[i].last_us);
        CHECK(grown[i].ended == runs[i].ended);
      }
    }
    SUBCASE("one invocation in two processes is two runs") {
      std::string twice = run_lines("wf", "t", 1, "1.1", "w1", 100, 10'000'000, 3, false);
      twice += run_lines("wf", "t", 1, "1.1", "w1", 101, 10'100'000, 3, true);
      const auto both = runs_of(parse_ledger(twice));
      CHECK(both.size() == 2);
      CHECK(overlaps(both).size() == 1);
    }
  }

  TEST_CASE("the ledger script records real runs, ticks while it runs, and hands over tokens") {
    troupe::test::TempDir dir;
    const std::string ledger = dir / "ledger";
    std::filesystem::create_directories(dir / "logs/w7/wf-1");
    std::filesystem::create_directories(dir / "tokens");
    auto run = [&](const TaskBehaviour& b, int attempt) {
      std::vector<std::string> argv = ledger_command(ledger, b);
      const std::string env =
          "TROUPE_WORKFLOW_ID=wf-1 TROUPE_TASK=t TROUPE_ATTEMPT=" + std::to_string(attempt) +
          " TROUPE_TASK_TOKEN=tok-" + std::to_string(attempt) +
          " TROUPE_PROGRESS_FILE=" + dir.path() + "/logs/w7/wf-1/t." + std::to_string(attempt) +
          ".9.progress";
      std::string command = "env " + env;
      for (const auto& a : argv) {
        std::string quoted = "'";
        for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
        command += " " + quoted + "'";
      }
      const int status = std::system(command.c_str());
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    TaskBehaviour fails;
    fails.mode = TaskBehaviour::FAIL_BEFORE;
    fails.attempt = 2;
    fails.code = 3;
    fails.ticks = 4;
    fails.heartbeat = true;
    CHECK(run(fails, 1) == 3);
    CHECK(run(fails, 2) == 0);
    TaskBehaviour token;
    token.mode = TaskBehaviour::TOKEN;
    token.token_dir = dir / "tokens";
    CHECK(run(token, 3) == 0);

    std::ifstream in(ledger);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t malformed = 0;
    const auto runs = runs_of(parse_ledger(text, &malformed));
    CHECK(malformed == 0);
    REQUIRE(runs.size() == 3);
    CHECK(runs[0].invocation == "1.9");
    CHECK(runs[0].worker == "w7");
    CHECK(runs[0].ended);
    CHECK(runs[1].attempt == 2);
    CHECK(runs[1].last_us - runs[1].start_us >= 300'000);  // four ticks of about 100 ms
    CHECK(overlaps(runs).empty());
    std::ifstream progress(dir.path() + "/logs/w7/wf-1/t.2.9.progress");
    std::string last;
    progress >> last;
    CHECK(last == "4");
    std::ifstream handed(dir.path() + "/tokens/wf-1.t.3");
    std::string tok;
    handed >> tok;
    CHECK(tok == "tok-3");
  }

  TEST_CASE("a history that failed over and succeeded is clean, and its re-run has a reason") {
    auto h = failed_over_then_succeeded();
    const auto a = analyse_history("wf", h.events);
    CHECK_MESSAGE(a.problems.empty(), first(a.problems));
    CHECK(a.final_state == "SUCCESS");
    CHECK(a.closed_us != 0);
    REQUIRE(a.invocations.count("wf/t/2.2"));
    CHECK(a.invocations.at("wf/t/2.2").rerun);
    CHECK(a.invocations.at("wf/t/2.2").rerun_reason == "Failover");
    CHECK(a.invocations.at("wf/t/1.1").failed_over);
    CHECK(a.invocations.at("wf/t/1.1").ended_by == "taskRetryScheduled");
  }

  TEST_CASE("history violations are each reported") {
    SUBCASE("a gap in the sequence") {
      auto h = failed_over_then_succeeded();
      h.events.erase(h.events.begin() + 4);
      CHECK(mentions(analyse_history("wf", h.events).problems, "(a gap)"));
    }
    SUBCASE("two completions of one invocation") {
      auto h = failed_over_then_succeeded();
      h.events.insert(h.events.begin() + 7,
                      h.events[6]);  // the lost invocation reports success late
      h.events[7].kind = "taskSucceeded";
      h.events[7].invocation = "wf/t/1.1";
      for (size_t i = 0; i < h.events.size(); ++i) h.events[i].sequence = i + 1;
      CHECK(mentions(analyse_history("wf", h.events).problems,
                     "a second completion of invocation wf/t/1.1"));
    }
    SUBCASE("a re-run without a recorded reason") {
      History h;
      h.add("workflowSubmitted")
          .add("taskDispatched", "t", 1, "wf/t/1.1")
          .add("taskSucceeded", "t", 1, "wf/t/1.1");
      h.add("taskDispatched", "t", 1, "wf/t/1.2");
      CHECK(mentions(analyse_history("wf", h.events).problems, "with no recorded reason"));
    }
    SUBCASE("a dispatch while the previous invocation had not ended") {
      History h;
      h.add("workflowSubmitted")
          .add("taskDispatched", "t", 1, "wf/t/1.1")
          .add("taskRunning", "t", 1, "wf/t/1.1");
      h.add("taskDispatched", "t", 1, "wf/t/1.2");
      CHECK(mentions(analyse_history("wf", h.events).problems, "had not ended"));
    }
    SUBCASE("a report on an invocation that was never dispatched") {
      History h;
      h.add("workflowSubmitted").add("taskRunning", "t", 1, "wf/t/1.1");
      CHECK(mentions(analyse_history("wf", h.events).problems, "never dispatched"));
    }
    SUBCASE("events after the workflow was finalized, and an invocation left open") {
      History h;
      h.add("workflowSubmitted").add("taskDispatched", "t", 1, "wf/t/1.1").add("workflowFinalized");
      h.add("taskRunning", "t", 1, "wf/t/1.1");
      const auto problems = analyse_history("wf", h.events).problems;
      CHECK(mentions(problems, "after workflowFinalized"));
      CHECK(mentions(problems, "had not ended"));
    }
    SUBCASE("an invocation that never started is dispatched again under the same attempt") {
      History h;
      h.add("workflowSubmitted").add("taskDispatched", "t", 1, "wf/t/1.1", "", "w1");
      h.add("taskFailover", "t", 1, "wf/t/1.1", "never reached the worker", "w1");
      h.events.back().failover_kind = "neverStarted";
      SUBCASE("with the failover's retry decision naming the same attempt") {
        h.add("taskRetryScheduled", "t", 1, "", "Failover");
        h.events.back().next_attempt = 1;
      }
      SUBCASE("dispatched again at once") {}
      h.add("taskDispatched", "t", 1, "wf/t/1.2", "", "w2")
          .add("taskSucceeded", "t", 1, "wf/t/1.2");
      h.add("workflowSucceeded").add("workflowFinalized");
      auto a = analyse_history("wf", h.events);
      CHECK_MESSAGE(a.problems.empty(), first(a.problems));
      CHECK(a.invocations.at("wf/t/1.2").rerun_reason == never_started);
      SUBCASE("but one that did start may not claim so") {
        h.events.insert(h.events.begin() + 2, h.events[1]);
        h.events[2].kind = "taskRunning";
        for (size_t i = 0; i < h.events.size(); ++i) h.events[i].sequence = i + 1;
        CHECK(mentions(analyse_history("wf", h.events).problems,
                       "as never started after its taskRunning"));
      }
    }
    SUBCASE("a rerun reopens the workflow and gives its re-runs the reason 'rerun'") {
      auto h = failed_over_then_succeeded();
      h.add("workflowRerun").add("taskScheduled", "t").add("taskDispatched", "t", 1, "wf/t/1.3");
      h.add("taskSucceeded", "t", 1, "wf/t/1.3").add("workflowSucceeded").add("workflowFinalized");
      const auto a = analyse_history("wf", h.events);
      CHECK_MESSAGE(a.problems.empty(), first(a.problems));
      CHECK(a.reruns == 1);
      CHECK(a.invocations.at("wf/t/1.3").rerun_reason == "rerun");
    }
  }

  TEST_CASE(
      "every workflow kind's definition passes the scheduler's checker and runs its shell tasks "
      "with the ledger") {
    std::mt19937_64 rng(7);
    for (auto id :
         {KindId::CHAIN, KindId::FANOUT, KindId::RETRY_OK, KindId::RETRY_FAIL,
          KindId::START_TO_CLOSE_RETRIED, KindId::HEARTBEAT_TIMEOUT_RETRIED,
          KindId::SCHEDULE_TO_CLOSE, KindId::SCHEDULE_TO_START, KindId::HEARTBEAT, KindId::ASYNC,
          KindId::PAUSE_RESUME, KindId::STOP, KindId::RERUN, KindId::LONG, KindId::SESSION}) {
      const std::string d = definition(id, "/ledger/path", "/tokens", rng);
      CAPTURE(d);
      auto parsed = troupe::parse_definition(d);
      CHECK_MESSAGE(parsed, (parsed ? "" : parsed.error().message));
      CHECK(d.find("\"name\": \"" + kind(id).name + "\"") != std::string::npos);
      CHECK(d.find("/ledger/path") != std::string::npos);
      for (const auto& task : kind(id).shell_tasks)
        CHECK(d.find("{\"name\": \"" + task + "\", \"shell\"") != std::string::npos);
    }
  }

  TEST_CASE("percentiles are nearest-rank") {
    CHECK(percentile({}, 99) == 0);
    CHECK(percentile({5}, 50) == 5);
    CHECK(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50) == 5);
    CHECK(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99) == 10);
  }
}
