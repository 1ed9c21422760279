// Cluster config TOML -> ClusterConfig. toml++ parses the text (a syntax error ends the check
// there); then the document is walked against the format, collecting every problem with its key
// path and line; last come the rules across keys (heartbeat ordering, duplicate node names,
// what each role requires). The only file that reads TOML (`troupe dev` writes it with toml++).
#include "runtime/config/cluster_config.hpp"

#include <arpa/inet.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <sstream>

#include "schema/suggest.hpp"

namespace troupe::runtime {
namespace {

namespace fs = std::filesystem;
using Names = std::span<const std::string_view>;

constexpr std::string_view top_keys[] = {"cluster", "connections", "task_lists", "limits", "node"};
constexpr std::string_view connection_keys[] = {"max_connections",       "max_connections_per_peer",
                                                "handshake_timeout",     "idle_timeout",
                                                "max_unadmitted_bytes",  "max_message_bytes",
                                                "max_calls_in_flight_bytes"};
constexpr std::string_view cluster_keys[] = {"name",
                                             "token_file",
                                             "heartbeat_interval",
                                             "unhealthy_after",
                                             "must_die_after",
                                             "replace_unhealthy_workers",
                                             "kill_grace",
                                             "shutdown_grace",
                                             "quarantine_failures",
                                             "quarantine_backoff",
                                             "quarantine_max_backoff",
                                             "recovery_window",
                                             "worker_lease",
                                             "retention",
                                             "tls_ca",
                                             "plaintext",
                                             "require_client_certificates"};
constexpr std::string_view limit_keys[] = {"rate", "burst"};
constexpr std::string_view input_limit_keys[] = {"definition_size", "tasks_per_workflow", "workflow_id_length",
                                                 "name_length",     "input_size",         "result_size"};
constexpr std::string_view node_keys[] = {"name",       "roles",       "listen",
                                          "data_dir",   "sync",        "scheduler",
                                          "task_lists", "resource_id", "max_concurrent_sessions",
                                          "rate",       "log_dir",     "log_cap",
                                          "actor_threads", "definitions", "workflow_cache",
                                          "metrics",    "log_level",   "log_format",
                                          "tls_certificate", "tls_key"};
/// Keys that only mean something on a node with the scheduler role, resp. the worker role.
constexpr std::string_view scheduler_only_keys[] = {"listen", "sync", "definitions", "workflow_cache"};
constexpr std::string_view worker_only_keys[] = {
    "scheduler", "task_lists", "resource_id", "max_concurrent_sessions",
    "rate",      "log_dir",    "log_cap"};
constexpr std::string_view role_names[] = {"scheduler", "worker"};

constexpr uint64_t min_log_cap = 1024;
constexpr int64_t max_u32 = std::numeric_limits<uint32_t>::max();

bool contains(Names names, std::string_view s) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

/// `s` in double quotes, with quotes, backslashes and control characters escaped, so a
/// problem stays on one line whatever the user wrote.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string list(Names names) {
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

/// A size as a config writes it: "48MiB", "1KiB", else "1000 bytes".
std::string format_size(uint64_t bytes) {
  if (bytes == 0) return "0 bytes";
  for (auto [unit, shift] : {std::pair{"GiB", 30}, std::pair{"MiB", 20}, std::pair{"KiB", 10}}) {
    if (bytes % (uint64_t{1} << shift) == 0) return std::to_string(bytes >> shift) + unit;
  }
  return std::to_string(bytes) + " bytes";
}

std::string format_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

/// "a.b" for a bare key, a."x y" for one that needs quotes in TOML.
std::string join(const std::string& parent, std::string_view key) {
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  std::string k = bare ? std::string(key) : quote(key);
  return parent.empty() ? k : parent + "." + k;
}

std::string index_path(std::string_view parent, size_t i) {
  return std::string(parent) + "[" + std::to_string(i) + "]";
}

/// Names of nodes, task lists and the cluster: [A-Za-z0-9._-]{1,64}.
bool valid_name(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

/// The candidate closest to `word` if it is a near miss (a typo), else nullopt.
std::optional<std::string> near_miss(std::string_view word, Names candidates) {
  return troupe::near_miss(word, std::vector<std::string>(candidates.begin(), candidates.end()));
}

std::string kind(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

int line_of(const toml::source_region& r, int fallback) {
  return r.begin.line > 0 ? static_cast<int>(r.begin.line) : fallback;
}

/// IPv4 dotted quad, strict: four decimal parts 0-255 without leading zeros.
bool valid_ipv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (true) {
    const size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    const size_t len = i - start;
    if (len == 0 || len > 3 || (len > 1 && s[start] == '0')) return false;
    if (std::stoi(std::string(s.substr(start, len))) > 255) return false;
    ++parts;
    if (i == s.size()) return parts == 4;
    if (s[i] != '.' || parts == 4) return false;
    ++i;
  }
}

/// RFC 1123 hostname: dot-separated labels of letters, digits and '-', 1-63 characters each,
/// not starting or ending with '-'; 253 characters at most.
bool valid_hostname(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t end = s.find('.', start);
    if (end == std::string_view::npos) end = s.size();
    const std::string_view label = s.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    if (end == s.size()) return true;
    start = end + 1;
  }
}

/// A problem: its line (0 when it has none) and its full text "FILE:LINE: path: message".
struct Problem {
  int line;
  std::string text;
};

/// One key of a table: its value (nullptr when absent), the line of the key (or of the table
/// when absent) and its key path.
struct Field {
  const toml::node* node = nullptr;
  int line = 0;
  std::string path;

