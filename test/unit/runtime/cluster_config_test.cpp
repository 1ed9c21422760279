#include "runtime/config/cluster_config.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::runtime;
using namespace std::chrono_literals;

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

/// A config file in a fresh temp directory; load() writes `text` to it and loads it.
struct ConfigFile {
  test::TempDir dir;
  std::string path = dir / "cluster.toml";

  Result<ClusterConfig> load(const std::string& text) {
    write_file(path, text);
    return load_cluster_config(path);
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// True when one line of the error starts with "FILE:LINE: PATH: " and contains `fragment`.
bool has_problem(const Result<ClusterConfig>& result, const std::string& file, int line,
                 const std::string& path, const std::string& fragment) {
  if (result) return false;
  const std::string prefix = file + ":" + std::to_string(line) + ": " + path + ": ";
  for (const auto& l : lines_of(result.error().message)) {
    if (l.starts_with(prefix) && l.find(fragment, prefix.size()) != std::string::npos) return true;
  }
  return false;
}

/// `p` as the loader makes paths: lexically normal.
std::string normal(const std::string& p) {
  return std::filesystem::path(p).lexically_normal().string();
}

std::string message_of(const Result<ClusterConfig>& result) {
  return result ? std::string("(loaded fine)") : result.error().message;
}

/// A valid config to break one key at a time: a scheduler and a worker.
const char* const two_nodes = R"([cluster]
name = "dev"

[[node]]
name = "s1"
roles = ["scheduler"]
listen = "127.0.0.1:7700"
data_dir = "data/s1"

[[node]]
name = "w1"
roles = ["worker"]
scheduler = "127.0.0.1:7700"
task_lists = { default = 4 }
)";

/// `two_nodes` with the line `from` replaced by `to` (first occurrence).
std::string with(std::string_view from, std::string_view to) {
  std::string text = two_nodes;
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST_SUITE("runtime.cluster_config") {
  TEST_CASE("a config with every key parses to the expected values") {
    ConfigFile f;
    auto config = f.load(R"(# the whole format
[cluster]
name = "dev"
token_file = "secrets/cluster.token"
heartbeat_interval = "500ms"
unhealthy_after = "2s"
must_die_after = "5s"
replace_unhealthy_workers = true
kill_grace = "2500ms"
worker_lease = "20s"
recovery_window = "30s"
retention = "7d"

[task_lists.gpu]
rate = 50.0
burst = 10

[task_lists.cpu]
rate = 2

[[node]]
name = "scheduler-1"
roles = ["scheduler"]
listen = "127.0.0.1:7700"
data_dir = "data/scheduler-1"
sync = false

[[node]]
name = "gpu-worker-1"
roles = ["worker"]
scheduler = "sched.example.com:7700"
task_lists = { gpu = 2, default = 4 }
resource_id = "gpu0"
max_concurrent_sessions = 3
actor_threads = 3
rate = 100.0
log_dir = "logs/gpu"
log_cap = "64MiB"
data_dir = "data/gpu-worker-1"
)");
    REQUIRE_MESSAGE(config, test::why(config));
    const std::string d = normal(f.dir.path());
    CHECK(config->name == "dev");
    CHECK(config->source_path == f.path);
    REQUIRE(config->token_file);
    CHECK(*config->token_file == d + "/secrets/cluster.token");
    CHECK(config->heartbeat_interval == Duration(500ms));
    CHECK(config->unhealthy_after == Duration(2s));
    CHECK(config->must_die_after == Duration(5s));
    CHECK(config->replace_unhealthy_workers);
    CHECK(config->kill_grace == Duration(2500ms));
    CHECK(config->worker_lease == Duration(20s));
    CHECK(config->recovery_window == Duration(30s));
    CHECK(config->retention == Duration(std::chrono::hours(7 * 24)));
    REQUIRE(config->task_lists.size() == 2);
    CHECK(config->task_lists.at("gpu") == TaskListLimits{50.0, 10});
    CHECK(config->task_lists.at("cpu") == TaskListLimits{2.0, 2});

    REQUIRE(config->nodes.size() == 2);
    const NodeConfig& s = config->nodes[0];
    CHECK(s.name == "scheduler-1");
    CHECK(s.scheduler);
    CHECK_FALSE(s.worker);
    CHECK(s.listen == Address{"127.0.0.1", 7700});
    CHECK(s.data_dir == d + "/data/scheduler-1");
    CHECK_FALSE(s.sync);
    CHECK(s.line == 21);
    CHECK(s.scheduler_address.empty());
    CHECK(s.log_dir.empty());

    const NodeConfig& w = config->nodes[1];
    CHECK(w.name == "gpu-worker-1");
    CHECK_FALSE(w.scheduler);
    CHECK(w.worker);
    CHECK(w.listen.empty());
    CHECK(w.scheduler_address == Address{"sched.example.com", 7700});
    CHECK(w.task_lists == std::map<std::string, uint32_t>{{"default", 4}, {"gpu", 2}});
    CHECK(w.resource_id == "gpu0");
    CHECK(w.max_concurrent_sessions == 3);
    CHECK(w.actor_threads == 3);
    REQUIRE(w.rate);
    CHECK(*w.rate == 100.0);
    CHECK(w.log_dir == d + "/logs/gpu");
    CHECK(w.log_cap_bytes == 64u << 20);
    CHECK(w.data_dir == d + "/data/gpu-worker-1");
    CHECK(w.line == 28);
  }

  TEST_CASE("[connections] sets the scheduler's connection limits; left out, the defaults hold") {
    ConfigFile f;
    const std::string node = "\n[[node]]\nname = \"s\"\nroles = [\"scheduler\"]\nlisten = \"127.0.0.1:7700\"\ndata_dir = \"d\"\n";
    auto defaults = f.load("[cluster]\nname = \"c\"\n" + node);
    REQUIRE(defaults);
    CHECK(defaults->connections == ConnectionLimits{});
    CHECK(defaults->connections.max_connections == 1024);
    CHECK(defaults->connections.handshake_timeout == std::chrono::seconds(10));
    auto set = f.load(R"([cluster]
name = "c"

[connections]
max_connections = 10
max_connections_per_peer = 2
handshake_timeout = "2s"
idle_timeout = "5m"
max_unadmitted_bytes = "16KiB"
max_message_bytes = "1MiB"
max_calls_in_flight_bytes = "2MiB"

[limits]
definition_size = "512KiB"
input_size = "256KiB"
)" + node);
    REQUIRE(set);
    CHECK(set->connections.max_connections == 10);
    CHECK(set->connections.max_connections_per_peer == 2);
    CHECK(set->connections.handshake_timeout == std::chrono::seconds(2));
    CHECK(set->connections.idle_timeout == std::chrono::minutes(5));
    CHECK(set->connections.max_unadmitted_bytes == 16 * 1024);
    CHECK(set->connections.max_message_bytes == 1 << 20);
    CHECK(set->connections.max_calls_in_flight_bytes == 2 << 20);
    auto bad = f.load("[cluster]\nname = \"c\"\n\n[connections]\nmax_connections = 0\nidle_timeout = \"0s\"\nmax_message_bytes = \"1KiB\"\n" + node);
    CHECK(has_problem(bad, f.path, 5, "connections.max_connections", "must be at least 1"));
    CHECK(has_problem(bad, f.path, 6, "connections.idle_timeout", "must be longer than zero"));
    CHECK(has_problem(bad, f.path, 7, "connections.max_message_bytes", "must be from 65536"));
  }

  TEST_CASE("TLS: certificates default to certs/ beside the config; plaintext is for a loopback scheduler only") {
    ConfigFile f;
    const std::string nodes = R"(
[[node]]
name = "s"
roles = ["scheduler"]
listen = "LISTEN"
data_dir = "d"

[[node]]
name = "w"
roles = ["worker"]
scheduler = "LISTEN"
task_lists = { default = 1 }
)";
    auto with = [&](const std::string& cluster, const std::string& listen) {
      std::string text = cluster + nodes;
      for (size_t at; (at = text.find("LISTEN")) != std::string::npos;) text.replace(at, 6, listen);
      return f.load(text);
    };
    const std::string certs = normal(f.dir / "certs");
    auto tls = with("[cluster]\nname = \"c\"\n", "sched.example:7700");
    REQUIRE(tls);
    CHECK_FALSE(tls->plaintext);
    CHECK(tls->tls_ca == certs + "/ca.pem");
    CHECK(tls->nodes[0].tls_certificate == certs + "/s.pem");
    CHECK(tls->nodes[0].tls_key == certs + "/s.key");
    CHECK(tls->nodes[1].tls_certificate.empty());  // a worker presents none unless required

    auto mutual = with("[cluster]\nname = \"c\"\nrequire_client_certificates = true\n", "sched.example:7700");
    REQUIRE(mutual);
    CHECK(mutual->nodes[1].tls_certificate == certs + "/w.pem");

    auto loopback = with("[cluster]\nname = \"c\"\nplaintext = true\n", "127.0.0.1:7700");
    REQUIRE(loopback);
    CHECK(loopback->plaintext);
    CHECK(loopback->tls_ca.empty());
    CHECK(loopback->nodes[0].tls_certificate.empty());

    CHECK(is_loopback_host("127.0.0.1"));
    CHECK(is_loopback_host("127.8.9.10"));
    CHECK(is_loopback_host("::1"));
    CHECK(is_loopback_host("localhost"));
    CHECK_FALSE(is_loopback_host("127.evil.example"));
    CHECK_FALSE(is_loopback_host("0.0.0.0"));
    CHECK_FALSE(is_loopback_host("128.0.0.1"));
    CHECK_FALSE(is_loopback_host("::"));
    auto named = with("[cluster]\nname = \"c\"\nplaintext = true\n", "127.evil.example:7700");
    CHECK(has_problem(named, f.path, 3, "cluster.plaintext", "allowed only for a scheduler on a loopback address"));
    auto exposed = with("[cluster]\nname = \"c\"\nplaintext = true\n", "0.0.0.0:7700");
    CHECK(has_problem(exposed, f.path, 3, "cluster.plaintext", "allowed only for a scheduler on a loopback address"));
    auto both = with("[cluster]\nname = \"c\"\nplaintext = true\nrequire_client_certificates = true\n", "127.0.0.1:7700");
    CHECK(has_problem(both, f.path, 4, "cluster.require_client_certificates", "the cluster is plaintext"));
  }

  TEST_CASE("defaults apply to keys left out") {
    ConfigFile f;
    auto config = f.load(R"([cluster]
name = "dev"

[task_lists.slow]
rate = 0.2

[task_lists.medium]
rate = 2.5

[[node]]
name = "both"
roles = ["scheduler", "worker"]
listen = "localhost:7701"
data_dir = "data/both"
task_lists = { default = 1 }

[[node]]
name = "w2"
roles = ["worker"]
scheduler = "localhost:7701"
task_lists = { default = 2 }
)");
    REQUIRE_MESSAGE(config, test::why(config));
    const std::string d = normal(f.dir.path());
    CHECK_FALSE(config->token_file);
    CHECK(config->heartbeat_interval == Duration(1s));
    CHECK(config->unhealthy_after == Duration(2s));
    CHECK(config->must_die_after == Duration(3s));
    CHECK_FALSE(config->replace_unhealthy_workers);
    CHECK(config->kill_grace == Duration(10s));
    CHECK(config->shutdown_grace == Duration(5s));
    CHECK(config->worker_lease == Duration(30s));
    CHECK(config->recovery_window == Duration(30s));  // the lease
    CHECK_FALSE(config->retention);                    // closed workflows are kept
    CHECK(config->task_lists.at("slow").burst == 1);    // max(1, ceil(0.2))
    CHECK(config->task_lists.at("medium").burst == 3);  // ceil(2.5)
    CHECK(config->limits == InputLimits{});             // no [limits]: the defaults

    const NodeConfig& both = config->nodes[0];
    CHECK(both.scheduler);
    CHECK(both.worker);
    CHECK(both.sync);
    CHECK(both.scheduler_address == Address{"localhost", 7701});  // its own listen address
    CHECK(both.max_concurrent_sessions == 1);
    CHECK(both.actor_threads == 0);  // absent: chosen from the core count
    CHECK_FALSE(both.rate);
    CHECK(both.resource_id.empty());
    CHECK(both.log_cap_bytes == 16u << 20);
    CHECK(both.log_dir == d + "/data/both/both");  // "<data_dir>/<name>"
    CHECK(both.metrics.empty());                     // no metrics server
    CHECK(both.log_level == LogLevel::INFO);
    CHECK(both.log_format == LogFormat::TEXT);

    const NodeConfig& w2 = config->nodes[1];
    CHECK(w2.data_dir.empty());
    CHECK(w2.log_dir == d + "/logs/w2");  // "logs/<name>" beside the config file
  }

  TEST_CASE("the heartbeat timeouts default to multiples of the interval") {
    ConfigFile f;
    auto config =
        f.load(with("name = \"dev\"\n", "name = \"dev\"\nheartbeat_interval = \"500ms\"\n"));
    REQUIRE_MESSAGE(config, test::why(config));
    CHECK(config->heartbeat_interval == Duration(500ms));
    CHECK(config->unhealthy_after == Duration(1s));
    CHECK(config->must_die_after == Duration(1500ms));

    SUBCASE("only must_die_after given") {
      config = f.load(with("name = \"dev\"\n", "name = \"dev\"\nmust_die_after = \"10s\"\n"));
      REQUIRE_MESSAGE(config, test::why(config));
      CHECK(config->unhealthy_after == Duration(2s));
      CHECK(config->must_die_after == Duration(10s));
    }
  }

  TEST_CASE("relative paths resolve against the config file's directory, not the working one") {
    test::TempDir dir;
    const std::string path = dir / "conf/cluster.toml";
    write_file(path, R"([cluster]
name = "dev"
token_file = "secrets/../secrets/cluster.token"

[[node]]
name = "s1"
roles = ["scheduler", "worker"]
listen = "127.0.0.1:7700"
data_dir = "../data/s1/"
log_dir = "/var/log/troupe"
task_lists = { default = 1 }
)");
    auto config = load_cluster_config(path);
    REQUIRE_MESSAGE(config, test::why(config));
    const std::string d = normal(dir.path());
    CHECK(*config->token_file == d + "/conf/secrets/cluster.token");
    CHECK(config->nodes[0].data_dir == d + "/data/s1");
    CHECK(config->nodes[0].log_dir == "/var/log/troupe");  // absolute paths stay

    SUBCASE("parse_cluster_config resolves against the base directory it is given") {
      const std::string text = R"([cluster]
name = "dev"
token_file = "t"
[[node]]
name = "w"
roles = ["worker"]
scheduler = "h:1"
task_lists = { a = 1 }
)";
      auto in_base = parse_cluster_config(text, "c.toml", "base");
      REQUIRE_MESSAGE(in_base, test::why(in_base));
      CHECK(*in_base->token_file == "base/t");
      CHECK(in_base->nodes[0].log_dir == "base/logs/w");
      auto as_is = parse_cluster_config(text, "c.toml", "");
      REQUIRE_MESSAGE(as_is, test::why(as_is));
      CHECK(*as_is->token_file == "t");
      CHECK(as_is->nodes[0].log_dir == "logs/w");
    }
  }

