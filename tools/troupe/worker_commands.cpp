// Workers as tables, detail pages and JSON.
#include "tools/troupe/worker_commands.hpp"

#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "runtime/client/gateway_client.hpp"
#include "schema/duration.hpp"
#include "tools/troupe/connection.hpp"
#include "tools/troupe/exit_codes.hpp"
#include "tools/troupe/json.hpp"
#include "tools/troupe/task_table.hpp"

namespace troupe::cli {
namespace {

using client::WorkerSummary;

int64_t now_us() { return wall_clock_us(); }

/// "default 1/4, gpu 0/1": used/slots per task list.
std::string task_lists_text(const WorkerSummary& w) {
  std::string out;
  for (const auto& l : w.task_lists) {
    out += (out.empty() ? "" : ", ") + l.name + " " + std::to_string(l.used) + "/" + std::to_string(l.slots);
  }
  return out.empty() ? "-" : out;
}

std::string heartbeat_text(const WorkerSummary& w) {
  if (w.last_heartbeat_age_ms < 0) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << static_cast<double>(w.last_heartbeat_age_ms) / 1000.0 << "s ago";
  return out.str();
}

/// What a DRAINING, DRAINED or QUARANTINED worker's status needs said next to it.
std::string standing_text(const WorkerSummary& w) {
  if (w.standing == "DRAINING" || w.standing == "DRAINED") {
    std::string out = w.drain_immediate ? "immediate drain" : "eventual drain";
    if (w.drain_deadline_us > 0 && !w.drain_immediate) out += ", deadline " + utc_time(w.drain_deadline_us) + " UTC";
    if (w.drain_exit) out += ", stops when drained";
    return out;
  }
  if (w.standing == "QUARANTINED") {
    const int64_t left = std::max<int64_t>(0, w.quarantined_until_us - now_us());
    return "quarantine " + std::to_string(w.quarantines) + ", " + format_duration(std::chrono::microseconds(left)) +
           " left";
  }
  return "";
}

Json worker_json(const WorkerSummary& w) {
  Json out = Json::object();
  out.set("name", w.name);
  out.set("workerId", w.worker_id);
  out.set("status", w.status);
  out.set("health", w.health);
  out.set("standing", w.standing);
  out.set("live", w.live);
  out.set("hostname", w.hostname);
  out.set("pid", static_cast<int64_t>(w.pid));
  out.set("resourceId", w.resource_id);
  Json lists = Json::array();
  for (const auto& l : w.task_lists) {
    Json list = Json::object();
    list.set("name", l.name);
    list.set("slots", static_cast<int64_t>(l.slots));
    list.set("used", static_cast<int64_t>(l.used));
    lists.push(std::move(list));
  }
  out.set("taskLists", std::move(lists));
  Json running = Json::array();
  for (const auto& id : w.running) running.push(id);
  out.set("running", std::move(running));
  out.set("lastHeartbeatAgeMs", w.last_heartbeat_age_ms);
  Json drain = Json::object();
  drain.set("immediate", w.drain_immediate);
  drain.set("deadlineUs", w.drain_deadline_us);
  drain.set("exitWhenDrained", w.drain_exit);
  drain.set("requestedUs", w.drain_requested_us);
  out.set("drain", std::move(drain));
  out.set("quarantinedUntilUs", w.quarantined_until_us);
  out.set("quarantines", static_cast<int64_t>(w.quarantines));
  Json failures = Json::array();
  for (const auto& f : w.failures) {
    Json failure = Json::object();
    failure.set("task", f.task);
    failure.set("reason", f.reason);
    failure.set("atUs", f.at_us);
    failures.push(std::move(failure));
  }
  out.set("failures", std::move(failures));
  out.set("firstRegisteredUs", w.first_registered_us);
  out.set("lastRegisteredUs", w.last_registered_us);
  out.set("registrations", w.registrations);
  Json recent = Json::array();
  for (const auto& r : w.recent) {
    Json item = Json::object();
    item.set("invocationId", r.invocation_id);
    item.set("task", r.task);
    item.set("attempt", static_cast<int64_t>(r.attempt));
    item.set("outcome", r.outcome);
    item.set("endedUs", r.ended_us);
    recent.push(std::move(item));
  }
  out.set("recent", std::move(recent));
  if (!w.journal.empty()) {
    Json journal = Json::array();
    for (const auto& e : w.journal) {
      Json item = Json::object();
      item.set("atUs", e.at_us);
      item.set("what", e.what);
      journal.push(std::move(item));
    }
    out.set("journal", std::move(journal));
  }
  return out;
}

void print_table(const std::vector<WorkerSummary>& workers) {
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "STATUS", "HEALTH", "HOST", "PID", "TASK LISTS (used/slots)", "RUNNING", "HEARTBEAT", "FAILURES"}};
  for (const auto& w : workers) {
    rows.push_back({w.name, w.status, w.health.empty() ? "-" : w.health, w.hostname.empty() ? "-" : w.hostname,
                    w.pid == 0 ? "-" : std::to_string(w.pid), task_lists_text(w), std::to_string(w.running.size()),
                    heartbeat_text(w), std::to_string(w.failures.size())});
  }
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
  for (const auto& w : workers) {
    if (auto note = standing_text(w); !note.empty()) std::cout << w.name << ": " << w.status << " (" << note << ")\n";
  }
}