  explicit operator bool() const { return node != nullptr; }
};

Field field(const toml::table& t, std::string_view key, const std::string& parent, int table_line) {
  auto it = t.find(key);
  if (it == t.end()) return {nullptr, table_line, join(parent, key)};
  return {&it->second, line_of(it->first.source(), line_of(it->second.source(), table_line)),
          join(parent, key)};
}

/// Walks a parsed document, building the config and collecting problems.
class Checker {
 public:
  Checker(std::string source, std::string base_dir)
      : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  Result<ClusterConfig> check(const toml::table& root) {
    ClusterConfig config;
    config.source_path = source_;
    check_keys(root, "", top_keys);
    read_cluster(root, config);
    read_connections(root, config);
    read_task_lists(root, config);
    read_limits(root, config);
    check_submission_fits(root, config);
    read_nodes(root, config);
    check_tls(root, config);
    if (problems_.empty()) return config;
    std::stable_sort(problems_.begin(), problems_.end(),
                     [](const Problem& a, const Problem& b) { return a.line < b.line; });
    std::string message;
    for (const auto& p : problems_) message += (message.empty() ? "" : "\n") + p.text;
    return fail(Errc::INVALID_ARGUMENT, std::move(message));
  }

 private:
  void problem(int line, const std::string& path, const std::string& message) {
    std::string text = source_;
    if (line > 0) text += ":" + std::to_string(line);
    text += ": ";
    if (!path.empty()) text += path + ": ";
    text += message;
    problems_.push_back({line, std::move(text)});
  }

  void missing(int line, const std::string& table_path, std::string_view key,
               const std::string& why) {
    problem(line, table_path, "missing required key " + quote(key) + " (" + why + ")");
  }

  void check_keys(const toml::table& t, const std::string& path, Names known) {
    for (auto&& [key, value] : t) {
      if (contains(known, key.str())) continue;
      std::string message = "unknown key";
      if (auto near = near_miss(key.str(), known)) {
        message += " (did you mean " + quote(*near) + "?)";
      } else {
        message += " (expected one of: " + list(known) + ")";
      }
      problem(line_of(key.source(), line_of(value.source(), 0)), join(path, key.str()), message);
    }
  }

  void wrong_type(const Field& f, const std::string& expected) {
    problem(f.line, f.path, "must be " + expected + ", not " + kind(*f.node));
  }

  std::optional<std::string> string_value(const Field& f) {
    if (!f) return std::nullopt;
    if (const auto* s = f.node->as_string()) return s->get();
    wrong_type(f, "a string");
    return std::nullopt;
  }

  /// A string naming something ([A-Za-z0-9._-]{1,64}); `what` is "node name" etc.
  std::optional<std::string> name_value(const Field& f, const std::string& what) {
    auto s = string_value(f);
    if (s && !valid_name(*s)) {
      problem(f.line, f.path,
              "bad " + what + " " + quote(*s) + " (expected 1-64 of A-Z a-z 0-9 . _ -)");
      return std::nullopt;
    }
    return s;
  }

  std::optional<bool> bool_value(const Field& f) {
    if (!f) return std::nullopt;
    if (const auto* b = f.node->as_boolean()) return b->get();
    wrong_type(f, "true or false");
    return std::nullopt;
  }

  std::optional<int64_t> integer_value(const Field& f, int64_t lo, int64_t hi) {
    if (!f) return std::nullopt;
    const auto* i = f.node->as_integer();
    if (i == nullptr) {
      wrong_type(f, "an integer");
      return std::nullopt;
    }
    const int64_t v = i->get();
    if (v < lo) {
      problem(f.line, f.path,
              "must be at least " + std::to_string(lo) + ", not " + std::to_string(v));
      return std::nullopt;
    }
    if (v > hi) {
      problem(f.line, f.path,
              "must be at most " + std::to_string(hi) + ", not " + std::to_string(v));
      return std::nullopt;
    }
    return v;
  }

  /// A rate in tasks per second: an integer or float, finite, > 0.
  std::optional<double> rate_value(const Field& f) {
    if (!f) return std::nullopt;
    double v = 0;
    if (const auto* d = f.node->as_floating_point()) {
      v = d->get();
    } else if (const auto* i = f.node->as_integer()) {
      v = static_cast<double>(i->get());
    } else {
      wrong_type(f, "a number of tasks per second");
      return std::nullopt;
    }
    if (!std::isfinite(v) || v <= 0) {
      problem(f.line, f.path,
              "must be a number of tasks per second greater than 0, not " + format_number(v));
      return std::nullopt;
    }
    return v;
  }

  /// A duration string longer than zero (or zero, if `zero_allowed`).
  std::optional<Duration> duration_value(const Field& f, bool zero_allowed = false) {
    if (!f) return std::nullopt;
    const auto* s = f.node->as_string();
    if (s == nullptr) {
      wrong_type(f, "a duration string such as \"1s\" or \"500ms\"");
      return std::nullopt;
    }
    auto d = parse_duration(s->get());
    if (!d) {
      problem(f.line, f.path, d.error().message);
      return std::nullopt;
    }
    if (d->count() < 0 || (d->count() == 0 && !zero_allowed)) {
      problem(f.line, f.path, std::string(zero_allowed ? "must not be negative" : "must be longer than zero") +
                                  ", not " + quote(s->get()));
      return std::nullopt;
    }
    return *d;
  }