  TEST_CASE("a TOML syntax error names the file, line and column") {
    ConfigFile f;
    auto config = f.load("[cluster]\nname = \"dev\"\nheartbeat_interval = \n");
    REQUIRE_FALSE(config);
    CHECK(config.error().code == Errc::INVALID_ARGUMENT);
    CHECK_MESSAGE(config.error().message.starts_with(f.path + ":3:22: "), message_of(config));
    CHECK(config.error().message.find("expected") != std::string::npos);

    SUBCASE("a key given twice is a syntax error too") {
      config =
          f.load(with("roles = [\"worker\"]\n", "roles = [\"worker\"]\nroles = [\"worker\"]\n"));
      REQUIRE_FALSE(config);
      CHECK_MESSAGE(config.error().message.starts_with(f.path + ":13:"), message_of(config));
    }
  }

  TEST_CASE("unknown keys are errors with their line and a near miss suggested") {
    ConfigFile f;
    auto config = f.load(R"([cluster]
name = "dev"
nmae = "dev"
heartbeat = "1s"

[task_lists.gpu]
rate = 1.0
brust = 2

[[nodes]]
x = 1

[[node]]
name = "w1"
roles = ["worker"]
scheduler = "127.0.0.1:7700"
task_list = { default = 1 }
task_lists = { default = 1 }
)");
    REQUIRE_FALSE(config);
    CHECK(config.error().code == Errc::INVALID_ARGUMENT);
    CHECK_MESSAGE(
        has_problem(config, f.path, 3, "cluster.nmae", "unknown key (did you mean \"name\"?)"),
        message_of(config));
    // An abbreviation of one key names it, as the CLI does for options.
    CHECK_MESSAGE(has_problem(config, f.path, 4, "cluster.heartbeat", "unknown key (did you mean \"heartbeat_interval\"?)"),
                  message_of(config));
    CHECK_MESSAGE(has_problem(config, f.path, 8, "task_lists.gpu.brust", "did you mean \"burst\"?"),
                  message_of(config));
    CHECK_MESSAGE(has_problem(config, f.path, 10, "nodes", "did you mean \"node\"?"),
                  message_of(config));
    CHECK_MESSAGE(
        has_problem(config, f.path, 17, "node[0].task_list", "did you mean \"task_lists\"?"),
        message_of(config));
    CHECK(lines_of(config.error().message).size() == 5);
  }

