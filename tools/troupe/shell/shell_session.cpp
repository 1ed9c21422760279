#include "tools/troupe/shell/shell_session.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "actors/system/actor_roster.hpp"
#include "schema/duration.hpp"
#include "tools/troupe/command_line.hpp"
#include "tools/troupe/exit_codes.hpp"
#include "tools/troupe/json.hpp"
#include "tools/troupe/task_table.hpp"

namespace troupe::cli {
namespace {

/// A shell command's words: positionals, and its options (`--name value`, `--name=value`, or a
/// flag named in `flags`).
struct Words {
  std::vector<std::string> positionals;
  std::map<std::string, std::string> options;
};

Result<Words> parse_words(const std::vector<std::string>& words, const std::set<std::string>& valued,
                          const std::set<std::string>& flags) {
  Words out;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) != 0) {
      out.positionals.push_back(w);
      continue;
    }
    std::string name = w.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (valued.count(name)) {
      if (i + 1 >= words.size()) return fail(Errc::INVALID_ARGUMENT, "--" + name + " needs a value");
      value = words[++i];
    } else {
      value = "true";
    }
    if (!valued.count(name) && !flags.count(name)) {
      return fail(Errc::INVALID_ARGUMENT, words[0] + " has no option --" + name);
    }
    out.options[name] = value;
  }
  return out;
}

Result<uint64_t> number_option(const Words& w, const std::string& name, uint64_t fallback) {
  auto it = w.options.find(name);
  if (it == w.options.end()) return fallback;
  try {
    size_t used = 0;
    const unsigned long long n = std::stoull(it->second, &used);
    if (used == it->second.size()) return static_cast<uint64_t>(n);
  } catch (...) {
  }
  return fail(Errc::INVALID_ARGUMENT, "--" + name + " takes a number, not '" + it->second + "'");
}

/// "12s": how long ago `us` was.
std::string age(int64_t us) {
  if (us <= 0) return "-";
  return short_duration(std::max<int64_t>(0, wall_clock_us() - us));
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

Json actor_json(const client::ActorRow& a) {
  Json j = Json::object();
  j.set("kind", a.kind);
  j.set("id", a.id);
  j.set("state", a.state);
  j.set("mailbox", a.mailbox);
  j.set("timers", static_cast<int64_t>(a.timers));
  j.set("startedUs", a.started_us);
  j.set("waitsFor", a.waits_for);
  j.set("error", a.error);
  return j;
}

Json event_json(const client::WatchedEvent& e) {
  Json j = Json::object();
  j.set("sequence", e.sequence);
  j.set("timestampUs", e.timestamp_us);
  j.set("actorKind", e.actor_kind);
  j.set("actorId", e.actor_id);
  j.set("attempt", static_cast<int64_t>(e.attempt));
  j.set("kind", e.kind);
  j.set("detail", e.detail);
  return j;
}

void print_event(std::ostream& out, const client::WatchedEvent& e) {
  out << "  " << pad(std::to_string(e.sequence), 6) << utc_time(e.timestamp_us) << "  "
      << pad(e.actor_kind + " " + e.actor_id + (e.attempt ? " #" + std::to_string(e.attempt) : ""), 32) << e.kind
      << (e.detail.empty() ? "" : " " + e.detail) << "\n";
}

void print_actor_rows(std::ostream& out, const std::vector<client::ActorRow>& rows) {
  out << pad("KIND", 11) << pad("ID", 44) << pad("STATE", 16) << pad("MAILBOX", 8) << pad("TIMERS", 7) << pad("AGE", 8)
      << "WAITS FOR\n";
  for (const auto& a : rows) {
    out << pad(a.kind, 11) << pad(a.id, 44) << pad(a.error.empty() ? a.state : "?", 16)
        << pad(std::to_string(a.mailbox), 8) << pad(std::to_string(a.timers), 7) << pad(age(a.started_us), 8)
        << (a.error.empty() ? a.waits_for : "did not answer: " + a.error) << "\n";
  }
}

int complain(std::ostream& err, const Error& error) {
  err << "error: " << error.message << "\n";
  return exit_code_of(error);
}

}  // namespace

Result<std::vector<std::string>> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::string current;
  bool in_word = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        current += c;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::exchange(current, {}));
      in_word = false;
    } else {
      current += c;
      in_word = true;
    }
  }
  if (quote) return fail(Errc::INVALID_ARGUMENT, std::string("a quote (") + quote + ") is not closed");
  if (in_word) words.push_back(current);
  return words;
}