  /// A HOST:PORT; `bind`: one to serve on, where port 0 picks a free port.
  std::optional<Address> address_value(const Field& f, bool bind = false) {
    auto s = string_value(f);
    if (!s) return std::nullopt;
    auto a = bind ? parse_bind_address(*s) : parse_address(*s);
    if (!a) {
      problem(f.line, f.path, a.error().message);
      return std::nullopt;
    }
    return *a;
  }

  /// A non-empty path, resolved against the config file's directory.
  std::optional<std::string> path_value(const Field& f) {
    auto s = string_value(f);
    if (!s) return std::nullopt;
    if (s->empty()) {
      problem(f.line, f.path, "must not be empty (expected a path)");
      return std::nullopt;
    }
    return resolve(*s);
  }

  std::string resolve(const std::string& p) const {
    fs::path path(p);
    if (path.is_relative() && !base_dir_.empty()) path = fs::path(base_dir_) / path;
    path = path.lexically_normal();
    if (!path.has_filename() && path.has_relative_path()) path = path.parent_path();
    return path.string();
  }

  std::optional<uint64_t> size_value(const Field& f) {
    if (!f) return std::nullopt;
    uint64_t bytes = 0;
    if (const auto* i = f.node->as_integer()) {
      if (i->get() < 0) {
        problem(f.line, f.path, "must be a size, not " + std::to_string(i->get()));
        return std::nullopt;
      }
      bytes = static_cast<uint64_t>(i->get());
    } else if (const auto* s = f.node->as_string()) {
      auto parsed = parse_byte_size(s->get());
      if (!parsed) {
        problem(f.line, f.path, parsed.error().message);
        return std::nullopt;
      }
      bytes = *parsed;
    } else {
      wrong_type(f, "a size such as \"16MiB\" or a number of bytes");
      return std::nullopt;
    }
    return bytes;
  }

  /// The table at `f`, or nullptr with a problem recorded (none when absent).
  const toml::table* table_value(const Field& f, const std::string& expected) {
    if (!f) return nullptr;
    if (const auto* t = f.node->as_table()) return t;
    wrong_type(f, expected);
    return nullptr;
  }

  // --- [cluster] ---------------------------------------------------------------------------

  void read_cluster(const toml::table& root, ClusterConfig& out) {
    const Field f = field(root, "cluster", "", 0);
    if (!f) {
      problem(0, "", "missing required table [cluster] (it names the cluster: name = \"...\")");
      return;
    }
    const auto* t = table_value(f, "a table ([cluster])");
    if (t == nullptr) return;
    const int line = line_of(t->source(), f.line);
    check_keys(*t, "cluster", cluster_keys);

    const Field name = field(*t, "name", "cluster", line);
    if (!name) missing(line, "cluster", "name", "the cluster's name");
    if (auto s = name_value(name, "cluster name")) out.name = *s;
    if (auto p = path_value(field(*t, "token_file", "cluster", line))) out.token_file = *p;
    if (auto p = path_value(field(*t, "tls_ca", "cluster", line))) out.tls_ca = *p;
    if (auto b = bool_value(field(*t, "plaintext", "cluster", line))) out.plaintext = *b;
    if (auto b = bool_value(field(*t, "require_client_certificates", "cluster", line))) {
      out.require_client_certificates = *b;
    }
    if (auto b = bool_value(field(*t, "replace_unhealthy_workers", "cluster", line))) {
      out.replace_unhealthy_workers = *b;
    }
    if (auto d = duration_value(field(*t, "kill_grace", "cluster", line))) out.kill_grace = *d;
    if (auto d = duration_value(field(*t, "shutdown_grace", "cluster", line), true)) out.shutdown_grace = *d;
    if (auto n = integer_value(field(*t, "quarantine_failures", "cluster", line), 0, 1000)) {
      out.quarantine_failures = static_cast<uint32_t>(*n);
    }
    const Field backoff_f = field(*t, "quarantine_backoff", "cluster", line);
    const Field max_backoff_f = field(*t, "quarantine_max_backoff", "cluster", line);
    const auto backoff = duration_value(backoff_f);
    const auto max_backoff = duration_value(max_backoff_f);
    if (backoff) out.quarantine_backoff = *backoff;
    if (max_backoff) out.quarantine_max_backoff = *max_backoff;
    const bool both_valid = (!backoff_f || backoff) && (!max_backoff_f || max_backoff);  // else already reported
    if (both_valid && out.quarantine_max_backoff < out.quarantine_backoff) {
      const Field& blamed = max_backoff_f ? max_backoff_f : backoff_f;
      problem(blamed.line, blamed.path,
              "quarantine_max_backoff (" + format_duration(out.quarantine_max_backoff) +
                  (max_backoff_f ? "" : ", the default") + ") must be at least quarantine_backoff (" +
                  format_duration(out.quarantine_backoff) + (backoff_f ? "" : ", the default") +
                  "): the first quarantine could not last its backoff");
    }
    if (auto d = duration_value(field(*t, "retention", "cluster", line))) out.retention = *d;
    const Field window_f = field(*t, "recovery_window", "cluster", line);
    const Field lease_f = field(*t, "worker_lease", "cluster", line);
    const auto window = duration_value(window_f);
    const auto lease = duration_value(lease_f);

    const Field hb_f = field(*t, "heartbeat_interval", "cluster", line);
    const Field un_f = field(*t, "unhealthy_after", "cluster", line);
    const Field md_f = field(*t, "must_die_after", "cluster", line);
    const auto hb = duration_value(hb_f);
    const auto un = duration_value(un_f);
    const auto md = duration_value(md_f);
    if ((hb_f && !hb) || (un_f && !un) || (md_f && !md)) return;  // already reported

    const Duration h = hb.value_or(out.heartbeat_interval);
    if (h > max_duration / 3) {
      // Its defaults (2x, 3x) would be longer than a timer can be armed for.
      problem(hb_f.line, hb_f.path, "is too long (at most about 48 years)");
      return;
    }
    const Duration u = un.value_or(2 * h);
    const Duration m = md.value_or(3 * h);
    auto describe = [](Duration d, bool given, const std::string& rule) {
      return format_duration(d) + (given ? "" : ", the default" + rule);
    };
    if (u < h) {
      // Only reachable with unhealthy_after given: its default is twice the interval.
      problem(un_f.line, un_f.path,
              format_duration(u) + " must be at least heartbeat_interval (" +
                  describe(h, bool(hb_f), "") +
                  "): a worker would be UNHEALTHY between two "
                  "heartbeats");
    } else if (m <= u) {
      if (md_f) {
        problem(md_f.line, md_f.path,
                format_duration(m) + " must be longer than unhealthy_after (" +
                    describe(u, bool(un_f), " 2 x heartbeat_interval") + ")");
      } else {
        problem(un_f.line, un_f.path,
                format_duration(u) + " must be shorter than must_die_after (" +
                    describe(m, false, " 3 x heartbeat_interval") +
                    "); lower it or set must_die_after");
      }
    }
    out.heartbeat_interval = h;
    out.unhealthy_after = u;
    out.must_die_after = m;
    if ((window_f && !window) || (lease_f && !lease)) return;  // already reported

    // A lost worker's tasks run until its lease runs out, and a restarted scheduler must not
    // run them elsewhere before: it waits at least that long for such a worker to return.
    const Duration l = lease.value_or(std::max<Duration>(std::chrono::seconds(30), m));
    if (l < m) {
      problem(lease_f.line, lease_f.path,
              format_duration(l) + " must be at least must_die_after (" + describe(m, bool(md_f), " 3 x heartbeat_interval") +
                  "): a worker the scheduler declares dead must not have killed its tasks before");
      return;
    }
    const Duration w = window.value_or(l);
    if (w < l) {
      problem(window_f.line, window_f.path,
              format_duration(w) + " must be at least worker_lease (" + describe(l, bool(lease_f), " 30s") +
                  "): after a restart, a worker that was cut off may still run its tasks until its lease runs out, "
                  "and they must not run elsewhere at the same time");
      return;
    }
    out.worker_lease = l;
    out.recovery_window = w;
  }

