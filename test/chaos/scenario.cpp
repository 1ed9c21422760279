// The scenario's lifecycle, the checks that combine histories, the ledger and the cluster's
// record, the figures line and the failure report.
#include "test/chaos/scenario.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "runtime/client/gateway_client.hpp"
#include "test/chaos/history_check.hpp"

namespace troupe::chaos {
namespace fs = std::filesystem;

namespace {

std::string make_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/troupe-chaos-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

bool keep_dir() {
  const char* keep = std::getenv("TROUPE_CHAOS_KEEP");
  return keep != nullptr && *keep != '\0' && std::string(keep) != "0";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string seconds(int64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(us) / 1e6);
  return buf;
}

/// Whether `pid` is a ledger task of this run (its command line names the ledger).
bool is_our_task(int64_t pid, const std::string& ledger) {
  const std::string cmdline = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  return cmdline.find("chaos-task") != std::string::npos &&
         cmdline.find(ledger) != std::string::npos;
}

/// The task events that show a workflow moving: work sent to a worker, or a worker's report.
bool is_moving(const std::string& kind) {
  return kind == "taskDispatched" || kind == "taskRunning" || kind == "taskHeartbeat" ||
         kind == "taskSucceeded" || kind == "taskFailed" || kind == "taskAwaitingCompletion";
}

struct Verified {
  const Order* order = nullptr;
  bool watched = false;
  std::vector<Event> events;
  HistoryAnalysis analysis;
  std::string described;  ///< describe's state, or the error
  std::string tasks;      ///< describe's task table, one "NAME STATE attempt N on WORKER" a line
  std::string indexed;    ///< the index's state, or "" when absent
};

}  // namespace

int64_t percentile(std::vector<int64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size());
  return values[rank - 1];
}

Scenario::Scenario(ScenarioOptions options)
    : options_(std::move(options)),
      timings_(chaos_timings()),
      seed_(chaos_seed()),
      faults_(seed_),
      dir_(make_dir()) {
  ledger_ = dir_ + "/ledger";
  tokens_ = dir_ + "/tokens";
  fs::create_directories(tokens_);
  std::ofstream(ledger_).flush();
  reader_ = std::make_unique<LedgerReader>(ledger_);
  std::cout << "chaos." << options_.name << ": TROUPE_TEST_SEED=" << seed_ << " (directory " << dir_
            << (keep_dir() ? ", kept" : ", removed at the end; TROUPE_CHAOS_KEEP=1 keeps it") << ")"
            << std::endl;
  cluster_ = std::make_unique<ChaosCluster>(dir_, timings_, options_.workers, options_.data_dir);
  watchdog_ = std::make_unique<Watchdog>(timings_.call_limit, [this](const std::string&) {
    cluster_->signal("scheduler",
                     SIGKILL);  // the hung call fails, and the run goes on to report it
  });
  Workload::Options w;
  w.prefix = options_.prefix;
  w.mix = options_.mix;
  w.clients = options_.clients;
  w.in_flight = options_.in_flight;
  w.port = cluster_->port();
  w.ledger = ledger_;
  w.token_dir = tokens_;
  w.seed = seed_;
  workload_ = std::make_unique<Workload>(w, *watchdog_);
}