template <class Call>
auto ShellSession::on_admin(Call call) -> decltype(call(std::declval<client::AdminClient&>())) {
  auto result = call(*admin_);
  if (result || result.error().code != Errc::UNAVAILABLE || !reconnect_) return result;
  auto again = reconnect_();
  if (!again) return result;
  admin_ = std::move(*again);
  return call(*admin_);
}

ShellSession::ShellSession(std::unique_ptr<client::AdminClient> admin, std::vector<std::string> connection, bool json)
    : admin_(std::move(admin)), connection_(std::move(connection)), json_(json), cli_(command_table()) {
  commands_ = {
      {"actors", "actors [KIND] [--sort kind|mailbox|age] [--limit N]", "every live actor, probed now",
       "Lists the scheduler's live actors of KIND (workflow, task, session, worker, matching, directory, "
       "dispatcher; default: all), each probed now: its state, the messages waiting in its mailbox, its pending "
       "timers, its age, and what it waits for. An actor that does not answer within 2s is listed as such: busy "
       "in one long step, or stuck. The last line counts live actors by kind and the passivated workflows (open, "
       "with no actor until something wakes them). --sort mailbox puts the deepest mailbox first, --sort age the "
       "oldest actor; --limit N shows at most N (default 1000).",
       "kind"},
      {"actor", "actor ID", "one actor: state, model, timers, last events",
       "Shows one live actor: ID is a workflow id, WORKFLOW/TASK, WORKFLOW/SESSION, a worker's name, a task list, "
       "`directory` or `dispatcher`. Its state and what it waits for, its model, its timers with when each is "
       "due, and the last events of its history (a worker's: its journal).",
       "actor"},
      {"diagnose", "diagnose WORKFLOW", "why a workflow is not moving",
       "Says why WORKFLOW is not moving: one line first, then what the workflow and each of its open tasks and "
       "sessions waits for: its history being written, a worker slot in its task list and why none is free (no "
       "live worker serves the list, all busy, a rate limit, draining workers), its retry backoff, its session "
       "finding a worker, an operator's resume, a worker to finish it.",
       "workflow"},
      {"history", "history WORKFLOW [--from N] [--limit N]", "a workflow's recorded events",
       "Prints WORKFLOW's history from event N (default 1), at most --limit events (default 1000).", "workflow"},
      {"workflows", "workflows [--state S] [--definition NAME] [--limit N]", "workflows, newest first",
       "Lists workflows, newest first, as `troupe list` does, with its filters.", ""},
      {"tasklists", "tasklists", "queues, credits and rate limits of every task list",
       "Every task list the scheduler dispatches: the tasks waiting by priority (and those waiting for their "
       "session's worker), each worker's slots in use, the list's rate limit, and why its waiting tasks wait.",
       ""},
      {"sessions", "sessions", "every live session", "Every live session actor: its state and what it waits for.",
       ""},
      {"store", "store", "the history store's engine and group commit",
       "The history store: its live data and SST files, memtables, pending compaction, running compactions and "
       "flushes, write stalls, and its group commit's batches (each one sync).",
       ""},
      {"help", "help [COMMAND]", "the commands, or one command's help", "", "command"},
      {"quit", "quit", "leave the shell (also: exit, Ctrl-D)", "", ""},
  };
}