  // --- [task_lists.NAME] ---------------------------------------------------------------------

  // --- TLS ------------------------------------------------------------------------------------

  /// The TLS keys of [cluster] and the nodes, checked together, and their defaults: every
  /// connection is encrypted unless the config says plaintext, which only a loopback scheduler
  /// may. Without paths, the files are looked for under certs/ beside the config (what
  /// `troupe certs` and `troupe up` make): ca.pem, and NODE.pem with NODE.key.
  void check_tls(const toml::table& root, ClusterConfig& config) {
    const toml::table* cluster = root["cluster"].as_table();
    const int cluster_line = cluster ? line_of(cluster->source(), 0) : 0;
    auto cluster_field = [&](std::string_view key) {
      return cluster ? field(*cluster, key, "cluster", cluster_line) : Field{};
    };
    const Field plaintext = cluster_field("plaintext");
    const Field require = cluster_field("require_client_certificates");
    const Field ca = cluster_field("tls_ca");
    if (config.plaintext && config.require_client_certificates) {
      problem(require.line, require.path, "needs TLS, and the cluster is plaintext");
    }
    if (config.plaintext && ca) problem(ca.line, ca.path, "the cluster is plaintext (plaintext = true)");
    if (!config.plaintext && config.tls_ca.empty()) config.tls_ca = resolve("certs/ca.pem");
    const toml::array* nodes = root["node"].as_array();
    for (size_t i = 0; i < config.nodes.size(); ++i) {
      NodeConfig& node = config.nodes[i];
      const toml::table* t = nodes && i < nodes->size() ? nodes->get(i)->as_table() : nullptr;
      if (t == nullptr) continue;
      const std::string path = index_path("node", i);
      const Field certificate = field(*t, "tls_certificate", path, node.line);
      const Field key = field(*t, "tls_key", path, node.line);
      if (certificate && !key) missing(node.line, path, "tls_key", "the private key of tls_certificate");
      if (key && !certificate) missing(node.line, path, "tls_certificate", "the certificate of tls_key");
      if (config.plaintext) {
        if (certificate) problem(certificate.line, certificate.path, "the cluster is plaintext (plaintext = true)");
        if (node.scheduler && !node.listen.empty() && !is_loopback_host(node.listen.host)) {
          problem(plaintext.line, plaintext.path,
                  "plaintext is allowed only for a scheduler on a loopback address, and " + node.name +
                      " listens on " + node.listen.to_string() +
                      ": leave it out, and the connections are encrypted (see tls_certificate)");
        }
        continue;
      }
      const bool presents = node.scheduler || config.require_client_certificates;
      if (!certificate && presents && !node.name.empty()) {
        node.tls_certificate = resolve("certs/" + node.name + ".pem");
        node.tls_key = resolve("certs/" + node.name + ".key");
      }
    }
  }