  TEST_CASE("missing required keys are named with the line of their table") {
    ConfigFile f;
    SUBCASE("a worker without task_lists") {
      auto config = f.load(with("task_lists = { default = 4 }\n", ""));
      CHECK_MESSAGE(has_problem(config, f.path, 10, "node[1]",
                                "missing required key \"task_lists\" (a worker needs its slots per "
                                "task list)"),
                    message_of(config));
    }
    SUBCASE("a scheduler without listen and data_dir") {
      auto config = f.load(with("listen = \"127.0.0.1:7700\"\ndata_dir = \"data/s1\"\n", ""));
      CHECK_MESSAGE(has_problem(config, f.path, 4, "node[0]", "missing required key \"listen\""),
                    message_of(config));
      CHECK_MESSAGE(has_problem(config, f.path, 4, "node[0]", "missing required key \"data_dir\""),
                    message_of(config));
    }
    SUBCASE("the cluster name, a node name and roles") {
      auto config = f.load(R"([cluster]
token_file = "t"

[[node]]
listen = "127.0.0.1:1"
)");
      CHECK_MESSAGE(has_problem(config, f.path, 1, "cluster", "missing required key \"name\""),
                    message_of(config));
      CHECK_MESSAGE(has_problem(config, f.path, 4, "node[0]", "missing required key \"name\""),
                    message_of(config));
      CHECK_MESSAGE(has_problem(config, f.path, 4, "node[0]", "missing required key \"roles\""),
                    message_of(config));
    }
    SUBCASE("no [cluster] and no [[node]] at all") {
      auto config = f.load("# empty\n");
      REQUIRE_FALSE(config);
      const auto lines = lines_of(config.error().message);
      REQUIRE(lines.size() == 2);
      CHECK(lines[0] ==
            f.path + ": missing required table [cluster] (it names the cluster: name = \"...\")");
      CHECK(lines[1] == f.path + ": no [[node]] sections (a cluster needs at least one node)");
    }
  }