int ShellSession::run(const std::string& line, std::ostream& out, std::ostream& err) {
  auto split = split_words(line);
  if (!split) return complain(err, split.error());
  const auto& words = *split;
  if (words.empty()) return exit_ok;
  const std::string& name = words[0];
  if (name == "quit" || name == "exit") {
    quit_ = true;
    return exit_ok;
  }
  if (name == "help") {
    if (words.size() > 1) {
      for (const auto& c : commands_) {
        if (c.name == words[1]) {
          out << c.usage << "\n  " << c.summary << "\n" << (c.help.empty() ? "" : "\n" + c.help + "\n");
          return exit_ok;
        }
      }
      // The CLI's own help for the commands passed through to it.
      std::vector<std::string> help = {"help"};
      help.insert(help.end(), words.begin() + 1, words.end());
      return run_command_line(help, cli_);
    }
    out << "Commands of the admin shell:\n";
    for (const auto& c : commands_) out << "  " << pad(c.usage, 58) << c.summary << "\n";
    out << "\nAnd every troupe command that talks to a scheduler, e.g.:\n";
    for (const auto& spec : cli_) {
      if (spec.connects && spec.run && spec.path != "shell") out << "  " << pad(spec.path, 58) << spec.summary << "\n";
    }
    out << "\n`help COMMAND` for one command; Tab completes commands and ids.\n";
    return exit_ok;
  }

  auto usage = [&](const std::string& why) {
    err << "error: " << why << "\n";
    return exit_usage;
  };
  // The shell's --json, or the command's own.
  auto wants_json = [&](const Words& w) { return json_ || w.options.count("json") > 0; };

  if (name == "actors" || name == "sessions") {
    auto w = parse_words(words, {"sort", "limit"}, {"json"});
    if (!w) return usage(w.error().message);
    const bool json = wants_json(*w);
    auto limit = number_option(*w, "limit", 0);
    if (!limit) return usage(limit.error().message);
    std::string kind = name == "sessions" ? "session" : (w->positionals.empty() ? "" : w->positionals[0]);
    if (w->positionals.size() > (name == "sessions" ? 0u : 1u)) return usage(name + " takes at most one KIND");
    client::ActorSort sort = client::ActorSort::KIND;
    if (auto s = w->options.find("sort"); s != w->options.end()) {
      if (s->second == "mailbox") {
        sort = client::ActorSort::MAILBOX;
      } else if (s->second == "age") {
        sort = client::ActorSort::AGE;
      } else if (s->second != "kind") {
        return usage("--sort takes kind, mailbox or age, not '" + s->second + "'");
      }
    }
    auto list = on_admin([&](client::AdminClient& admin) { return admin.actors(kind, sort, static_cast<uint32_t>(*limit)); });
    if (!list) return complain(err, list.error());
    if (json) {
      Json j = Json::object();
      Json actors = Json::array();
      for (const auto& a : list->actors) actors.push(actor_json(a));
      j.set("actors", std::move(actors));
      Json counts = Json::object();
      for (const auto& [k, n] : list->counts) counts.set(k, n);
      j.set("live", std::move(counts));
      j.set("passivatedWorkflows", list->passivated_workflows);
      out << j.dump() << "\n";
      return exit_ok;
    }
    print_actor_rows(out, list->actors);
    out << "live:";
    for (const auto& [k, n] : list->counts) out << " " << n << " " << k;
    out << "; passivated workflows: " << list->passivated_workflows << "\n";
    return exit_ok;
  }

  if (name == "actor") {
    auto w = parse_words(words, {}, {"json"});
    if (!w) return usage(w.error().message);
    if (w->positionals.size() != 1) return usage("actor takes one ID");
    auto a = on_admin([&](client::AdminClient& admin) { return admin.actor(w->positionals[0]); });
    if (!a) return complain(err, a.error());
    if (wants_json(*w)) {
      Json j = actor_json(a->summary);
      Json fields = Json::object();
      for (const auto& [k, v] : a->fields) fields.set(k, v);
      j.set("fields", std::move(fields));
      Json timers = Json::array();
      for (const auto& t : a->timers) timers.push(Json::object().set("what", t.what).set("atUs", t.at_us));
      j.set("timerList", std::move(timers));
      Json events = Json::array();
      for (const auto& e : a->events) events.push(event_json(e));
      j.set("events", std::move(events));
      out << j.dump() << "\n";
      return exit_ok;
    }
    const auto& s = a->summary;
    out << s.kind << " " << s.id << "  " << (s.error.empty() ? s.state : "did not answer: " + s.error) << "  mailbox "
        << s.mailbox << "  started " << utc_time(s.started_us) << " (" << age(s.started_us) << " ago)\n";
    if (!s.waits_for.empty()) out << "waits for: " << s.waits_for << "\n";
    for (const auto& [k, v] : a->fields) out << "  " << pad(k + ":", 28) << v << "\n";
    if (!a->timers.empty()) {
      out << "timers:\n";
      for (const auto& t : a->timers) {
        out << "  " << pad(t.what, 28) << (t.at_us ? utc_time(t.at_us) : "-") << "\n";
      }
    }
    if (!a->events.empty()) {
      out << "last events:\n";
      for (const auto& e : a->events) print_event(out, e);
    }
    return exit_ok;
  }

  if (name == "diagnose") {
    auto w = parse_words(words, {}, {"json"});
    if (!w) return usage(w.error().message);
    if (w->positionals.size() != 1) return usage("diagnose takes one WORKFLOW");
    auto d = on_admin([&](client::AdminClient& admin) { return admin.diagnose(w->positionals[0]); });
    if (!d) return complain(err, d.error());
    if (wants_json(*w)) {
      Json j = Json::object();
      j.set("workflowId", d->workflow_id);
      j.set("state", d->state);
      j.set("live", d->live);
      j.set("summary", d->summary);
      Json blockers = Json::array();
      for (const auto& b : d->blockers) {
        blockers.push(Json::object().set("subject", b.subject).set("state", b.state).set("waitsFor", b.waits_for));
      }
      j.set("blockers", std::move(blockers));
      out << j.dump() << "\n";
      return exit_ok;
    }
    out << d->workflow_id << " " << d->state << (d->live ? "" : " (no actor)") << ": " << d->summary << "\n";
    for (const auto& b : d->blockers) {
      out << "  " << pad(b.subject, 28) << pad(b.state, 16) << b.waits_for << "\n";
    }
    return exit_ok;
  }

  if (name == "history") {
    auto w = parse_words(words, {"from", "limit"}, {"json"});
    if (!w) return usage(w.error().message);
    if (w->positionals.size() != 1) return usage("history takes one WORKFLOW");
    auto from = number_option(*w, "from", 1);
    auto limit = number_option(*w, "limit", 0);
    if (!from) return usage(from.error().message);
    if (!limit) return usage(limit.error().message);
    auto page = on_admin([&](client::AdminClient& admin) { return admin.history(w->positionals[0], *from, static_cast<uint32_t>(*limit)); });
    if (!page) return complain(err, page.error());
    if (wants_json(*w)) {
      Json events = Json::array();
      for (const auto& e : page->events) events.push(event_json(e));
      out << Json::object().set("events", std::move(events)).set("lastSequence", page->last_sequence).dump() << "\n";
      return exit_ok;
    }
    for (const auto& e : page->events) print_event(out, e);
    out << page->events.size() << " events shown; the history has " << page->last_sequence << "\n";
    return exit_ok;
  }

  if (name == "tasklists") {
    auto w = parse_words(words, {}, {"json"});
    if (!w) return usage(w.error().message);
    auto lists = on_admin([&](client::AdminClient& admin) { return admin.task_lists(); });
    if (!lists) return complain(err, lists.error());
    if (wants_json(*w)) {
      Json all = Json::array();
      for (const auto& l : *lists) {
        Json queued = Json::array();
        for (const auto& [p, n] : l.queued) queued.push(Json::object().set("priority", p).set("queued", n));
        Json workers = Json::array();
        for (const auto& wk : l.workers) {
          workers.push(Json::object().set("worker", wk.name).set("slots", static_cast<int64_t>(wk.slots)).set(
              "inUse", static_cast<int64_t>(wk.used)));
        }
        all.push(Json::object()
                     .set("name", l.name)
                     .set("queued", std::move(queued))
                     .set("sessionQueued", l.session_queued)
                     .set("workers", std::move(workers))
                     .set("rate", l.rate)
                     .set("burst", static_cast<int64_t>(l.burst))
                     .set("waitReason", l.wait_reason));
      }
      out << Json::object().set("taskLists", std::move(all)).dump() << "\n";
      return exit_ok;
    }
    out << pad("TASK LIST", 16) << pad("QUEUED", 18) << pad("WORKERS (in use/slots)", 34) << pad("RATE", 12)
        << "WAITING BECAUSE\n";
    for (const auto& l : *lists) {
      std::string queued;
      for (const auto& [p, n] : l.queued) queued += (queued.empty() ? "" : " ") + std::to_string(n) + "@p" + std::to_string(p);
      if (l.session_queued) queued += (queued.empty() ? "" : " ") + std::to_string(l.session_queued) + " session";
      std::string workers;
      for (const auto& wk : l.workers) {
        workers += (workers.empty() ? "" : " ") + wk.name + " " + std::to_string(wk.used) + "/" + std::to_string(wk.slots);
      }
      char rate[32] = "-";
      if (l.rate > 0) std::snprintf(rate, sizeof rate, "%g/s b%u", l.rate, l.burst);
      out << pad(l.name, 16) << pad(queued.empty() ? "0" : queued, 18) << pad(workers.empty() ? "none" : workers, 34)
          << pad(rate, 12) << l.wait_reason << "\n";
    }
    return exit_ok;
  }

  if (name == "store") {
    auto w = parse_words(words, {}, {"json"});
    if (!w) return usage(w.error().message);
    auto s = on_admin([&](client::AdminClient& admin) { return admin.store(); });
    if (!s) return complain(err, s.error());
    if (wants_json(*w)) {
      Json engine = Json::object();
      for (const auto& [k, v] : s->engine) engine.set(k, v);
      out << Json::object()
                 .set("engine", std::move(engine))
                 .set("batches", s->batches)
                 .set("operations", s->operations)
                 .set("largestBatch", s->largest_batch)
                 .set("events", s->events)
                 .set("bytesWritten", s->bytes_written)
                 .dump()
          << "\n";
      return exit_ok;
    }
    for (const auto& [k, v] : s->engine) out << pad(k + ":", 40) << v << "\n";
    out << pad("group-commit batches:", 40) << s->batches << "\n";
    out << pad("operations in them:", 40) << s->operations << "\n";
    if (s->batches) {
      char average[32];
      std::snprintf(average, sizeof average, "%.1f", static_cast<double>(s->operations) / static_cast<double>(s->batches));
      out << pad("average batch:", 40) << average << "\n";
    }
    out << pad("largest batch:", 40) << s->largest_batch << "\n";
    out << pad("events appended:", 40) << s->events << "\n";
    out << pad("bytes written:", 40) << s->bytes_written << "\n";
    return exit_ok;
  }

  // Everything else is a troupe command that talks to the scheduler, run with the shell's
  // connection (and --json when the shell answers in JSON and the command can).
  std::vector<std::string> cli_words = words;
  if (name == "workflows") cli_words[0] = "list";
  const CommandSpec* spec = nullptr;
  for (const auto& s : cli_) {
    const bool two_words = cli_words.size() > 1 && s.path == cli_words[0] + " " + cli_words[1];
    if ((s.path == cli_words[0] || two_words) && (!spec || two_words)) spec = &s;
  }
  if (!spec || !spec->connects || spec->path == "shell") {
    return usage("no shell command '" + name + "' (help lists them)");
  }
  const bool has_json = std::any_of(spec->options.begin(), spec->options.end(), [](auto& o) { return o.name == "json"; });
  if (json_ && has_json && std::find(cli_words.begin(), cli_words.end(), "--json") == cli_words.end()) {
    cli_words.push_back("--json");
  }
  cli_words.insert(cli_words.end(), connection_.begin(), connection_.end());
  out.flush();
  return run_command_line(cli_words, cli_);
}