  // --- [connections] ------------------------------------------------------------------------

  void read_connections(const toml::table& root, ClusterConfig& out) {
    const Field f = field(root, "connections", "", 0);
    const auto* t = table_value(f, "a table ([connections])");
    if (t == nullptr) return;
    const int line = line_of(t->source(), f.line);
    const std::string path = "connections";
    check_keys(*t, path, connection_keys);
    auto& c = out.connections;
    if (auto n = integer_value(field(*t, "max_connections", path, line), 1, 1'000'000)) {
      c.max_connections = static_cast<uint32_t>(*n);
    }
    if (auto n = integer_value(field(*t, "max_connections_per_peer", path, line), 1, 1'000'000)) {
      c.max_connections_per_peer = static_cast<uint32_t>(*n);
    }
    if (auto d = duration_value(field(*t, "handshake_timeout", path, line))) c.handshake_timeout = *d;
    const Field idle = field(*t, "idle_timeout", path, line);
    if (auto d = duration_value(idle)) c.idle_timeout = *d;
    // A worker's heartbeats are what keeps its connection from being idle.
    if (c.idle_timeout < 2 * out.heartbeat_interval) {
      problem(idle.line, idle.path,
              format_duration(c.idle_timeout) + " must be at least twice heartbeat_interval (" +
                  format_duration(out.heartbeat_interval) + "): idle workers would be cut off between heartbeats");
    }
    const auto at_least = [&](const char* key, uint64_t lo, uint64_t hi, uint64_t& into) {
      const Field k = field(*t, key, path, line);
      auto bytes = size_value(k);
      if (!bytes) return;
      if (*bytes < lo || *bytes > hi) {
        problem(k.line, k.path,
                "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + " bytes, not " +
                    std::to_string(*bytes));
        return;
      }
      into = *bytes;
    };
    // A Gateway call with a long credential must fit before admission; Cap'n Proto reads at
    // most 4 GiB - 8 bytes in one message.
    at_least("max_unadmitted_bytes", 4096, uint64_t{1} << 30, c.max_unadmitted_bytes);
    at_least("max_message_bytes", 64 * 1024, (uint64_t{4} << 30) - 8, c.max_message_bytes);
    at_least("max_calls_in_flight_bytes", 64 * 1024, uint64_t{4} << 30, c.max_calls_in_flight_bytes);
  }

  void read_task_lists(const toml::table& root, ClusterConfig& out) {
    const Field f = field(root, "task_lists", "", 0);
    const auto* t = table_value(f, "a table of [task_lists.NAME] sections");
    if (t == nullptr) return;
    for (auto&& [key, value] : *t) {
      const std::string path = join("task_lists", key.str());
      const int line = line_of(key.source(), line_of(value.source(), f.line));
      bool ok = true;
      if (!valid_name(key.str())) {
        problem(line, path,
                "bad task list name " + quote(key.str()) + " (expected 1-64 of A-Z a-z 0-9 . _ -)");
        ok = false;
      }
      const auto* limits = value.as_table();
      if (limits == nullptr) {
        problem(line, path,
                "must be a table with rate and burst ([task_lists." + std::string(key.str()) +
                    "] with rate = 50.0), not " + kind(value));
        continue;
      }
      check_keys(*limits, path, limit_keys);
      const Field rate_f = field(*limits, "rate", path, line);
      if (!rate_f) missing(line, path, "rate", "tasks started per second, > 0");
      const auto rate = rate_value(rate_f);
      const auto burst = integer_value(field(*limits, "burst", path, line), 1, max_u32);
      if (!ok || !rate) continue;
      TaskListLimits l;
      l.rate = *rate;
      l.burst = burst ? static_cast<uint32_t>(*burst)
                      : static_cast<uint32_t>(std::clamp(std::ceil(*rate), 1.0, double(max_u32)));
      out.task_lists.emplace(std::string(key.str()), l);
    }
  }

  // --- [limits] ----------------------------------------------------------------------------

  void read_limits(const toml::table& root, ClusterConfig& out) {
    const Field f = field(root, "limits", "", 0);
    const auto* t = table_value(f, "a table ([limits])");
    if (t == nullptr) return;
    const int line = line_of(t->source(), f.line);
    check_keys(*t, "limits", input_limit_keys);
    const InputLimits least = InputLimits::least();
    const InputLimits most = InputLimits::most();
    auto size = [&](std::string_view key, uint64_t InputLimits::*member) {
      const Field k = field(*t, key, "limits", line);
      auto bytes = size_value(k);
      if (!bytes) return;
      if (*bytes < least.*member || *bytes > most.*member) {
        problem(k.line, k.path,
                "must be from " + format_size(least.*member) + " to " + format_size(most.*member) + ", not " +
                    format_size(*bytes));
        return;
      }
      out.limits.*member = *bytes;
    };
    auto count = [&](std::string_view key, uint64_t InputLimits::*member) {
      const auto n = integer_value(field(*t, key, "limits", line), static_cast<int64_t>(least.*member),
                                   static_cast<int64_t>(most.*member));
      if (n) out.limits.*member = static_cast<uint64_t>(*n);
    };
    size("definition_size", &InputLimits::definition_bytes);
    count("tasks_per_workflow", &InputLimits::tasks);
    count("workflow_id_length", &InputLimits::workflow_id_bytes);
    count("name_length", &InputLimits::name_bytes);
    size("input_size", &InputLimits::input_bytes);
    size("result_size", &InputLimits::result_bytes);
  }