  TEST_CASE("a bad address names the key and what HOST:PORT means") {
    ConfigFile f;
    auto config = f.load(with("listen = \"127.0.0.1:7700\"", "listen = \"127.0.0.1\""));
    CHECK_MESSAGE(
        has_problem(config, f.path, 7, "node[0].listen",
                    "bad address \"127.0.0.1\": no port (expected HOST:PORT, port 1-65535)"),
        message_of(config));
    config = f.load(with("scheduler = \"127.0.0.1:7700\"", "scheduler = \"127.0.0.1:70000\""));
    CHECK_MESSAGE(
        has_problem(config, f.path, 13, "node[1].scheduler", "bad address \"127.0.0.1:70000\""),
        message_of(config));
  }

  TEST_CASE("metrics takes an address to serve on, on a node of either role, port 0 picking a free one") {
    ConfigFile f;
    auto config = f.load(with("data_dir = \"data/s1\"\n", "data_dir = \"data/s1\"\nmetrics = \"127.0.0.1:9464\"\n") +
                         "metrics = \"0.0.0.0:0\"\n");
    REQUIRE_MESSAGE(config, test::why(config));
    CHECK(config->nodes[0].metrics == Address{"127.0.0.1", 9464});
    CHECK(config->nodes[1].metrics == Address{"0.0.0.0", 0});
  }

  TEST_CASE("log_level and log_format set how much a node of either role logs, and in what form") {
    ConfigFile f;
    auto config = f.load(with("data_dir = \"data/s1\"\n", "data_dir = \"data/s1\"\nlog_level = \"debug\"\n") +
                         "log_level = \"warn\"\nlog_format = \"json\"\n");
    REQUIRE_MESSAGE(config, test::why(config));
    CHECK(config->nodes[0].log_level == LogLevel::DEBUG);
    CHECK(config->nodes[0].log_format == LogFormat::TEXT);
    CHECK(config->nodes[1].log_level == LogLevel::WARN);
    CHECK(config->nodes[1].log_format == LogFormat::JSON);
  }

  TEST_CASE("a bad log_level or log_format names the key, its line and the values it takes") {
    ConfigFile f;
    auto config = f.load(std::string(two_nodes) + "log_level = \"verbose\"\n");
    CHECK_MESSAGE(has_problem(config, f.path, 15, "node[1].log_level",
                              "bad log level \"verbose\" (expected debug, info, warn or error)"),
                  message_of(config));
    config = f.load(std::string(two_nodes) + "log_format = \"xml\"\n");
    CHECK_MESSAGE(has_problem(config, f.path, 15, "node[1].log_format", "bad log format \"xml\" (expected text or json)"),
                  message_of(config));
    config = f.load(std::string(two_nodes) + "log_level = 3\n");
    CHECK_MESSAGE(has_problem(config, f.path, 15, "node[1].log_level", "must be a string, not an integer"),
                  message_of(config));
  }

  TEST_CASE("a bad metrics address names the key, its line and what HOST:PORT means") {
    ConfigFile f;
    auto config = f.load(with("data_dir = \"data/s1\"\n", "data_dir = \"data/s1\"\nmetrics = \"127.0.0.1\"\n"));
    CHECK_MESSAGE(has_problem(config, f.path, 9, "node[0].metrics",
                              "bad address \"127.0.0.1\": no port (expected HOST:PORT, port 0-65535; 0 picks a "
                              "free port)"),
                  message_of(config));
    config = f.load(std::string(two_nodes) + "metrics = \"localhost:65536\"\n");
    CHECK_MESSAGE(has_problem(config, f.path, 15, "node[1].metrics", "port \"65536\" is not a number from 0 to 65535"),
                  message_of(config));
    config = f.load(std::string(two_nodes) + "metrics = 9464\n");
    CHECK_MESSAGE(has_problem(config, f.path, 15, "node[1].metrics", "must be a string, not an integer"),
                  message_of(config));
    config = f.load(std::string(two_nodes) + "metric = \"127.0.0.1:9464\"\n");
    CHECK_MESSAGE(has_problem(config, f.path, 15, "node[1].metric", "unknown key (did you mean \"metrics\"?)"),
                  message_of(config));
  }

  TEST_CASE("a duplicate node name points at the first one") {
    ConfigFile f;
    auto config = f.load(with("name = \"w1\"", "name = \"s1\""));
    CHECK_MESSAGE(has_problem(config, f.path, 11, "node[1].name",
                              "duplicate node name \"s1\" (first at line 5)"),
                  message_of(config));
  }

  TEST_CASE("a worker whose scheduler is neither given nor derivable is an error") {
    ConfigFile f;
    auto config = f.load(with("scheduler = \"127.0.0.1:7700\"\n", ""));
    CHECK_MESSAGE(has_problem(config, f.path, 10, "node[1]", "missing required key \"scheduler\""),
                  message_of(config));
  }

