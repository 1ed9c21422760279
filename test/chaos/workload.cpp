// The workflow kinds, the client threads and the watchdog.
#include "test/chaos/workload.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "runtime/client/gateway_client.hpp"
#include "test/chaos/ledger.hpp"

namespace troupe::chaos {
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

std::string json(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

/// Retries that absorb failovers: a task designed to succeed survives several lost workers.
const char* const retry_many =
    R"("retry": {"initialInterval": "200ms", "backoffCoefficient": 1.5, "maximumInterval": "1s", "maximumAttempts": 10})";

/// retry_many, except that exit code 5 (a hanging run that was never cut short) ends the task.
const char* const retry_many_unless_5 =
    R"("retry": {"initialInterval": "200ms", "backoffCoefficient": 1.5, "maximumInterval": "1s", "maximumAttempts": 10, "nonRetryableErrors": ["ExitCode:5"]})";

/// A shell task appending to the ledger; `extra` are more JSON members (", " separated).
std::string shell_task(const std::string& name, const std::string& ledger, const TaskBehaviour& b,
                       const std::string& extra) {
  std::string command = "[";
  const char* separator = "";
  for (const auto& arg : ledger_command(ledger, b)) {
    command += separator + json(arg);
    separator = ", ";
  }
  command += "]";
  return "{\"name\": " + json(name) + ", \"shell\": {\"command\": " + command + "}" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

std::string deps(std::initializer_list<const char*> names) {
  std::string out = "\"dependsOn\": [";
  const char* separator = "";
  for (const char* n : names) {
    out += separator + json(n);
    separator = ", ";
  }
  return out + "]";
}

/// The connection is gone (or the scheduler cannot serve now): reconnect and ask again.
bool lost_connection(const Error& e) {
  return e.code == Errc::UNAVAILABLE || e.code == Errc::DISCONNECTED;
}

int between(std::mt19937_64& rng, int low, int high) {
  return std::uniform_int_distribution<int>(low, high)(rng);
}

TaskBehaviour ok(int ticks, bool heartbeat = false) {
  TaskBehaviour b;
  b.mode = TaskBehaviour::OK;
  b.ticks = ticks;
  b.heartbeat = heartbeat;
  return b;
}

std::string workflow(const std::string& name, const std::vector<std::string>& tasks) {
  std::string out = "{\"name\": " + json(name) + ", \"tasks\": [\n";
  for (size_t i = 0; i < tasks.size(); ++i)
    out += "  " + tasks[i] + (i + 1 < tasks.size() ? ",\n" : "\n");
  return out + "]}";
}

std::vector<Kind> make_kinds() {
  std::vector<Kind> k;
  k.push_back({KindId::CHAIN, "chain", "SUCCESS", "", {}, Control::NONE, {"a", "c"}});
  k.push_back({KindId::FANOUT,
               "fanout",
               "SUCCESS",
               "",
               {},
               Control::NONE,
               {"root", "p1", "p2", "p3", "p4"}});
  k.push_back(
      {KindId::RETRY_OK, "retry-ok", "SUCCESS", "", {{"ExitCode:3", 2}}, Control::NONE, {"t"}});
  k.push_back({KindId::RETRY_FAIL,
               "retry-fail",
               "FAILED",
               "ExitCode:4",
               {{"ExitCode:3", 1}},
               Control::NONE,
               {"t"}});
  k.push_back({KindId::START_TO_CLOSE_RETRIED,
               "start-to-close",
               "SUCCESS",
               "",
               {{"Timeout:startToClose", 1}},
               Control::NONE,
               {"t"}});
  k.push_back({KindId::HEARTBEAT_TIMEOUT_RETRIED,
               "heartbeat-timeout",
               "SUCCESS",
               "",
               {{"Timeout:heartbeat", 1}},
               Control::NONE,
               {"t"}});
  k.push_back({KindId::SCHEDULE_TO_CLOSE,
               "schedule-to-close",
               "FAILED",
               "Timeout:scheduleToClose",
               {},
               Control::NONE,
               {"t"}});
  k.push_back({KindId::SCHEDULE_TO_START,
               "schedule-to-start",
               "FAILED",
               "Timeout:scheduleToStart",
               {{"Timeout:scheduleToStart", 0}},
               Control::NONE,
               {"t"}});
  k.push_back({KindId::HEARTBEAT, "heartbeat", "SUCCESS", "", {}, Control::NONE, {"t"}});
  k.push_back({KindId::ASYNC, "async", "SUCCESS", "", {}, Control::COMPLETE, {"t"}});
  k.push_back({KindId::PAUSE_RESUME,
               "pause-resume",
               "SUCCESS",
               "",
               {},
               Control::PAUSE_RESUME,
               {"a", "b", "c"}});
  k.push_back({KindId::STOP, "stop", "STOPPED", "", {}, Control::STOP, {"t"}});
  k.push_back({KindId::RERUN,
               "rerun",
               "SUCCESS",
               "",
               {{"rerun", 0}},
               Control::RERUN,
               {"a", "b", "c", "d"}});
  k.push_back({KindId::LONG, "long", "SUCCESS", "", {}, Control::NONE, {"t"}});
  k.push_back({KindId::SESSION, "session", "SUCCESS", "", {}, Control::NONE, {"a", "b", "c", "d"}});
  return k;
}

}  // namespace

const Kind& kind(KindId id) {
  static const std::vector<Kind> kinds = make_kinds();
  for (const auto& k : kinds) {
    if (k.id == id) return k;
  }
  throw std::logic_error("unknown workflow kind");
}

std::string definition(KindId id, const std::string& ledger, const std::string& token_dir,
                       std::mt19937_64& rng) {
  const std::string name = kind(id).name;
  const std::string retry = retry_many;
  const std::string retry_unless_5 = retry_many_unless_5;
  switch (id) {
    case KindId::CHAIN:
      return workflow(
          name,
          {shell_task("a", ledger, ok(between(rng, 3, 10)), retry),
           R"({"name": "b", "dependsOn": ["a"], "handler": "sleep", "input": {"duration": "300ms"}, )" +
               retry + "}",
           shell_task("c", ledger, ok(between(rng, 3, 10)), deps({"b"}) + ", " + retry)});
    case KindId::FANOUT: {
      std::vector<std::string> tasks = {shell_task("root", ledger, ok(2), retry)};
      for (const char* p : {"p1", "p2", "p3", "p4"}) {
        tasks.push_back(
            shell_task(p, ledger, ok(between(rng, 3, 15)), deps({"root"}) + ", " + retry));
      }
      tasks.push_back(
          R"({"name": "join", "dependsOn": ["p1", "p2", "p3", "p4"], "handler": "noop", )" + retry +
          "}");
      return workflow(name, tasks);
    }
    case KindId::RETRY_OK: {
      TaskBehaviour b;
      b.mode = TaskBehaviour::FAIL_BEFORE;
      b.ticks = 3;
      b.attempt = 3;
      b.code = 3;
      return workflow(
          name,
          {shell_task(
              "t", ledger, b,
              R"("retry": {"initialInterval": "100ms", "backoffCoefficient": 1.5, "maximumAttempts": 10})")});
    }
    case KindId::RETRY_FAIL: {
      TaskBehaviour b;
      b.mode = TaskBehaviour::FAIL_FROM;
      b.attempt = 2;
      b.code = 3;
      b.late_code = 4;
      return workflow(
          name,
          {shell_task(
              "t", ledger, b,
              R"("retry": {"initialInterval": "100ms", "maximumAttempts": 10, "nonRetryableErrors": ["ExitCode:4"]})")});
    }
    case KindId::START_TO_CLOSE_RETRIED: {
      TaskBehaviour b;
      b.mode = TaskBehaviour::HANG_BEFORE;
      b.attempt = 2;
      b.ticks = 3;
      return workflow(
          name,
          {shell_task("t", ledger, b,
                      R"("timeouts": {"scheduleToStart": "10m", "startToClose": "1500ms"}, )" +
                          retry_unless_5)});
    }
    case KindId::HEARTBEAT_TIMEOUT_RETRIED: {
      TaskBehaviour b;
      b.mode = TaskBehaviour::HANG_BEFORE;
      b.attempt = 2;
      b.ticks = 15;
      b.heartbeat = true;
      return workflow(
          name, {shell_task("t", ledger, b,
                            R"("timeouts": {"scheduleToClose": "10m", "heartbeat": "1500ms"}, )" +
                                retry_unless_5)});
    }
    case KindId::SCHEDULE_TO_CLOSE: {
      TaskBehaviour b;
      b.mode = TaskBehaviour::FOREVER;
      return workflow(name,
                      {shell_task("t", ledger, b,
                                  R"("timeouts": {"scheduleToClose": "2s"}, )" + retry_unless_5)});
    }
    case KindId::SCHEDULE_TO_START:
      return workflow(
          name,
          {shell_task(
              "t", ledger, ok(1),
              R"("taskList": "nowhere", "timeouts": {"scheduleToStart": "1s", "startToClose": "10s"}, )"
              R"("retry": {"initialInterval": "100ms", "maximumAttempts": 2})")});
    case KindId::HEARTBEAT:
      return workflow(
          name,
          {shell_task("t", ledger, ok(between(rng, 20, 40), true),
                      R"("timeouts": {"scheduleToClose": "10m", "heartbeat": "3s"}, )" + retry)});
    case KindId::ASYNC: {
      TaskBehaviour b;
      b.mode = TaskBehaviour::TOKEN;
      b.token_dir = token_dir;
      return workflow(name,
                      {shell_task("t", ledger, b, R"("asyncCompletion": true, )" + retry),
                       R"({"name": "u", "dependsOn": ["t"], "handler": "noop", )" + retry + "}"});
    }
    case KindId::PAUSE_RESUME:
      return workflow(
          name, {shell_task("a", ledger, ok(between(rng, 5, 10)), retry),
                 shell_task("b", ledger, ok(between(rng, 5, 10)), deps({"a"}) + ", " + retry),
                 shell_task("c", ledger, ok(between(rng, 5, 10)), deps({"b"}) + ", " + retry)});
    case KindId::STOP: {
      TaskBehaviour b;
      b.mode = TaskBehaviour::FOREVER;
      return workflow(name, {shell_task("t", ledger, b, retry_unless_5)});
    }
    case KindId::RERUN:
      return workflow(name, {shell_task("a", ledger, ok(2), retry),
                             shell_task("b", ledger, ok(3), deps({"a"}) + ", " + retry),
                             shell_task("c", ledger, ok(3), deps({"a"}) + ", " + retry),
                             shell_task("d", ledger, ok(2), deps({"b", "c"}) + ", " + retry)});
    case KindId::LONG:
      return workflow(
          name,
          {shell_task("t", ledger, ok(between(rng, 80, 150), true),
                      R"("timeouts": {"scheduleToClose": "10m", "heartbeat": "3s"}, )" + retry)});
    case KindId::SESSION: {
      // One session of four tasks (two in parallel), recreated on another worker when its own
      // is lost; its env actions write nothing to the ledger (they are no task's invocation).
      std::string out = workflow(
          name, {shell_task("a", ledger, ok(between(rng, 3, 10)), retry),
                 shell_task("b", ledger, ok(between(rng, 5, 30), true), deps({"a"}) + ", " + retry),
                 shell_task("c", ledger, ok(between(rng, 3, 10)), deps({"a"}) + ", " + retry),
                 shell_task("d", ledger, ok(2), deps({"b", "c"}) + ", " + retry)});
      out.pop_back();  // the closing brace: the session follows
      return out + R"(, "sessions": [{"name": "s", "tasks": ["a", "b", "c", "d"], "onFailure": "recreate", )"
                   R"("maxRecreates": 20, "envEnter": {"shell": {"command": ["true"]}}, )"
                   R"("envExit": {"shell": {"command": ["true"]}}}]})";
    }
  }
  throw std::logic_error("unknown workflow kind");
}

Mix full_mix() {
  return {{KindId::CHAIN, 2},
          {KindId::FANOUT, 1},
          {KindId::RETRY_OK, 1},
          {KindId::RETRY_FAIL, 1},
          {KindId::START_TO_CLOSE_RETRIED, 1},
          {KindId::HEARTBEAT_TIMEOUT_RETRIED, 1},
          {KindId::SCHEDULE_TO_CLOSE, 1},
          {KindId::SCHEDULE_TO_START, 1},
          {KindId::HEARTBEAT, 1},
          {KindId::ASYNC, 1},
          {KindId::PAUSE_RESUME, 1},
          {KindId::STOP, 1},
          {KindId::RERUN, 1},
          {KindId::LONG, 2},
          {KindId::SESSION, 1}};
}

Mix worker_fault_mix() {
  return {{KindId::LONG, 5},     {KindId::CHAIN, 1}, {KindId::FANOUT, 1}, {KindId::HEARTBEAT, 1},
          {KindId::RETRY_OK, 1}, {KindId::STOP, 1},  {KindId::ASYNC, 1},  {KindId::RERUN, 1},
          {KindId::SESSION, 1}};
}

// ---- the watchdog -------------------------------------------------------------------------

Watchdog::Watchdog(milliseconds limit, std::function<void(const std::string&)> on_hang)
    : limit_(limit), on_hang_(std::move(on_hang)), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Watchdog::Guard::~Guard() {
  std::lock_guard lock(dog_.mutex_);
  dog_.watched_.erase(id_);
}

std::unique_ptr<Watchdog::Guard> Watchdog::watch(const std::string& what) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_++;
  watched_[id] = Watched{std::chrono::steady_clock::now() + limit_, what, false};
  return std::make_unique<Guard>(*this, id);
}

std::vector<std::string> Watchdog::hangs() const {
  std::lock_guard lock(mutex_);
  return hangs_;
}

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, milliseconds(100));
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::string> fired;
    for (auto& [id, w] : watched_) {
      if (!w.fired && now > w.deadline) {
        w.fired = true;
        const std::string what =
            w.what + " was not answered within " + std::to_string(limit_.count() / 1000) + " s";
        hangs_.push_back(std::to_string(now_us()) + " " + what);
        fired.push_back(what);
      }
    }
    lock.unlock();
    for (const auto& what : fired) on_hang_(what);
    lock.lock();
  }
}