  /// A submission (its definition and input) travels in one RPC message and is recorded in one
  /// history event, so the two limits together, with room for the rest of the message, must not
  /// exceed the largest message the scheduler reads, defaults included.
  void check_submission_fits(const toml::table& root, const ClusterConfig& config) {
    constexpr uint64_t rest_of_message = 4096;  // the workflow id, run-from and framing
    const InputLimits& limits = config.limits;
    const uint64_t largest = config.connections.max_message_bytes;
    if (limits.definition_bytes + limits.input_bytes + rest_of_message <= largest) return;
    const auto* table = root["limits"].as_table();
    const Field definition = table ? field(*table, "definition_size", "limits", 0) : Field{};
    const Field input = table ? field(*table, "input_size", "limits", 0) : Field{};
    const auto* connections = root["connections"].as_table();
    const Field message = connections ? field(*connections, "max_message_bytes", "connections", 0) : Field{};
    const Field& blamed = definition ? definition : input ? input : message;
    auto given = [](const Field& f) { return bool(f) ? "" : ", the default"; };
    problem(blamed.line, blamed ? blamed.path : "limits",
            "limits.definition_size (" + format_size(limits.definition_bytes) + given(definition) +
                ") and limits.input_size (" + format_size(limits.input_bytes) + given(input) +
                ") together, with 4KiB for the rest of the message, exceed connections.max_message_bytes (" +
                format_size(largest) + given(message) +
                "): a submission is sent in one message; lower the limits or raise max_message_bytes");
  }

  // --- [[node]] ------------------------------------------------------------------------------

  void read_nodes(const toml::table& root, ClusterConfig& out) {
    const Field f = field(root, "node", "", 0);
    if (!f) {
      problem(0, "", "no [[node]] sections (a cluster needs at least one node)");
      return;
    }
    const auto* nodes = f.node->as_array();
    if (nodes == nullptr) {
      wrong_type(f, "an array of tables (write each node as a [[node]] section)");
      return;
    }
    if (nodes->empty()) {
      problem(f.line, f.path, "is empty (a cluster needs at least one node)");
      return;
    }
    std::map<std::string, int> first_line;  // node name -> line of its name key
    for (size_t i = 0; i < nodes->size(); ++i) {
      const toml::node& n = *nodes->get(i);
      const std::string path = index_path("node", i);
      const auto* t = n.as_table();
      if (t == nullptr) {
        problem(line_of(n.source(), f.line), path,
                "must be a table (a [[node]] section), not " + kind(n));
        continue;
      }
      NodeConfig node = read_node(*t, path, line_of(t->source(), f.line));
      if (!node.name.empty()) {
        const Field name = field(*t, "name", path, node.line);
        auto [it, inserted] = first_line.emplace(node.name, name.line);
        if (!inserted) {
          problem(name.line, name.path,
                  "duplicate node name " + quote(node.name) + " (first at line " +
                      std::to_string(it->second) + ")");
        }
      }
      out.nodes.push_back(std::move(node));
    }
  }

  NodeConfig read_node(const toml::table& t, const std::string& path, int line) {
    NodeConfig node;
    node.line = line;
    check_keys(t, path, node_keys);

    const Field name = field(t, "name", path, line);
    if (!name) missing(line, path, "name", "the node's unique name; a worker's is its shard id");
    if (auto s = name_value(name, "node name")) node.name = *s;

    const bool roles_ok = read_roles(t, path, line, node);
    if (roles_ok) {
      // Keys the node's roles do not use are mistakes, not silently ignored settings.
      const std::string roles = node.scheduler && node.worker ? "scheduler, worker"
                                : node.scheduler              ? "scheduler"
                                                              : "worker";
      auto check_role = [&](Names keys, bool has_role, const char* role) {
        for (auto key : keys) {
          const Field k = field(t, key, path, line);
          if (k && !has_role) {
            problem(k.line, k.path,
                    std::string("only applies to a node with the \"") + role +
                        "\" role (this node's roles: " + roles + ")");
          }
        }
      };
      check_role(scheduler_only_keys, node.scheduler, "scheduler");
      check_role(worker_only_keys, node.worker, "worker");
    }

    // Scheduler role.
    const Field listen = field(t, "listen", path, line);
    if (roles_ok && node.scheduler && !listen) {
      missing(line, path, "listen", "a scheduler needs the HOST:PORT its gateway listens on");
    }
    if (auto a = address_value(listen)) node.listen = *a;
    const Field data_dir = field(t, "data_dir", path, line);
    if (roles_ok && node.scheduler && !data_dir) {
      missing(line, path, "data_dir", "a scheduler keeps its history store there");
    }
    if (auto p = path_value(data_dir)) node.data_dir = *p;
    if (auto b = bool_value(field(t, "sync", path, line))) node.sync = *b;
    if (auto p = path_value(field(t, "definitions", path, line))) node.definitions_dir = *p;
    if (auto n = integer_value(field(t, "workflow_cache", path, line), 0, 100000000)) {
      node.workflow_cache = static_cast<size_t>(*n);
    }

    // Worker role.
    const Field scheduler = field(t, "scheduler", path, line);
    if (roles_ok && node.worker && !node.scheduler && !scheduler) {
      missing(line, path, "scheduler",
              "a worker needs the scheduler's HOST:PORT unless the node is also the scheduler");
    }
    if (auto a = address_value(scheduler)) node.scheduler_address = *a;
    if (!scheduler && node.worker && node.scheduler) node.scheduler_address = node.listen;

    const Field slots = field(t, "task_lists", path, line);
    if (roles_ok && node.worker && !slots) {
      missing(line, path, "task_lists", "a worker needs its slots per task list");
    }
    read_slots(slots, node);

    const Field resource_id = field(t, "resource_id", path, line);
    if (auto s = string_value(resource_id)) {
      if (s->empty()) {
        problem(resource_id.line, resource_id.path,
                "must not be empty (leave the key out for no resource id)");
      }
      node.resource_id = *s;
    }
    if (auto n = integer_value(field(t, "max_concurrent_sessions", path, line), 0, max_u32)) {
      node.max_concurrent_sessions = static_cast<uint32_t>(*n);
    }
    node.rate = rate_value(field(t, "rate", path, line));
    if (auto n = integer_value(field(t, "actor_threads", path, line), 1, 1024)) {
      node.actor_threads = static_cast<uint32_t>(*n);
    }
    if (auto a = address_value(field(t, "metrics", path, line), true)) node.metrics = *a;
    node_log_settings(t, path, line, node);
    if (auto p = path_value(field(t, "tls_certificate", path, line))) node.tls_certificate = *p;
    if (auto p = path_value(field(t, "tls_key", path, line))) node.tls_key = *p;

    const Field log_dir = field(t, "log_dir", path, line);
    if (auto p = path_value(log_dir)) {
      node.log_dir = *p;
    } else if (!log_dir && node.worker && !node.name.empty()) {
      node.log_dir = node.data_dir.empty() ? resolve("logs/" + node.name)
                                           : resolve(node.data_dir + "/" + node.name);
    }
    const Field log_cap = field(t, "log_cap", path, line);
    if (auto bytes = size_value(log_cap)) {
      if (*bytes < min_log_cap) {
        problem(log_cap.line, log_cap.path,
                "must be at least 1KiB, not " + std::to_string(*bytes) + " bytes");
      } else {
        node.log_cap_bytes = *bytes;
      }
    }
    return node;
  }