  TEST_CASE("bad durations name the key and the expected form") {
    ConfigFile f;
    struct Case {
      const char* value;
      const char* fragment;
    };
    for (const auto& c :
         {Case{"\"1 sec\"", "is not a duration"}, Case{"\"0s\"", "must be longer than zero"},
          Case{"1", "must be a duration string such as \"1s\" or \"500ms\", not an integer"}}) {
      CAPTURE(c.value);
      auto config =
          f.load(with("name = \"dev\"\n",
                      std::string("name = \"dev\"\nheartbeat_interval = ") + c.value + "\n"));
      CHECK_MESSAGE(has_problem(config, f.path, 3, "cluster.heartbeat_interval", c.fragment),
                    message_of(config));
    }
  }

  TEST_CASE("heartbeat timeouts must be ordered: interval <= unhealthy_after < must_die_after") {
    ConfigFile f;
    auto load = [&](const std::string& keys) {
      return f.load(with("name = \"dev\"\n", "name = \"dev\"\n" + keys));
    };
    SUBCASE("unhealthy_after shorter than the interval") {
      auto config =
          load("heartbeat_interval = \"2s\"\nunhealthy_after = \"1s\"\nmust_die_after = \"9s\"\n");
      CHECK_MESSAGE(has_problem(config, f.path, 4, "cluster.unhealthy_after",
                                "1s must be at least heartbeat_interval (2s)"),
                    message_of(config));
    }
    SUBCASE("must_die_after not longer than unhealthy_after") {
      auto config = load("unhealthy_after = \"3s\"\nmust_die_after = \"3s\"\n");
      CHECK_MESSAGE(has_problem(config, f.path, 4, "cluster.must_die_after",
                                "3s must be longer than unhealthy_after (3s)"),
                    message_of(config));
    }
    SUBCASE("must_die_after given below the default unhealthy_after") {
      auto config = load("must_die_after = \"1500ms\"\n");
      CHECK_MESSAGE(has_problem(config, f.path, 3, "cluster.must_die_after",
                                "must be longer than unhealthy_after (2s, the default 2 x "
                                "heartbeat_interval)"),
                    message_of(config));
    }
    SUBCASE("a worker lease shorter than must_die_after") {
      auto config = load("must_die_after = \"40s\"\nworker_lease = \"35s\"\n");
      CHECK_MESSAGE(has_problem(config, f.path, 4, "cluster.worker_lease",
                                "35s must be at least must_die_after (40s)"),
                    message_of(config));
    }
    SUBCASE("the lease defaults to must_die_after when that is longer than 30s") {
      auto config = load("must_die_after = \"40s\"\n");
      REQUIRE_MESSAGE(config, message_of(config));
      CHECK(config->worker_lease == Duration(40s));
      CHECK(config->recovery_window == Duration(40s));
    }
    SUBCASE("a recovery window shorter than the lease") {
      auto config = load("worker_lease = \"20s\"\nrecovery_window = \"10s\"\n");
      CHECK_MESSAGE(has_problem(config, f.path, 4, "cluster.recovery_window",
                                "10s must be at least worker_lease (20s)"),
                    message_of(config));
    }
    SUBCASE("unhealthy_after reaching the default must_die_after") {
      auto config = load("unhealthy_after = \"5s\"\n");
      CHECK_MESSAGE(has_problem(config, f.path, 3, "cluster.unhealthy_after",
                                "must be shorter than must_die_after (3s, the default 3 x "
                                "heartbeat_interval)"),
                    message_of(config));
    }
  }

  TEST_CASE("slots must be whole numbers >= 1 under valid task list names") {
    ConfigFile f;
    struct Case {
      const char* slots;
      const char* path;
      const char* fragment;
    };
    for (const auto& c :
         {Case{"{ default = 0 }", "node[1].task_lists.default", "must be at least 1, not 0"},
          Case{"{ default = -2 }", "node[1].task_lists.default", "must be at least 1, not -2"},
          Case{"{ default = \"4\" }", "node[1].task_lists.default",
               "must be an integer, not a string"},
          Case{"{ default = 2.5 }", "node[1].task_lists.default",
               "must be an integer, not a floating-point number"},
          Case{"{ default = 5000000000 }", "node[1].task_lists.default",
               "must be at most 4294967295"},
          Case{"{ \"gpu large\" = 1 }", "node[1].task_lists.\"gpu large\"", "bad task list name"},
          Case{"{}", "node[1].task_lists", "must list at least one task list"},
          Case{"4", "node[1].task_lists", "must be a table of slots per task list"}}) {
      CAPTURE(c.slots);
      auto config =
          f.load(with("task_lists = { default = 4 }", std::string("task_lists = ") + c.slots));
      CHECK_MESSAGE(has_problem(config, f.path, 14, c.path, c.fragment), message_of(config));
    }
  }

  TEST_CASE("roles must be a non-empty list of scheduler and worker without repeats") {
    ConfigFile f;
    struct Case {
      const char* roles;
      const char* path;
      const char* fragment;
    };
    for (const auto& c : {Case{"[\"shceduler\"]", "node[0].roles[0]",
                               "unknown role \"shceduler\" (did you mean \"scheduler\"?)"},
                          Case{"[\"scheduler\", \"gateway\"]", "node[0].roles[1]",
                               "unknown role \"gateway\" (expected \"scheduler\" or \"worker\")"},
                          Case{"[\"scheduler\", \"scheduler\"]", "node[0].roles[1]",
                               "role \"scheduler\" is listed twice"},
                          Case{"[]", "node[0].roles", "must list at least one role"},
                          Case{"\"scheduler\"", "node[0].roles",
                               "must be an array of roles such as [\"worker\"], not a string"},
                          Case{"[1]", "node[0].roles[0]", "must be a string, not an integer"}}) {
      CAPTURE(c.roles);
      auto config = f.load(with("roles = [\"scheduler\"]", std::string("roles = ") + c.roles));
      CHECK_MESSAGE(has_problem(config, f.path, 6, c.path, c.fragment), message_of(config));
    }
  }