std::vector<std::string> ShellSession::complete(const std::vector<std::string>& before, const std::string& prefix) {
  std::set<std::string> candidates;
  auto add = [&](const std::string& word) {
    if (word.compare(0, prefix.size(), prefix) == 0) candidates.insert(word);
  };
  if (before.empty()) {
    for (const auto& c : commands_) add(c.name);
    add("exit");
    for (const auto& s : cli_) {
      if (s.connects && s.run && s.path.find(' ') == std::string::npos && s.path != "shell") add(s.path);
    }
    return {candidates.begin(), candidates.end()};
  }
  std::string completes;
  for (const auto& c : commands_) {
    if (c.name == before[0]) completes = c.completes;
  }
  if (completes.empty()) {
    // The CLI's commands take workflow ids first, and worker names after `worker ...`.
    completes = before[0] == "worker" || before[0] == "workers" ? "worker" : "workflow";
  }
  if (completes == "command") {
    for (const auto& c : commands_) add(c.name);
  } else if (completes == "kind") {
    for (const auto& k : actors::actor_kinds()) add(k);
  } else if (completes == "worker" && before[0] == "worker" && before.size() == 1) {
    for (const char* k : {"drain", "undrain", "forgive"}) add(k);
  } else {
    // Ids come from the live actors: workflows (and their tasks and sessions for `actor`),
    // workers, task lists; and workflows from the index, which has those without an actor.
    // The roster's ids, unprobed: a Tab costs the scheduler no message to any actor.
    const std::string kind = completes == "workflow" ? "workflow" : completes == "worker" ? "worker" : "";
    if (auto ids = on_admin([&](client::AdminClient& admin) { return admin.ids(kind, prefix, 0); })) {
      for (const auto& id : *ids) add(id);
    }
    if (completes == "workflow" && indexed_) {
      for (const auto& id : indexed_()) add(id);
    }
  }
  return {candidates.begin(), candidates.end()};
}

}  // namespace troupe::cli