  /// Reads `log_level` and `log_format`: how much the node says on stderr, and in what form.
  void node_log_settings(const toml::table& t, const std::string& path, int line, NodeConfig& node) {
    const Field level = field(t, "log_level", path, line);
    if (auto s = string_value(level)) {
      if (auto parsed = parse_log_level(*s)) {
        node.log_level = *parsed;
      } else {
        problem(level.line, level.path, parsed.error().message);
      }
    }
    const Field format = field(t, "log_format", path, line);
    if (auto s = string_value(format)) {
      if (auto parsed = parse_log_format(*s)) {
        node.log_format = *parsed;
      } else {
        problem(format.line, format.path, parsed.error().message);
      }
    }
  }

  /// Reads `roles` into node.scheduler/worker; true when they are valid.
  bool read_roles(const toml::table& t, const std::string& path, int line, NodeConfig& node) {
    const Field f = field(t, "roles", path, line);
    if (!f) {
      missing(line, path, "roles", "e.g. roles = [\"worker\"], or [\"scheduler\", \"worker\"]");
      return false;
    }
    const auto* roles = f.node->as_array();
    if (roles == nullptr) {
      wrong_type(f, "an array of roles such as [\"worker\"]");
      return false;
    }
    if (roles->empty()) {
      problem(f.line, f.path, "must list at least one role (\"scheduler\", \"worker\")");
      return false;
    }
    bool ok = true;
    for (size_t j = 0; j < roles->size(); ++j) {
      const toml::node& r = *roles->get(j);
      const Field element{&r, line_of(r.source(), f.line), index_path(f.path, j)};
      auto s = string_value(element);
      if (!s) {
        ok = false;
        continue;
      }
      bool* role = *s == "scheduler" ? &node.scheduler : *s == "worker" ? &node.worker : nullptr;
      if (role == nullptr) {
        std::string message = "unknown role " + quote(*s);
        if (auto near = near_miss(*s, role_names)) {
          message += " (did you mean " + quote(*near) + "?)";
        } else {
          message += " (expected \"scheduler\" or \"worker\")";
        }
        problem(element.line, element.path, message);
        ok = false;
      } else if (*role) {
        problem(element.line, element.path, "role " + quote(*s) + " is listed twice");
        ok = false;
      } else {
        *role = true;
      }
    }
    return ok;
  }

  void read_slots(const Field& f, NodeConfig& node) {
    const auto* t = table_value(f, "a table of slots per task list, e.g. { default = 4 }");
    if (t == nullptr) return;
    if (t->empty()) {
      problem(f.line, f.path,
              "must list at least one task list (e.g. task_lists = { default = 4 })");
      return;
    }
    for (auto&& [key, value] : *t) {
      const Field slot{&value, line_of(key.source(), line_of(value.source(), f.line)),
                       join(f.path, key.str())};
      bool ok = true;
      if (!valid_name(key.str())) {
        problem(slot.line, slot.path,
                "bad task list name " + quote(key.str()) + " (expected 1-64 of A-Z a-z 0-9 . _ -)");
        ok = false;
      }
      auto n = integer_value(slot, 1, max_u32);
      if (ok && n) node.task_lists.emplace(std::string(key.str()), static_cast<uint32_t>(*n));
    }
  }