  TEST_CASE("wrong types name the expected type") {
    ConfigFile f;
    struct Case {
      const char* from;
      const char* to;
      int line;
      const char* path;
      const char* fragment;
    };
    for (const auto& c : {
             Case{"name = \"dev\"", "name = 5", 2, "cluster.name",
                  "must be a string, not an integer"},
             Case{"data_dir = \"data/s1\"", "data_dir = \"data/s1\"\nsync = \"yes\"", 9,
                  "node[0].sync", "must be true or false, not a string"},
             Case{"listen = \"127.0.0.1:7700\"", "listen = 7700", 7, "node[0].listen",
                  "must be a string, not an integer"},
             Case{"task_lists = { default = 4 }",
                  "task_lists = { default = 4 }\nmax_concurrent_sessions = \"1\"", 15,
                  "node[1].max_concurrent_sessions", "must be an integer, not a string"},
             Case{"task_lists = { default = 4 }", "task_lists = { default = 4 }\nrate = \"fast\"",
                  15, "node[1].rate", "must be a number of tasks per second, not a string"},
             Case{"task_lists = { default = 4 }", "task_lists = { default = 4 }\nactor_threads = 0",
                  15, "node[1].actor_threads", "1"},
             Case{"name = \"dev\"", "name = \"dev\"\nkill_grace = \"0s\"", 3, "cluster.kill_grace",
                  "must be longer than zero"},
             Case{"name = \"dev\"", "name = \"dev\"\nretention = \"0s\"", 3, "cluster.retention",
                  "must be longer than zero"},
             Case{"name = \"dev\"", "name = \"dev\"\ntoken_file = []", 3, "cluster.token_file",
                  "must be a string, not an array"},
             Case{"[cluster]\nname = \"dev\"", "cluster = 1", 1, "cluster",
                  "must be a table ([cluster]), not an integer"},
         }) {
      CAPTURE(c.to);
      auto config = f.load(with(c.from, c.to));
      CHECK_MESSAGE(has_problem(config, f.path, c.line, c.path, c.fragment), message_of(config));
    }
  }

  TEST_CASE("shutdown_grace may be zero: a worker then interrupts its tasks at once") {
    ConfigFile f;
    auto config = f.load(with("name = \"dev\"", "name = \"dev\"\nshutdown_grace = \"0s\""));
    REQUIRE_MESSAGE(config, message_of(config));
    CHECK(config->shutdown_grace == Duration(0));
    auto later = f.load(with("name = \"dev\"", "name = \"dev\"\nshutdown_grace = \"1500ms\""));
    REQUIRE_MESSAGE(later, message_of(later));
    CHECK(later->shutdown_grace == Duration(1500ms));
  }

  TEST_CASE("quarantine keys: a maximum backoff shorter than the first is refused at its line") {
    ConfigFile f;
    auto config = f.load(with("name = \"dev\"", "name = \"dev\"\nquarantine_failures = 3\n"
                                                 "quarantine_backoff = \"30s\"\nquarantine_max_backoff = \"10m\""));
    REQUIRE_MESSAGE(config, message_of(config));
    CHECK(config->quarantine_failures == 3);
    CHECK(config->quarantine_backoff == Duration(30s));
    CHECK(config->quarantine_max_backoff == Duration(10min));

    auto shorter = f.load(with("name = \"dev\"", "name = \"dev\"\nquarantine_backoff = \"5m\"\n"
                                                  "quarantine_max_backoff = \"1m\""));
    CHECK_MESSAGE(has_problem(shorter, f.path, 4, "cluster.quarantine_max_backoff", "must be at least quarantine_backoff (5m)"),
                  message_of(shorter));
    // Against the default maximum (1h), the first backoff is the one to blame.
    auto longer = f.load(with("name = \"dev\"", "name = \"dev\"\nquarantine_backoff = \"2h\""));
    CHECK_MESSAGE(has_problem(longer, f.path, 3, "cluster.quarantine_backoff", "(1h, the default)"), message_of(longer));
  }

  TEST_CASE("log_cap takes a size of at least 1KiB") {
    ConfigFile f;
    auto load = [&](const std::string& value) {
      return f.load(
          with("task_lists = { default = 4 }", "task_lists = { default = 4 }\nlog_cap = " + value));
    };
    struct Case {
      const char* value;
      const char* fragment;
    };
    for (const auto& c :
         {Case{"\"16MB\"", "unknown unit \"MB\", did you mean \"MiB\"?"},
          Case{"\"512B\"", "must be at least 1KiB, not 512 bytes"},
          Case{"100", "must be at least 1KiB, not 100 bytes"},
          Case{"\"1.5MiB\"", "only whole numbers are allowed"},
          Case{"-1", "must be a size, not -1"},
          Case{"true", "must be a size such as \"16MiB\" or a number of bytes, not a boolean"}}) {
      CAPTURE(c.value);
      auto config = load(c.value);
      CHECK_MESSAGE(has_problem(config, f.path, 15, "node[1].log_cap", c.fragment),
                    message_of(config));
    }
    for (const auto& [value, bytes] :
         {std::pair{"\"2GiB\"", uint64_t{2} << 30}, std::pair{"\"1KiB\"", uint64_t{1024}},
          std::pair{"4096", uint64_t{4096}}}) {
      CAPTURE(value);
      auto config = load(value);
      REQUIRE_MESSAGE(config, test::why(config));
      CHECK(config->nodes[1].log_cap_bytes == bytes);
    }
  }

  TEST_CASE("global task list limits need a positive rate and a burst >= 1") {
    ConfigFile f;
    auto load = [&](const std::string& section) {
      return f.load(with("name = \"dev\"\n", "name = \"dev\"\n" + section));
    };
    CHECK(has_problem(load("[task_lists.gpu]\nrate = 0\n"), f.path, 4, "task_lists.gpu.rate",
                      "greater than 0, not 0"));
    CHECK(has_problem(load("[task_lists.gpu]\nrate = nan\n"), f.path, 4, "task_lists.gpu.rate",
                      "greater than 0"));
    CHECK(has_problem(load("[task_lists.gpu]\nrate = 1.0\nburst = 0\n"), f.path, 5,
                      "task_lists.gpu.burst", "must be at least 1, not 0"));
    CHECK(has_problem(load("[task_lists.gpu]\nburst = 3\n"), f.path, 3, "task_lists.gpu",
                      "missing required key \"rate\""));
    CHECK(has_problem(load("[task_lists]\ngpu = 5\n"), f.path, 4, "task_lists.gpu",
                      "must be a table with rate and burst"));
  }