void print_detail(const WorkerSummary& w) {
  auto line = [](const std::string& key, const std::string& value) {
    std::cout << std::left << std::setw(20) << (key + ":") << value << "\n";
  };
  line("worker", w.name);
  line("worker id", w.worker_id.empty() ? "-" : w.worker_id);
  std::string status = w.status;
  if (auto note = standing_text(w); !note.empty()) status += " (" + note + ")";
  line("status", status);
  line("health", w.health.empty() ? "- (no process registered)" : w.health);
  line("host", (w.hostname.empty() ? "-" : w.hostname) + (w.pid ? " pid " + std::to_string(w.pid) : ""));
  if (!w.resource_id.empty()) line("resource id", w.resource_id);
  line("task lists", task_lists_text(w));
  line("running", w.running.empty() ? "none" : std::to_string(w.running.size()));
  for (const auto& id : w.running) std::cout << "  " << id << "\n";
  line("last heartbeat", heartbeat_text(w));
  line("registered", std::to_string(w.registrations) + " times, first " +
                         (w.first_registered_us ? utc_time(w.first_registered_us) + " UTC" : "-") + ", last " +
                         (w.last_registered_us ? utc_time(w.last_registered_us) + " UTC" : "-"));
  line("failures in a row", std::to_string(w.failures.size()));
  for (const auto& f : w.failures) std::cout << "  " << utc_time(f.at_us) << " UTC  " << f.task << "  " << f.reason << "\n";
  if (!w.recent.empty()) {
    std::cout << "recent invocations (newest last):\n";
    for (const auto& r : w.recent) {
      std::cout << "  " << utc_time(r.ended_us) << " UTC  " << r.task << " attempt " << r.attempt << "  " << r.outcome
                << "  " << r.invocation_id << "\n";
    }
  }
  if (!w.journal.empty()) {
    std::cout << "journal (registrations and health, newest last):\n";
    for (const auto& e : w.journal) std::cout << "  " << utc_time(e.at_us) << " UTC  " << e.what << "\n";
  }
}

/// The one worker `args` names (its first positional).
Result<std::string> name_of(const Args& args) {
  if (args.positionals().empty()) return fail(Errc::INVALID_ARGUMENT, "which worker? give its name (troupe workers lists them)");
  return args.positionals().front();
}

/// Prints an order's answer: the worker as it left it.
int print_order(Result<WorkerSummary> worker, bool json) {
  if (!worker) return failed(worker.error());
  if (json) {
    std::cout << worker_json(*worker).dump() << "\n";
  } else {
    std::string note = standing_text(*worker);
    std::cout << worker->name << ": " << worker->status << (note.empty() ? "" : " (" + note + ")") << "\n";
  }
  return exit_ok;
}

/// An order with nothing but the worker's name (undrain, forgive): `call` on the client.
int plain_order(const Args& args, Result<WorkerSummary> (client::GatewayClient::*call)(const std::string&)) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto name = name_of(args);
  if (!name) return usage_error(args, name.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  return print_order(((**client).*call)(*name), *json);
}

}  // namespace

int workers_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto workers = (*client)->workers();
  if (!workers) return failed(workers.error());
  if (*json) {
    Json list = Json::array();
    for (const auto& w : *workers) list.push(worker_json(w));
    Json out = Json::object();
    out.set("workers", std::move(list));
    std::cout << out.dump() << "\n";
  } else if (workers->empty()) {
    std::cout << "no worker has registered with this scheduler\n";
  } else {
    print_table(*workers);
  }
  return exit_ok;
}

int worker_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  auto history = args.boolean("history", false);
  if (!history) return usage_error(args, history.error().message);
  auto name = name_of(args);
  if (!name) return usage_error(args, name.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto workers = (*client)->workers(*name, *history);
  if (!workers) return failed(workers.error());
  for (const auto& w : *workers) {
    if (*json) {
      std::cout << worker_json(w).dump() << "\n";
    } else {
      print_detail(w);
    }
  }
  return exit_ok;
}

int worker_drain_command(const Args& args) {
  auto json = args.boolean("json", false);
  if (!json) return usage_error(args, json.error().message);
  client::DrainRequest drain;
  auto immediate = args.boolean("immediate", false);
  if (!immediate) return usage_error(args, immediate.error().message);
  drain.immediate = *immediate;
  auto exit_when_drained = args.boolean("exit", false);
  if (!exit_when_drained) return usage_error(args, exit_when_drained.error().message);
  drain.exit_when_drained = *exit_when_drained;
  if (auto text = args.get("deadline")) {
    auto deadline = parse_duration(*text);
    if (!deadline || deadline->count() <= 0) {
      return usage_error(args, "--deadline takes a duration such as 10m (what still runs then is interrupted)");
    }
    if (drain.immediate) return usage_error(args, "--deadline is for an eventual drain; --immediate interrupts at once");
    drain.deadline = *deadline;
  }
  auto name = name_of(args);
  if (!name) return usage_error(args, name.error().message);
  auto client = connect(args);
  if (!client) return failed(client.error());
  return print_order((*client)->drain_worker(*name, drain), *json);
}

int worker_undrain_command(const Args& args) { return plain_order(args, &client::GatewayClient::undrain_worker); }

int worker_forgive_command(const Args& args) { return plain_order(args, &client::GatewayClient::forgive_worker); }

}  // namespace troupe::cli