// ---- the client threads -------------------------------------------------------------------

Workload::Workload(Options options, Watchdog& watchdog)
    : options_(std::move(options)), watchdog_(watchdog) {}

Workload::~Workload() {
  stop_submitting(std::chrono::steady_clock::now());
  join();
}

void Workload::start() {
  for (int c = 0; c < options_.clients; ++c) threads_.emplace_back([this, c] { drive(c); });
}

void Workload::stop_submitting(std::chrono::steady_clock::time_point deadline) {
  deadline_ns_ = deadline.time_since_epoch().count();
  submitting_ = false;
}

void Workload::join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

Order* Workload::next_order(int client, std::mt19937_64& rng, int& count) {
  int total = 0;
  for (const auto& [k, weight] : options_.mix) total += weight;
  int pick = between(rng, 1, total);
  KindId chosen = options_.mix.front().first;
  for (const auto& [k, weight] : options_.mix) {
    if (pick <= weight) {
      chosen = k;
      break;
    }
    pick -= weight;
  }
  auto order = std::make_unique<Order>();
  char number[16];
  std::snprintf(number, sizeof number, "%03d", ++count);
  order->id =
      options_.prefix + "-c" + std::to_string(client) + "-" + number + "-" + kind(chosen).name;
  order->kind = chosen;
  order->client = client;
  order->definition = definition(chosen, options_.ledger, options_.token_dir, rng);
  order->created_us = now_us();
  if (kind(chosen).control == Control::PAUSE_RESUME) {
    order->first_delay = milliseconds(between(rng, 200, 1500));
    order->second_delay = milliseconds(between(rng, 500, 2000));
  } else if (kind(chosen).control == Control::STOP) {
    order->first_delay = milliseconds(between(rng, 500, 3000));
  }
  std::lock_guard lock(mutex_);
  orders_.push_back(std::move(order));
  return orders_.back().get();
}