  TEST_CASE("[limits] sets what the scheduler takes from users, each within its bounds") {
    ConfigFile f;
    auto load = [&](const std::string& section) {
      return f.load(with("name = \"dev\"\n", "name = \"dev\"\n" + section));
    };
    auto config = load(R"([limits]
definition_size = "8MiB"
tasks_per_workflow = 150000
workflow_id_length = 128
name_length = 64
input_size = "512KiB"
result_size = 2097152
)");
    REQUIRE_MESSAGE(config, test::why(config));
    CHECK(config->limits.definition_bytes == uint64_t{8} << 20);
    CHECK(config->limits.tasks == 150000);
    CHECK(config->limits.workflow_id_bytes == 128);
    CHECK(config->limits.name_bytes == 64);
    CHECK(config->limits.input_bytes == 512u << 10);
    CHECK(config->limits.result_bytes == 2u << 20);
    // Unset keys keep their defaults.
    auto some = load("[limits]\ntasks_per_workflow = 10\n");
    REQUIRE_MESSAGE(some, test::why(some));
    CHECK(some->limits.tasks == 10);
    CHECK(some->limits.definition_bytes == InputLimits{}.definition_bytes);

    CHECK(has_problem(load("[limits]\ndefinition_size = \"64MiB\"\n"), f.path, 4, "limits.definition_size",
                      "must be from 1KiB to 48MiB, not 64MiB"));
    CHECK(has_problem(load("[limits]\ninput_size = 100\n"), f.path, 4, "limits.input_size",
                      "must be from 1KiB to 8MiB, not 100 bytes"));
    CHECK(has_problem(load("[limits]\nresult_size = \"9MiB\"\n"), f.path, 4, "limits.result_size",
                      "must be from 1KiB to 8MiB, not 9MiB"));
    CHECK(has_problem(load("[limits]\nworkflow_id_length = 1024\n"), f.path, 4, "limits.workflow_id_length",
                      "must be at most 512, not 1024"));
    CHECK(has_problem(load("[limits]\nworkflow_id_length = 10\n"), f.path, 4, "limits.workflow_id_length",
                      "must be at least 64, not 10"));
    CHECK(has_problem(load("[limits]\nname_length = 4\n"), f.path, 4, "limits.name_length",
                      "must be at least 16, not 4"));
    CHECK(has_problem(load("[limits]\ntasks_per_workflow = 0\n"), f.path, 4, "limits.tasks_per_workflow",
                      "must be at least 1, not 0"));
    CHECK(has_problem(load("[limits]\ntasks_per_workflow = \"many\"\n"), f.path, 4,
                      "limits.tasks_per_workflow", "must be an integer, not a string"));
    CHECK(has_problem(load("[limits]\ntask_count = 5\n"), f.path, 4, "limits.task_count",
                      "unknown key"));
    CHECK(has_problem(f.load("limits = 5\n" + std::string(two_nodes)), f.path, 1, "limits",
                      "must be a table ([limits]), not an integer"));
    // A submission must fit in one message, defaults included.
    auto small = f.load(with("name = \"dev\"\n", "name = \"dev\"\n\n[connections]\nmax_message_bytes = \"16MiB\"\n"));
    CHECK_MESSAGE(has_problem(small, f.path, 5, "connections.max_message_bytes",
                              "limits.definition_size (32MiB, the default) and limits.input_size (4MiB, the default) "
                              "together, with 4KiB for the rest of the message, exceed connections.max_message_bytes "
                              "(16MiB): a submission is sent in one message; lower the limits or raise "
                              "max_message_bytes"),
                  message_of(small));
    auto lowered = f.load(with("name = \"dev\"\n", "name = \"dev\"\n\n[connections]\nmax_message_bytes = \"16MiB\"\n\n"
                                                  "[limits]\ndefinition_size = \"11MiB\"\n"));
    REQUIRE_MESSAGE(lowered, message_of(lowered));
    auto explicit_size = f.load(with("name = \"dev\"\n", "name = \"dev\"\n\n[limits]\ndefinition_size = \"48MiB\"\n"
                                                        "input_size = \"8MiB\"\n\n[connections]\nmax_message_bytes = \"56MiB\"\n"));
    CHECK_MESSAGE(has_problem(explicit_size, f.path, 5, "limits.definition_size",
                              "limits.definition_size (48MiB) and limits.input_size (8MiB) together"),
                  message_of(explicit_size));
  }

  TEST_CASE("keys of a role the node does not have are errors") {
    ConfigFile f;
    auto config =
        f.load(with("task_lists = { default = 4 }",
                    "task_lists = { default = 4 }\nlisten = \"127.0.0.1:7800\"\nsync = false"));
    CHECK_MESSAGE(
        has_problem(
            config, f.path, 15, "node[1].listen",
            "only applies to a node with the \"scheduler\" role (this node's roles: worker)"),
        message_of(config));
    CHECK(has_problem(config, f.path, 16, "node[1].sync",
                      "only applies to a node with the \"scheduler\" role"));
    config =
        f.load(with("data_dir = \"data/s1\"", "data_dir = \"data/s1\"\nresource_id = \"gpu0\""));
    CHECK_MESSAGE(has_problem(config, f.path, 9, "node[0].resource_id",
                              "only applies to a node with the \"worker\" role"),
                  message_of(config));
  }