  std::string source_;
  std::string base_dir_;
  std::vector<Problem> problems_;
};

}  // namespace

std::string Address::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

/// parse_address and parse_bind_address: the port from `min_port` (0 or 1) to 65535.
Result<Address> parse_host_port(std::string_view text, int min_port) {
  const std::string expected = min_port == 0 ? " (expected HOST:PORT, port 0-65535; 0 picks a free port)"
                                             : " (expected HOST:PORT, port 1-65535)";
  auto bad = [&](const std::string& why) {
    return fail(Errc::INVALID_ARGUMENT, "bad address " + quote(text) + ": " + why + expected);
  };
  if (text.empty()) return bad("it is empty");
  std::string_view host;
  std::string_view port;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("no ']' after the IPv6 host");
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty()) return bad("no port");
    if (rest.front() != ':') return bad("expected ':' after ']'");
    port = rest.substr(1);
    in6_addr ignored;
    if (host.empty() || inet_pton(AF_INET6, std::string(host).c_str(), &ignored) != 1) {
      return bad(quote(host) + " is not an IPv6 address");
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("no port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return bad("write an IPv6 host in brackets, e.g. \"[::1]:7700\"");
    }
    if (host.empty()) return bad("no host before ':'");
    const bool numeric = std::all_of(host.begin(), host.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    });
    if (numeric && !valid_ipv4(host)) return bad(quote(host) + " is not an IPv4 address");
    if (!numeric && !valid_hostname(host)) {
      return bad(quote(host) + " is not a hostname (letters, digits, '-' and '.')");
    }
  }
  if (port.empty()) return bad("no port after ':'");
  const bool digits = port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) {
                        return std::isdigit(static_cast<unsigned char>(c));
                      });
  const int value = digits ? std::stoi(std::string(port)) : -1;
  if (value < min_port || value > 65535) {
    return bad("port " + quote(port) + " is not a number from " + std::to_string(min_port) + " to 65535");
  }
  return Address{std::string(host), static_cast<uint16_t>(value)};
}

}  // namespace

Result<Address> parse_address(std::string_view text) { return parse_host_port(text, 1); }

Result<Address> parse_bind_address(std::string_view text) { return parse_host_port(text, 0); }

Result<uint64_t> parse_byte_size(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return fail(Errc::INVALID_ARGUMENT,
                quote(text) + " is not a size: " + why +
                    " (write e.g. \"16MiB\", \"512KiB\", \"1GiB\" or a number of bytes)");
  };
  if (text.empty()) return bad("it is empty");
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) return bad("expected a whole number at the start");
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, n);
  if (ec != std::errc() || end != text.data() + i) return bad("the number is too large");
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string_view unit = text.substr(i);
  uint64_t scale = 0;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "KiB") {
    scale = uint64_t{1} << 10;
  } else if (unit == "MiB") {
    scale = uint64_t{1} << 20;
  } else if (unit == "GiB") {
    scale = uint64_t{1} << 30;
  } else if (unit.front() == '.') {
    return bad("only whole numbers are allowed");
  } else {
    std::string message = "unknown unit " + quote(unit);
    switch (std::tolower(static_cast<unsigned char>(unit.front()))) {
      case 'k':
        message += ", did you mean \"KiB\"?";
        break;
      case 'm':
        message += ", did you mean \"MiB\"?";
        break;
      case 'g':
        message += ", did you mean \"GiB\"?";
        break;
      case 'b':
        message += ", did you mean \"B\"?";
        break;
      default:
        message += ", use B, KiB, MiB or GiB";
        break;
    }
    return bad(message);
  }
  if (n > std::numeric_limits<uint64_t>::max() / scale) return bad("it is too large");
  return n * scale;
}

const NodeConfig* ClusterConfig::find_node(std::string_view name) const {
  for (const auto& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

Result<const NodeConfig*> ClusterConfig::get_node(std::string_view name) const {
  if (const auto* n = find_node(name)) return n;
  std::string known;
  for (const auto& n : nodes) known += (known.empty() ? "" : ", ") + n.name;
  return fail(Errc::NOT_FOUND, "no node " + quote(name) + " in cluster config " + source_path +
                                   " (its nodes: " + known + ")");
}

Result<ClusterConfig> parse_cluster_config(std::string_view text, const std::string& source_name,
                                           const std::string& base_dir) {
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(source_name));
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return fail(Errc::INVALID_ARGUMENT, source_name + ":" + std::to_string(where.line) + ":" +
                                            std::to_string(where.column) + ": " +
                                            std::string(e.description()));
  }
  return Checker(source_name, base_dir).check(root);
}

Result<ClusterConfig> load_cluster_config(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    return fail(Errc::NOT_FOUND, "cluster config " + quote(path) + " does not exist");
  }
  if (ec) {
    return fail(Errc::UNAVAILABLE,
                "cannot read cluster config " + quote(path) + ": " + ec.message());
  }
  if (fs::is_directory(status)) {
    return fail(Errc::INVALID_ARGUMENT,
                "cluster config " + quote(path) + " is a directory; name the TOML file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(Errc::UNAVAILABLE,
                "cannot read cluster config " + quote(path) + ": " + std::strerror(errno));
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return fail(Errc::UNAVAILABLE,
                "cannot read cluster config " + quote(path) + ": " + std::strerror(errno));
  }
  fs::path dir = fs::absolute(fs::path(path), ec);
  dir = ec ? fs::path(path).parent_path() : dir.lexically_normal().parent_path();
  return parse_cluster_config(text, path, dir.string());
}

}  // namespace troupe::runtime