Scenario::~Scenario() {
  workload_.reset();
  watchdog_.reset();
  cluster_->stop();
  // Whatever task the cluster left running (a bug the checks reported) is stopped by its pid.
  for (const auto& run : runs_of(parse_ledger(read_file(ledger_)))) {
    if (is_our_task(run.pid, ledger_)) {
      ::kill(-static_cast<pid_t>(run.pid), SIGKILL);
      ::kill(static_cast<pid_t>(run.pid), SIGKILL);
    }
  }
  cluster_.reset();
  if (!keep_dir()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

void Scenario::start() {
  cluster_->start();
  started_us_ = now_us();
  workload_->start();
}

void Scenario::pause_for(milliseconds delay) { std::this_thread::sleep_for(delay); }

milliseconds Scenario::draw(milliseconds low, milliseconds high) {
  const milliseconds d(std::uniform_int_distribution<int64_t>(low.count(), high.count())(faults_));
  schedule_.push_back(std::to_string(d.count()) + "ms");
  return d;
}

std::string Scenario::pick(const std::vector<std::string>& candidates) {
  const auto& chosen =
      candidates.at(std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(faults_));
  schedule_.push_back(chosen);
  return chosen;
}

std::vector<Run> Scenario::runs() const { return reader_->update(); }

std::vector<Run> Scenario::live_runs(int64_t window_us) const {
  const int64_t now = now_us();
  std::vector<Run> out;
  for (const auto& run : reader_->update()) {
    if (!run.ended && run.last_us >= now - window_us) out.push_back(run);
  }
  return out;
}

bool Scenario::wait_for_live_run(const std::string& worker, milliseconds timeout,
                                 milliseconds min_age) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const int64_t now = now_us();
    for (const auto& run : live_runs()) {
      if (run.worker == worker && now - run.start_us >= min_age.count() * 1000) return true;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

size_t Scenario::record(WorkerFault fault) {
  worker_faults_.push_back(std::move(fault));
  return worker_faults_.size() - 1;
}

namespace {

/// The time the scheduler's log first says `worker` is lost (MUST_DIE) at or after `since_us`.
std::optional<int64_t> lost_line(const ChaosCluster& cluster, const std::string& worker,
                                 int64_t since_us) {
  return cluster.find_line("scheduler", since_us, {": worker lost", " worker=" + worker + " "});
}

}  // namespace

int64_t Scenario::wait_detected(size_t index) {
  auto& fault = worker_faults_.at(index);
  const auto deadline = std::chrono::steady_clock::now() + timings_.detection_give_up;
  while (fault.detected_us == 0 && std::chrono::steady_clock::now() < deadline) {
    if (auto at = lost_line(*cluster_, fault.worker, fault.at_us)) {
      fault.detected_us = *at;
      fault.detected_by = "the scheduler's log";
      break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  return fault.detected_us ? fault.detected_us - fault.at_us : 0;
}

void Scenario::resumed(const std::string& worker, int64_t at_us) {
  for (auto it = worker_faults_.rbegin(); it != worker_faults_.rend(); ++it) {
    if (it->worker == worker) {
      it->resumed_us = at_us;
      return;
    }
  }
}

void Scenario::problem(const std::string& category, const std::string& detail) {
  problems_[category].push_back(detail);
}

void Scenario::figure(const std::string& key, const std::string& value) {
  figures_.emplace_back(key, value);
}

void Scenario::finish_and_check() {
  REQUIRE_FALSE(finished_);
  finished_ = true;
  const int64_t faults_ended_us = now_us();
  workload_->stop_submitting(std::chrono::steady_clock::now() + timings_.drain);
  workload_->join();
  const int64_t drained_us = now_us();
  {
    // What every client did, for whoever keeps the directory (TROUPE_CHAOS_KEEP).
    std::ofstream out(dir_ + "/orders.txt");
    for (const auto& o : workload_->orders()) {
      out << o->id << " acknowledged=" << o->acknowledged << " ended=" << o->ended
          << " state=" << o->state << " detail=" << o->detail << " first_end=" << o->first_end
          << "\n";
      for (const auto& line : o->log) out << "  " << line << "\n";
    }
  }

  // ---- read back every acknowledged workflow ----------------------------------------------
  std::unique_ptr<client::GatewayClient> api;
  // Reading back is bounded too: 60 s to (re)connect, 5 minutes in all; what is not read by
  // then is reported as unread.
  const auto reading_deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  auto reconnect = [&]() -> bool {
    api.reset();
    const auto deadline =
        std::min(reading_deadline, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    while (std::chrono::steady_clock::now() < deadline) {
      client::ConnectOptions options;
      options.timeout = std::chrono::seconds(2);
      auto connected = client::GatewayClient::connect("127.0.0.1", cluster_->port(), options);
      if (connected) {
        api = std::move(*connected);
        return true;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    problem("cluster", "cannot connect to the scheduler after the run to read the histories");
    return false;
  };
  reconnect();

  std::vector<Verified> verified;
  for (const auto& order : workload_->orders()) {
    if (!order->acknowledged) continue;
    Verified v;
    v.order = order.get();
    for (int tries = 0; api && tries < 3 && std::chrono::steady_clock::now() < reading_deadline;
         ++tries) {
      {
        auto guard = watchdog_->watch("describe " + order->id);
        auto d = api->describe(order->id);
        v.described =
            d ? d->state : std::string(errc_name(d.error().code)) + ": " + d.error().message;
        v.tasks.clear();
        if (d) {
          for (const auto& t : d->tasks) {
            v.tasks += "    describe: " + t.name + " " + t.state + " attempt " +
                       std::to_string(t.attempt) + " on " + (t.worker.empty() ? "-" : t.worker) +
                       (t.awaiting_completion ? " awaiting completion" : "") +
                       (t.failure.empty() ? "" : " failure " + t.failure) + "\n";
          }
        }
        if (!d && (d.error().code == Errc::UNAVAILABLE || d.error().code == Errc::DISCONNECTED)) {
          if (!reconnect()) break;
          continue;
        }
      }
      if (!order->ended) break;  // an open workflow's watch would not return
      v.events.clear();
      auto guard = watchdog_->watch("watch " + order->id);
      std::string decode_error;
      auto w = api->watch(order->id, 1, [&](const client::WatchedEvent& e) {
        try {
          v.events.push_back(decode_event(e.packed));
        } catch (const std::exception& x) {
          decode_error = x.what();
        }
        return true;
      });
      if (!decode_error.empty()) problem("histories", order->id + ": " + decode_error);
      if (w) {
        v.watched = true;
        break;
      }
      if (w.error().code != Errc::UNAVAILABLE && w.error().code != Errc::DISCONNECTED) {
        problem("histories", order->id + ": watch: " + w.error().message);
        break;
      }
      if (!reconnect()) break;
    }
    v.analysis = analyse_history(order->id, v.events);
    verified.push_back(std::move(v));
  }
  // The scheduler's index, every page.
  std::map<std::string, std::string> index;
  if (api) {
    client::ListQuery query;
    query.limit = 1000;
    for (int page = 0; page < 100; ++page) {
      auto guard = watchdog_->watch("list");
      auto listed = api->list(query);
      if (!listed) {
        problem("ends", "list: " + listed.error().message);
        break;
      }
      for (const auto& w : listed->workflows) index[w.workflow_id] = w.state;
      if (listed->next_cursor.empty()) break;
      query.after = listed->next_cursor;
    }
  }
  api.reset();

  // The ledger as it stands once the allowance of the last workflow to close has passed: a run
  // that outlived its workflow by more is still writing then.
  int64_t last_close = 0;
  for (const auto& v : verified) last_close = std::max(last_close, v.analysis.closed_us);
  const int64_t read_at = last_close + timings_.kill_grace_us + timings_.leak_slack_us + 500'000;
  if (read_at > now_us())
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::min<int64_t>(read_at - now_us(), 10'000'000)));
  size_t malformed = 0;
  const auto lines = parse_ledger(read_file(ledger_), &malformed);
  const auto runs = runs_of(lines);
  const int64_t ledger_read_us = now_us();

  // Stop the cluster; any task process left after every worker stopped outlived its agent.
  cluster_->stop();
  auto survivors = [&] {
    std::vector<const Run*> out;
    for (const auto& run : runs) {
      if (is_our_task(run.pid, ledger_)) out.push_back(&run);
    }
    return out;
  };
  const auto stopped_by = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!survivors().empty() && std::chrono::steady_clock::now() < stopped_by) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  for (const Run* run : survivors()) {
    problem("leaks",
            "task process " + std::to_string(run->pid) + " (" + run->describe() +
                ") still runs 3 s after every worker stopped: it outlived its worker agent");
  }

  // ---- checks ---------------------------------------------------------------------------
  std::map<std::string, const Verified*> by_id;
  for (const auto& v : verified) by_id[v.order->id] = &v;
  auto order_log = [](const Order& o) {
    std::string out;
    for (const auto& line : o.log) out += "    client: " + line + "\n";
    return out;
  };

  int lost = 0, failed_by_faults = 0, wrong_end = 0, unacknowledged = 0;
  for (const auto& order : workload_->orders()) unacknowledged += !order->acknowledged;
  for (const auto& v : verified) {
    const Order& o = *v.order;
    const Kind& k = kind(o.kind);
    const auto& a = v.analysis;
    auto report = [&](const std::string& category, const std::string& why) {
      std::string first_failed;
      for (const auto& e : v.events) {
        if (e.kind == "taskFailed" || e.kind == "taskTimedOut" || e.kind == "taskFailover" ||
            e.kind == "taskKilled") {
          first_failed = e.actor_id;
          break;
        }
      }
      problem(category, o.id + " (" + k.name + "): " + why + "\n" + order_log(o) + v.tasks +
                            "    history:\n" +
                            (first_failed.empty() ? task_excerpt(v.events, "", 40)
                                                  : task_excerpt(v.events, first_failed, 40)));
    };
    const bool not_found = v.described.rfind("not_found", 0) == 0 || !index.count(o.id);
    if (not_found || !o.ended) {
      ++lost;
      report("ends", std::string(not_found ? "acknowledged but not found"
                                           : "acknowledged but did not end") +
                         " (describe: " + v.described +
                         "; index: " + (index.count(o.id) ? index[o.id] : "absent") + ")");
      continue;
    }
    const bool reason_ok =
        k.expected_state != "FAILED" || o.detail.find(k.expected_reason) != std::string::npos;
    if (o.state != k.expected_state || !reason_ok) {
      if (o.state == "FAILED") {
        ++failed_by_faults;
      } else {
        ++wrong_end;
      }
      report("ends", "ended " + o.state + (o.detail.empty() ? "" : " (" + o.detail + ")") +
                         ", designed to end " + k.expected_state +
                         (k.expected_reason.empty() ? "" : " (" + k.expected_reason + ")"));
      continue;
    }
    if (!v.watched) {
      report("histories", "its history could not be read");
      continue;
    }
    if (a.final_state != o.state || v.described != o.state || index[o.id] != o.state ||
        a.closed_us == 0) {
      report("ends", "its result says " + o.state + ", describe " + v.described + ", the index " +
                         index[o.id] + ", its history " +
                         (a.final_state.empty() ? "(open)" : a.final_state) +
                         (a.closed_us ? "" : " without workflowFinalized"));
    }
    if (k.control == Control::RERUN && (o.first_end != "SUCCESS" || a.reruns < 1)) {
      report("ends", "the run before the rerun ended " + o.first_end + " and the history has " +
                         std::to_string(a.reruns) + " workflowRerun");
    }
    // A completion whose answer was lost may have been taken: only one never presented counts.
    if (k.control == Control::COMPLETE && o.completed_tokens < 1 && o.unanswered_completions < 1) {
      report("ends", "succeeded without its completion token being presented");
    }
    for (const auto& [file, refusals] : o.token_not_found) {
      if (o.accepted_tokens.count(file)) {
        report("ends", "completeTask answered NOT_FOUND (no longer current) " +
                           std::to_string(refusals) + " time(s) for token " + file +
                           ", then accepted it: its invocation was current");
      }
    }
  }

  // Histories, and re-runs as the histories record them.
  std::map<std::string, int> rerun_reasons;  // real re-runs (ledger) by recorded reason
  int undesigned = 0;
  for (const auto& v : verified) {
    for (const auto& p : v.analysis.problems)
      problem("histories", p.text + "\n" + excerpt(v.events, p.sequence, 8));
    if (!options_.scheduler_only) continue;
    const Kind& k = kind(v.order->kind);
    for (const auto& id : v.analysis.dispatch_order) {
      const auto& inv = v.analysis.invocations.at(id);
      if (!inv.rerun || inv.rerun_reason == never_started || inv.rerun_reason == interrupted) {
        continue;  // the same attempt again
      }
      auto designed = k.designed_reruns.find(inv.rerun_reason);
      const bool ok = designed != k.designed_reruns.end() &&
                      (designed->second == 0 || inv.attempt - 1 <= designed->second ||
                       inv.rerun_reason == "rerun");
      if (!ok) {
        ++undesigned;
        problem("re-runs",
                v.order->id + ": invocation " + id + " re-ran task " + inv.task + " for '" +
                    inv.rerun_reason + "', which this workflow (" + k.name +
                    ") does not cause by design: a scheduler failure consumed an attempt\n" +
                    task_excerpt(v.events, inv.task, 40));
      }
    }
  }

  // The ledger against the histories.
  if (malformed > 1) problem("ledger", std::to_string(malformed) + " malformed ledger lines");
  std::map<std::string, std::map<std::string, const Run*>>
      ended_run;  // workflow -> invocation suffix -> run
  for (const auto& run : runs) {
    if (run.ended) ended_run[run.workflow][run.invocation] = &run;
  }
  for (const auto& [key, group] : runs_by_task(runs)) {
    const Run* previous = nullptr;
    for (const Run* run : group) {
      auto it = by_id.find(run->workflow);
      if (it == by_id.end()) {
        // A run of a workflow whose start was never answered: no history to hold it against.
        previous = run;
        continue;
      }
      const Verified& v = *it->second;
      const InvocationRecord* record = nullptr;
      for (const auto& [id, inv] : v.analysis.invocations) {
        if (inv.task == run->task && invocation_suffix(id) == run->invocation) record = &inv;
      }
      if (record && record->end_reason == never_started) {
        problem("ledger",
                "a run of an invocation its history says never started: " + run->describe() +
                    "\n    ledger: " + run->first_line + "\n    ledger: " + run->last_line + "\n" +
                    task_excerpt(v.events, run->task, 40));
      }
      if (v.watched && record == nullptr) {
        problem("ledger",
                "a run of an invocation its history never dispatched: " + run->describe() +
                    "\n    ledger: " + run->first_line + "\n    ledger: " + run->last_line + "\n" +
                    task_excerpt(v.events, run->task, 40));
      }
      if (previous != nullptr) {
        if (previous->invocation == run->invocation) {
          problem("ledger", "one invocation ran in two processes: " + previous->describe() +
                                " and " + run->describe() + "\n" +
                                task_excerpt(v.events, run->task, 40));
        }
        // The reason is the one recorded for the invocation that followed the previous run's:
        // later ones that never started (dispatched again, same attempt) add nothing.
        std::string reason = record ? record->rerun_reason : "";
        if (record) {
          std::string after_previous;
          bool seen_previous = false;
          for (const auto& id : v.analysis.dispatch_order) {
            const auto& inv = v.analysis.invocations.at(id);
            if (inv.task != run->task) continue;
            if (seen_previous) {
              after_previous = inv.rerun_reason;
              break;
            }
            seen_previous = invocation_suffix(id) == previous->invocation;
          }
          if (seen_previous && !after_previous.empty()) reason = after_previous;
        }
        if (record && reason.empty()) {
          problem("re-runs", "a re-run with no recorded reason: " + run->describe() + " after " +
                                 previous->describe() + "\n" +
                                 task_excerpt(v.events, run->task, 40));
        }
        ++rerun_reasons[reason.empty() ? "unrecorded" : reason];
      }
      previous = run;
    }
  }
  for (const auto& v : verified) {
    if (!v.watched) continue;
    const Kind& k = kind(v.order->kind);
    for (const auto& [id, inv] : v.analysis.invocations) {
      if (inv.ended_by != "taskSucceeded") continue;
      if (std::find(k.shell_tasks.begin(), k.shell_tasks.end(), inv.task) == k.shell_tasks.end())
        continue;
      if (!ended_run[v.order->id].count(invocation_suffix(id))) {
        problem("ledger", v.order->id + ": invocation " + id +
                              " succeeded, but no run of it wrote its end line\n" +
                              task_excerpt(v.events, inv.task, 40));
      }
    }
  }

  // Invocations a worker had to hand back after an outage.
  for (const auto& run : taken_back_) {
    auto it = by_id.find(run.workflow);
    if (it == by_id.end() || !it->second->watched) continue;  // reported under ends
    const InvocationRecord* record = nullptr;
    for (const auto& [id, inv] : it->second->analysis.invocations) {
      if (inv.task == run.task && invocation_suffix(id) == run.invocation) record = &inv;
    }
    const bool handed_back = record && !record->ended_by.empty() && !record->failed_over &&
                             record->end_reason.rfind("Timeout:", 0) != 0 &&
                             record->ended_by != "taskKilled";
    if (!handed_back) {
      problem("scenario",
              "the invocation of a run live when the scheduler went down was not taken back: " +
                  run.describe() + " ended by " +
                  (record ? (record->ended_by.empty() ? "nothing"
                                                      : record->ended_by + " " + record->end_reason)
                          : "(not in its history)") +
                  "\n" + task_excerpt(it->second->events, run.task, 40));
    }
  }

  // Overlaps.
  const auto overlapping = overlaps(runs);
  for (const auto& o : overlapping) {
    auto it = by_id.find(o.earlier.workflow);
    std::string history =
        it == by_id.end() ? "" : task_excerpt(it->second->events, o.earlier.task, 40);
    problem("overlaps",
            "two runs of " + o.earlier.workflow + "/" + o.earlier.task + " at once for " +
                seconds(o.overlap_us) + ":\n    " + o.earlier.describe() + "\n      ledger: " +
                o.earlier.first_line + "\n      ledger: " + o.earlier.last_line + "\n    " +
                o.later.describe() + "\n      ledger: " + o.later.first_line + "\n" + history +
                cluster_->lines_between(o.earlier.worker, o.later.start_us - 4'000'000,
                                        o.later.start_us + 1'000'000) +
                cluster_->lines_between("scheduler", o.later.start_us - 4'000'000,
                                        o.later.start_us + 500'000));
  }

  // Sessions: the runs of one session's tasks, one at a time on one worker.
  std::map<std::string, std::set<std::string>> sessions;
  for (const auto& v : verified) {
    if (v.order->kind == KindId::SESSION) {
      const auto& tasks = kind(KindId::SESSION).shell_tasks;
      sessions[v.order->id] = std::set<std::string>(tasks.begin(), tasks.end());
    }
  }
  for (const auto& o : session_overlaps(runs, sessions)) {
    problem("sessions", "two runs of session tasks of " + o.earlier.workflow + " at once for " + seconds(o.overlap_us) +
                            ":\n    " + o.earlier.describe() + "\n    " + o.later.describe() + "\n" +
                            cluster_->lines_between("scheduler", o.later.start_us - 4'000'000, o.later.start_us + 500'000));
  }

  // Leaks: a run writing long after its workflow closed.
  for (const auto& run : runs) {
    auto it = by_id.find(run.workflow);
    if (it == by_id.end() || it->second->analysis.closed_us == 0) continue;
    const int64_t closed = it->second->analysis.closed_us;
    int64_t allowed = closed + timings_.kill_grace_us + timings_.leak_slack_us;
    for (const auto& f : worker_faults_) {
      // A frozen worker cannot stop its tasks until it runs again.
      if (f.kind == "stop" && f.worker == run.worker && f.at_us <= allowed) {
        const int64_t resumed = f.resumed_us ? f.resumed_us : ledger_read_us;
        if (resumed >= closed)
          allowed = std::max(allowed, resumed + timings_.kill_grace_us + timings_.leak_slack_us);
      }
    }
    if (run.last_us > allowed) {
      problem("leaks",
              "a run went on " + seconds(run.last_us - closed) + " after its workflow closed: " +
                  run.describe() + "\n    ledger: " + run.last_line + "\n" +
                  task_excerpt(it->second->events, run.task, 40) +
                  cluster_->lines_between(run.worker, closed - 3'000'000, closed + 3'000'000) +
                  cluster_->lines_between("scheduler", closed - 3'000'000, closed + 1'000'000));
    }
  }

  // Detection: the scheduler's log line, or a taskFailover naming the worker, whichever is first.
  std::vector<int64_t> detections;
  for (auto& f : worker_faults_) {
    if (f.detected_us == 0) {
      if (auto at = lost_line(*cluster_, f.worker, f.at_us)) {
        f.detected_us = *at;
        f.detected_by = "the scheduler's log";
      }
    }
    for (const auto& v : verified) {
      for (const auto& e : v.events) {
        if (e.kind == "taskFailover" && e.worker == f.worker && e.timestamp_us >= f.at_us &&
            (f.detected_us == 0 || e.timestamp_us < f.detected_us)) {
          f.detected_us = e.timestamp_us;
          f.detected_by = "taskFailover in " + v.order->id;
        }
      }
    }
    if (f.detected_us == 0) {
      problem("detection", f.kind + " of " + f.worker + " (pid " + std::to_string(f.pid) + ") at " +
                               std::to_string(f.at_us) + " was never noticed by the scheduler");
      detections.push_back(timings_.detection_give_up.count() * 1000);
      continue;
    }
    const int64_t took = f.detected_us - f.at_us;
    detections.push_back(took);
  }
  const int64_t limit_us = timings_.detection_limit.count() * 1000;
  if (!detections.empty() && percentile(detections, 99) > limit_us) {
    std::ostringstream all;
    for (const auto& f : worker_faults_) {
      all << "    " << f.kind << " " << f.worker << " at " << f.at_us << ": "
          << (f.detected_us ? seconds(f.detected_us - f.at_us) + " (" + f.detected_by + ")"
                            : std::string("never"))
          << "\n";
    }
    problem("detection", "worker loss noticed in " + seconds(percentile(detections, 99)) +
                             " at p99, over the " + seconds(limit_us) + " limit:\n" + all.str());
  }

  // Recovery: a restarted scheduler serving clients, and in-flight workflows moving.
  std::vector<int64_t> serve, moving;
  const auto starts = cluster_->scheduler_starts();
  int censored = 0;
  for (size_t i = 1; i < starts.size(); ++i) {
    const int64_t from = starts[i].started_us;
    const int64_t until = i + 1 < starts.size() ? starts[i + 1].started_us : INT64_MAX;
    if (starts[i].served_us) serve.push_back(starts[i].served_us - from);
    int64_t first = 0;
    for (const auto& v : verified) {
      if (v.events.empty() || v.events.front().timestamp_us >= from)
        continue;  // not in flight at the restart
      for (const auto& e : v.events) {
        if (e.timestamp_us >= from && e.timestamp_us < until && is_moving(e.kind)) {
          if (first == 0 || e.timestamp_us < first) first = e.timestamp_us;
          break;
        }
      }
    }
    if (first) {
      moving.push_back(first - from);
    } else {
      ++censored;
    }
  }

  // The cluster's own record.
  for (const auto& hang : watchdog_->hangs()) problem("cluster", "a client call hung: " + hang);
  int worker_exits = 0;
  for (const auto& exit : cluster_->unplanned_exits()) {
    const std::string what = exit.node + " (pid " + std::to_string(exit.pid) + ") " +
                             describe_status(exit.status) + " on its own at " +
                             std::to_string(exit.at_us) + "; its last lines:\n" + exit.tail;
    if (exit.node == "scheduler") {
      const bool clean_exit = WIFEXITED(exit.status) && WEXITSTATUS(exit.status) != 0;
      if (!options_.scheduler_may_exit || !clean_exit) problem("cluster", "the scheduler " + what);
    } else {
      ++worker_exits;
      if (options_.workers_must_survive) problem("cluster", "worker " + what);
    }
  }
  if (static_cast<int>(verified.size()) < options_.min_acknowledged) {
    problem("cluster",
            "only " + std::to_string(verified.size()) + " workflows were acknowledged (at least " +
                std::to_string(options_.min_acknowledged) + " expected): the workload did not run");
  }
  if (runs.empty()) problem("ledger", "the ledger is empty: no shell task ran");

  // ---- the figures line and the report ----------------------------------------------------
  std::ostringstream figures;
  figures << "chaos figures " << options_.name << ": seed=" << seed_;
  for (const auto& [key, n] : counts_) figures << " " << key << "=" << n;
  figures << " acknowledged=" << verified.size() << " unacknowledged=" << unacknowledged
          << " lost=" << lost << " failed_by_faults=" << failed_by_faults
          << " wrong_end=" << wrong_end << " overlapping_runs=" << overlapping.size()
          << " sessions=" << sessions.size() << " reruns={";
  const char* separator = "";
  for (const auto& [reason, n] : rerun_reasons) {
    figures << separator << reason << ":" << n;
    separator = ",";
  }
  figures << "}";
  if (options_.scheduler_only) figures << " undesigned_reruns=" << undesigned;
  if (!detections.empty()) {
    figures << " detection_p50=" << seconds(percentile(detections, 50))
            << " detection_p99=" << seconds(percentile(detections, 99))
            << " (n=" << detections.size() << ")";
  }
  if (starts.size() > 1) {
    figures << " recovery_serving_p50=" << seconds(percentile(serve, 50))
            << " recovery_serving_p99=" << seconds(percentile(serve, 99)) << " (n=" << serve.size()
            << ")"
            << " recovery_moving_p50=" << seconds(percentile(moving, 50))
            << " recovery_moving_p99=" << seconds(percentile(moving, 99)) << " (n=" << moving.size()
            << ", " << censored << " restarts killed before anything moved)";
  }
  figures << " worker_exits=" << worker_exits << " runs=" << runs.size();
  for (const auto& [key, value] : figures_) figures << " " << key << "=" << value;
  figures << " faults=" << seconds(faults_ended_us - started_us_)
          << " drain=" << seconds(drained_us - faults_ended_us)
          << " total=" << seconds(now_us() - started_us_);
  std::cout << figures.str() << std::endl;
  std::cout << "chaos schedule " << options_.name << ": seed=" << seed_ << " drew";
  for (const auto& step : schedule_) std::cout << " " << step;
  std::cout << std::endl;
  MESSAGE(figures.str());

  if (!problems_.empty()) {
    std::ostringstream out;
    out << "chaos." << options_.name << " FAILED: replay with TROUPE_TEST_SEED=" << seed_
        << " (fault timing is drawn from the seed, see the 'chaos schedule' line; workflow "
           "placement depends on the run)\n";
    for (const auto& [category, list] : problems_) {
      out << "== " << category << ": " << list.size() << " problem(s)\n";
      size_t shown = 0;
      for (const auto& p : list) {
        if (++shown > 8) {
          out << "  ... and " << list.size() - 8 << " more\n";
          break;
        }
        out << "  - " << p << "\n";
      }
    }
    std::cout << out.str() << std::flush;
  }
  for (const char* category : {"ends", "histories", "ledger", "overlaps", "sessions", "re-runs", "leaks",
                               "detection", "drains", "cluster", "scenario"}) {
    const auto it = problems_.find(category);
    const size_t n = it == problems_.end() ? 0 : it->second.size();
    CHECK_MESSAGE(n == 0, "chaos." << options_.name << ": " << n << " problem(s) of kind '"
                                   << std::string(category) << "' (the first: "
                                   << (n ? it->second.front().substr(0, 400) : "") << ")"
                                   << " TROUPE_TEST_SEED=" << seed_);
  }
  for (const auto& [category, list] : problems_) {
    static const std::set<std::string> known = {"ends",      "histories", "ledger",
                                                "overlaps",  "sessions",  "re-runs",   "leaks",
                                                "detection", "drains",    "cluster",
                                                "scenario"};
    CHECK_MESSAGE(known.count(category) == 1, "unknown problem kind " << category);
  }
}

}  // namespace troupe::chaos