  TEST_CASE("every problem is reported at once, one per line, in line order") {
    ConfigFile f;
    auto config = f.load(R"([cluster]
name = "my cluster"
heartbeat_interval = "fast"

[[node]]
name = "s1"
roles = ["scheduler"]
listen = "localhost"

[[node]]
name = "s1"
roles = ["worker", "boss"]
task_lists = { default = 0 }
log_cap = "1XB"
)");
    REQUIRE_FALSE(config);
    CHECK(config.error().code == Errc::INVALID_ARGUMENT);
    const auto lines = lines_of(config.error().message);
    CHECK_MESSAGE(lines.size() == 8, message_of(config));
    CHECK(has_problem(config, f.path, 2, "cluster.name", "bad cluster name \"my cluster\""));
    CHECK(has_problem(config, f.path, 3, "cluster.heartbeat_interval", "is not a duration"));
    CHECK(has_problem(config, f.path, 5, "node[0]", "missing required key \"data_dir\""));
    CHECK(has_problem(config, f.path, 8, "node[0].listen", "bad address \"localhost\""));
    CHECK(has_problem(config, f.path, 11, "node[1].name",
                      "duplicate node name \"s1\" (first at line 6)"));
    CHECK(has_problem(config, f.path, 12, "node[1].roles[1]", "unknown role \"boss\""));
    CHECK(has_problem(config, f.path, 13, "node[1].task_lists.default", "must be at least 1"));
    CHECK(has_problem(config, f.path, 14, "node[1].log_cap", "unknown unit \"XB\""));
    CHECK(
        std::is_sorted(lines.begin(), lines.end(), [&](const std::string& a, const std::string& b) {
          auto line = [&](const std::string& l) { return std::stoi(l.substr(f.path.size() + 1)); };
          return line(a) < line(b);
        }));
  }

  TEST_CASE("find_node and get_node look nodes up by name") {
    auto config = parse_cluster_config(two_nodes, "cluster.toml", "");
    REQUIRE_MESSAGE(config, test::why(config));
    REQUIRE(config->find_node("w1") != nullptr);
    CHECK(config->find_node("w1")->worker);
    CHECK(config->find_node("s1") == &config->nodes[0]);
    CHECK(config->find_node("w") == nullptr);
    auto found = config->get_node("s1");
    REQUIRE(found);
    CHECK(*found == &config->nodes[0]);
    auto missing = config->get_node("w9");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Errc::NOT_FOUND);
    CHECK(missing.error().message ==
          "no node \"w9\" in cluster config cluster.toml (its nodes: s1, w1)");
  }

  TEST_CASE("a file that cannot be read gets its own error") {
    test::TempDir dir;
    auto missing = load_cluster_config(dir / "nope.toml");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Errc::NOT_FOUND);
    CHECK(missing.error().message ==
          "cluster config \"" + (dir / "nope.toml") + "\" does not exist");
    auto directory = load_cluster_config(dir.path());
    REQUIRE_FALSE(directory);
    CHECK(directory.error().code == Errc::INVALID_ARGUMENT);
    CHECK(directory.error().message.find("is a directory") != std::string::npos);
  }

  TEST_CASE("parse_address reads HOST:PORT") {
    struct Good {
      const char* text;
      Address expected;
    };
    for (const auto& c :
         {Good{"127.0.0.1:7700", {"127.0.0.1", 7700}}, Good{"0.0.0.0:1", {"0.0.0.0", 1}},
          Good{"localhost:65535", {"localhost", 65535}},
          Good{"sched-1.example.com:80", {"sched-1.example.com", 80}},
          Good{"[::1]:7700", {"::1", 7700}}}) {
      CAPTURE(c.text);
      auto a = parse_address(c.text);
      REQUIRE_MESSAGE(a, test::why(a));
      CHECK(*a == c.expected);
      CHECK(a->to_string() == c.text);
    }
    struct Bad {
      const char* text;
      const char* why;
    };
    for (const auto& c :
         {Bad{"", "it is empty"}, Bad{"127.0.0.1", "no port"},
          Bad{"127.0.0.1:", "no port after ':'"}, Bad{":7700", "no host"},
          Bad{"127.0.0.1:0", "is not a number from 1 to 65535"},
          Bad{"127.0.0.1:65536", "is not a number from 1 to 65535"},
          Bad{"127.0.0.1:http", "is not a number from 1 to 65535"},
          Bad{"127.0.0.1:+80", "is not a number from 1 to 65535"},
          Bad{"256.0.0.1:80", "is not an IPv4 address"}, Bad{"1.2.3:80", "is not an IPv4 address"},
          Bad{"bad_host:80", "is not a hostname"}, Bad{"-x.example:80", "is not a hostname"},
          Bad{"::1:7700", "in brackets"}, Bad{"[::1]", "no port"},
          Bad{"[zz::1]:80", "is not an IPv6 address"}}) {
      CAPTURE(c.text);
      auto a = parse_address(c.text);
      REQUIRE_FALSE(a);
      CHECK(a.error().code == Errc::INVALID_ARGUMENT);
      CHECK(a.error().message.find(c.why) != std::string::npos);
      CHECK(a.error().message.find("(expected HOST:PORT, port 1-65535)") != std::string::npos);
    }
  }

  TEST_CASE("parse_bind_address reads HOST:PORT as parse_address does, and allows port 0") {
    auto any = parse_bind_address("127.0.0.1:0");
    REQUIRE_MESSAGE(any, test::why(any));
    CHECK(*any == Address{"127.0.0.1", 0});
    auto fixed = parse_bind_address("[::1]:9464");
    REQUIRE_MESSAGE(fixed, test::why(fixed));
    CHECK(*fixed == Address{"::1", 9464});
    for (const char* text : {"127.0.0.1", "127.0.0.1:-1", "127.0.0.1:65536", "bad_host:0", ""}) {
      CAPTURE(text);
      auto a = parse_bind_address(text);
      REQUIRE_FALSE(a);
      CHECK(a.error().code == Errc::INVALID_ARGUMENT);
      CHECK(a.error().message.find("(expected HOST:PORT, port 0-65535; 0 picks a free port)") != std::string::npos);
    }
  }

  TEST_CASE("parse_byte_size reads B, KiB, MiB and GiB") {
    CHECK(*parse_byte_size("0") == 0);
    CHECK(*parse_byte_size("17B") == 17);
    CHECK(*parse_byte_size("3KiB") == 3072);
    CHECK(*parse_byte_size("16MiB") == uint64_t{16} << 20);
    CHECK(*parse_byte_size("16 MiB") == uint64_t{16} << 20);
    CHECK(*parse_byte_size("5GiB") == uint64_t{5} << 30);
    for (const char* bad :
         {"", "MiB", "16kb", "16 MiB x", "99999999999999999999", "17179869184GiB"}) {
      CAPTURE(bad);
      auto size = parse_byte_size(bad);
      REQUIRE_FALSE(size);
      CHECK(size.error().message.find("is not a size") != std::string::npos);
    }
  }
}