void Workload::drive(int client_index) {
  using client::GatewayClient;
  std::mt19937_64 rng(options_.seed * 1000003ULL + static_cast<uint64_t>(client_index) + 1);
  std::vector<Order*> mine;
  int count = 0;
  std::unique_ptr<GatewayClient> api;
  bool lost = false;
  const std::string who = "client " + std::to_string(client_index);
  auto note = [](Order& o, const std::string& what) {
    o.log.push_back(std::to_string(now_us()) + " " + what);
  };
  auto message = [](const Error& e) { return std::string(errc_name(e.code)) + ": " + e.message; };
  auto past_deadline = [&] {
    const int64_t d = deadline_ns_.load();
    return d != 0 && std::chrono::steady_clock::now().time_since_epoch().count() > d;
  };

  // One client call on `o`: `call` returns the answer; UNAVAILABLE means the connection is gone.
  auto control = [&](Order& o, GatewayClient::Control action,
                     const char* name) -> std::optional<Result<std::string>> {
    auto guard = watchdog_.watch(who + ": " + name + " " + o.id);
    auto r = api->control(o.id, action);
    note(o, std::string(name) + " -> " + (r ? *r : message(r.error())));
    if (!r && lost_connection(r.error())) {
      lost = true;
      return std::nullopt;
    }
    return r;
  };

  for (;;) {
    bool open = false;
    for (auto* o : mine) open = open || !o->ended;
    if ((!submitting_ && !open) || past_deadline()) break;
    if (!api) {
      client::ConnectOptions connect_options;
      connect_options.timeout = std::chrono::seconds(1);
      auto connected = GatewayClient::connect("127.0.0.1", options_.port, connect_options);
      if (!connected) {
        std::this_thread::sleep_for(milliseconds(50));
        continue;
      }
      api = std::move(*connected);
      lost = false;
      for (auto* o : mine) o->result_pending = false;
    }
    int in_flight = 0;
    for (auto* o : mine) in_flight += !o->ended;
    if (submitting_ && in_flight < options_.in_flight)
      mine.push_back(next_order(client_index, rng, count));

    for (auto* op : mine) {
      if (lost) break;
      Order& o = *op;
      const int64_t now = now_us();
      if (o.ended) continue;
      if (!o.acknowledged) {
        if (now < o.next_action_us) continue;
        ++o.start_calls;
        auto guard = watchdog_.watch(who + ": start " + o.id);
        auto r = api->start({o.definition, "", o.id, ""});
        note(o, "start -> " + (r ? *r : message(r.error())));
        if (r || (r.error().code == Errc::ALREADY_EXISTS && o.start_calls > 1)) {
          // ALREADY_EXISTS after a lost answer: the first call started it and it has closed.
          o.acknowledged = true;
          o.acknowledged_us = now_us();
          ++acknowledged_;
          o.next_action_us = o.acknowledged_us + o.first_delay.count() * 1000;
        } else if (lost_connection(r.error())) {
          lost = true;
        } else {
          o.next_action_us =
              now_us() + 500'000;  // refused (e.g. the scheduler cannot write): ask again
        }
        continue;
      }
      switch (kind(o.kind).control) {
        case Control::NONE:
          break;
        case Control::PAUSE_RESUME:
          if (!o.first_control_done && now >= o.next_action_us) {
            if (auto r = control(o, GatewayClient::Control::PAUSE, "pause")) {
              if (*r) {
                o.first_control_done = true;
                o.next_action_us = now_us() + o.second_delay.count() * 1000;
              } else if (r->error().code == Errc::NOT_ALLOWED_IN_STATE) {
                o.first_control_done = o.second_control_done = true;  // it ended: nothing to resume
              } else {
                o.next_action_us = now_us() + 500'000;
              }
            }
          } else if (o.first_control_done && !o.second_control_done && now >= o.next_action_us) {
            if (auto r = control(o, GatewayClient::Control::RESUME, "resume")) {
              if (*r || r->error().code == Errc::NOT_ALLOWED_IN_STATE) {
                o.second_control_done = true;
              } else {
                o.next_action_us = now_us() + 500'000;
              }
            }
          }
          break;
        case Control::STOP:
          if (!o.first_control_done && now >= o.next_action_us) {
            if (auto r = control(o, GatewayClient::Control::STOP, "stop")) {
              if (*r || r->error().code == Errc::NOT_ALLOWED_IN_STATE) {
                o.first_control_done = true;
              } else {
                o.next_action_us = now_us() + 500'000;
              }
            }
          }
          break;
        case Control::RERUN:
          if (!o.first_end.empty() && !o.rerun_done && now >= o.next_action_us) {
            auto guard = watchdog_.watch(who + ": rerun " + o.id);
            auto r = api->rerun(o.id, "b");
            note(o, "rerun --from b -> " + (r ? *r : message(r.error())));
            if (r || r.error().code == Errc::NOT_ALLOWED_IN_STATE) {
              // NOT_ALLOWED_IN_STATE: open again, so an earlier call whose answer was lost applied.
              o.rerun_done = true;
              o.result_pending = false;
            } else if (lost_connection(r.error())) {
              lost = true;
            } else if (r.error().code == Errc::INVALID_ARGUMENT ||
                       r.error().code == Errc::NOT_FOUND) {
              o.rerun_done =
                  true;  // refused for good: its end stays the first run's, which the checks see
              o.result_pending = false;
            } else {
              o.next_action_us = now_us() + 500'000;
            }
          }
          break;
        case Control::COMPLETE: {
          std::error_code ec;
          // Files are ID.TASK.ATTEMPT: a token is stale once a later attempt handed out its own.
          std::vector<std::string> files;
          for (const auto& entry : fs::directory_iterator(options_.token_dir, ec)) {
            const std::string file = entry.path().filename().string();
            if (file.rfind(o.id + ".", 0) == 0) files.push_back(file);
          }
          auto attempt_of = [](const std::string& file) {
            return std::atoi(file.substr(file.rfind('.') + 1).c_str());
          };
          int latest = 0;
          for (const auto& file : files) latest = std::max(latest, attempt_of(file));
          for (const auto& file : files) {
            if (o.tokens[file] || lost || now_us() < o.token_retry_us[file]) continue;
            std::ifstream in(options_.token_dir + "/" + file);
            std::string token((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
            auto guard = watchdog_.watch(who + ": complete " + file);
            auto r = api->complete_task(token, R"({"approved": true})");
            note(o, "complete " + file + " -> " + (r ? std::string("ok") : message(r.error())));
            if (r) {
              o.tokens[file] = true;
              o.accepted_tokens.insert(file);
              ++o.completed_tokens;
            } else if (lost_connection(r.error())) {
              ++o.unanswered_completions;
              lost = true;
            } else if (r.error().code == Errc::NOT_FOUND && attempt_of(file) < latest) {
              o.tokens[file] = true;  // that attempt is over: the later one has its own token
            } else if (r.error().code == Errc::NOT_FOUND) {
              // "No longer current", yet no later attempt handed out a token: ask again, and if
              // it is accepted later, it was current all along (the checks report that).
              ++o.token_not_found[file];
              o.token_retry_us[file] = now_us() + 500'000;
            } else if (r.error().code == Errc::NOT_ALLOWED_IN_STATE) {
              o.token_retry_us[file] = now_us() + 100'000;  // not handed off yet
            } else {
              o.tokens[file] =
                  true;  // refused for good (a forged token?): the workflow's end shows it
            }
          }

          break;
        }
      }
      if (lost) break;
      const bool rerun_waits =
          kind(o.kind).control == Control::RERUN && !o.first_end.empty() && !o.rerun_done;
      if (!o.result_pending && !rerun_waits && now_us() >= o.result_retry_us) {
        o.result_pending = true;
        api->result_async(o.id, [&, op](Result<client::WorkflowResult> r) {
          Order& w = *op;
          w.result_pending = false;
          if (!r) {
            note(w, "result -> " + message(r.error()));
            if (lost_connection(r.error())) {
              lost = true;
            } else {
              w.result_retry_us = now_us() + 1'000'000;
            }
            return;
          }
          note(w, "result -> " + r->state + (r->detail.empty() ? "" : ": " + r->detail));
          if (kind(w.kind).control == Control::RERUN && w.first_end.empty()) {
            w.first_end = r->state;
            if (r->state == "SUCCESS") {  // only a run that succeeded is rerun from a middle task
              w.next_action_us = now_us() + 200'000;
              return;
            }
          }
          w.ended = true;
          w.state = r->state;
          w.detail = r->detail;
          w.ended_us = now_us();
        });
      }
    }
    if (!lost) {
      auto ran = api->run(milliseconds(50));
      if (!ran && lost_connection(ran.error())) lost = true;
    }
    if (lost) {
      api.reset();  // outstanding callbacks are dropped with it
      for (auto* o : mine) o->result_pending = false;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
}

}  // namespace troupe::chaos
