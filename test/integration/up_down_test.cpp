// troupe up / troupe down as a user runs them: the troupe CLI ($TROUPE_CLI) on a config with a
// free 127.0.0.1 port, its nodes found through their pid files and /proc, the example
// workflows run on them through the Gateway. Whatever a test started is killed by pid at its
// end, pass or fail.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "test/support/child_process.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using troupe::test::ChildProcess;
using troupe::test::TempDir;

using troupe::test::cli_binary;

namespace {

const std::vector<std::string> node_names = {"scheduler", "worker-a", "worker-b"};

std::string examples_dir() {
  const char* dir = std::getenv("TROUPE_EXAMPLES");
  if (dir == nullptr || *dir == '\0') throw std::runtime_error("TROUPE_EXAMPLES must name the examples folder");
  return dir;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> command_line(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
  return argv;
}

/// The pids of the troupe-node processes running with `--config config` (zombies have no
/// command line, so exited ones are not counted).
std::set<pid_t> nodes_of(const std::string& config) {
  std::set<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    const auto argv = command_line(pid);
    if (argv.size() >= 3 && fs::path(argv[0]).filename() == "troupe-node" && argv[1] == "--config" &&
        argv[2] == config) {
      pids.insert(pid);
    }
  }
  return pids;
}

/// A cluster config in a fresh directory: a scheduler on a free port, with the examples'
/// definitions registered, and two workers, one of them serving the examples' "io" task list. Its nodes are killed by pid when it goes away.
struct LocalCluster {
  LocalCluster() { write_config(); }
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  ~LocalCluster() {
    // Whatever the test left running: found by command line, so a node whose pid file the
    // test never saw is stopped too.
    for (pid_t pid : nodes_of(config)) ::kill(pid, SIGKILL);
  }

  void write_config() const {
    const std::string address = "\"127.0.0.1:" + std::to_string(port) + "\"";
    std::ofstream(config) << "[cluster]\nname = \"updown\"\n\n"
                          << "[[node]]\nname = \"scheduler\"\nroles = [\"scheduler\"]\nlisten = " << address
                          << "\ndata_dir = \"data\"\nsync = false\ndefinitions = \""
                          << examples_dir() << "/workflows\"\n\n"
                          << "[[node]]\nname = \"worker-a\"\nroles = [\"worker\"]\nscheduler = " << address
                          << "\ntask_lists = { default = 2 }\n\n"
                          << "[[node]]\nname = \"worker-b\"\nroles = [\"worker\"]\nscheduler = " << address
                          << "\ntask_lists = { default = 2, io = 1 }\n";
  }

  std::string pid_file(const std::string& node) const { return run_dir + "/" + node + ".pid"; }

  /// The pid in `node`'s pid file, or -1 when there is none.
  pid_t pid_of(const std::string& node) const {
    std::ifstream in(pid_file(node));
    pid_t pid = -1;
    if (!(in >> pid)) return -1;
    return pid;
  }

  TempDir dir;
  uint16_t port = troupe::test::free_port();
  // canonical: the nodes get the config's real path, and /tmp may be a symlink.
  std::string config = (fs::canonical(dir.path()) / "cluster.toml").string();
  std::string run_dir = (fs::canonical(dir.path()) / ".troupe-run" / "updown").string();
};

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

/// Runs `troupe ARGS...` to its end and returns its exit code and output.
Outcome troupe_cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", cli_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess child(argv);
  Outcome outcome;
  outcome.output = troupe::test::read_output(child, 90s);
  const int status = child.wait();
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return outcome;
}

bool alive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  return !command_line(pid).empty();  // a zombie has none
}

/// The logs of every invocation of `task` under `dir` (a worker's LOG_DIR/WORKFLOW), joined.
std::string task_logs(const std::string& dir, const std::string& task) {
  std::string text;
  if (!fs::is_directory(dir)) return text;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with(task + ".")) text += read_file(entry.path().string());
  }
  return text;
}

/// Runs the example workflow `name` as a user would: submitted by its registered name, watched
/// to its end, its result and status read, all through the CLI. The async-approval example is
/// approved with the token its task leaves in /tmp/troupe-approvals. Returns the result line.
std::string run_example(const LocalCluster& cluster, const std::string& name) {
  CAPTURE(name);
  const std::string id = "example-" + name + "-" + std::to_string(::getpid());
  const auto submitted = troupe_cli({"submit", name, "--id", id, "--config", cluster.config});
  REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.output);
  CHECK(submitted.output == id + "\n");
  if (name == "async-approval") {
    const std::string token_file = "/tmp/troupe-approvals/" + id + ".token";
    REQUIRE(troupe::test::eventually([&] { return fs::exists(token_file) && fs::file_size(token_file) > 0; }, 60s));
    std::string token = read_file(token_file);
    token.erase(token.find_last_not_of("\n") + 1);
    fs::remove(token_file);
    const auto approved = troupe_cli({"complete", token, R"({"approved": true})", "--config", cluster.config});
    CHECK_MESSAGE(approved.exit_code == 0, approved.output);
  }
  // Not on a terminal: one line per history event, until the end; exit 0 as it succeeded.
  const auto watched = troupe_cli({"watch", id, "--config", cluster.config});
  CHECK_MESSAGE(watched.exit_code == 0, watched.output);
  CHECK(watched.output.find("workflowSucceeded") != std::string::npos);
  const auto status = troupe_cli({"status", id, "--json", "--config", cluster.config});
  CHECK(status.exit_code == 0);
  CHECK(status.output.find(R"("workflowId":")" + id + R"(","state":"SUCCESS")") != std::string::npos);
  CHECK(status.output.find(R"("state":"WAITING")") == std::string::npos);
  const auto result = troupe_cli({"result", id, "--config", cluster.config});
  CHECK(result.exit_code == 0);
  // The first line says how it ended; the final tasks' outputs follow, one line each.
  return result.output.substr(0, result.output.find('\n') + 1);
}

}  // namespace

TEST_SUITE("integration.up_down") {
  TEST_CASE("troupe up starts every node detached, runs the examples, and troupe down stops them all") {
    LocalCluster cluster;
    const auto up = troupe_cli({"up", cluster.config});
    INFO(up.output);
    REQUIRE(up.exit_code == 0);

    std::set<pid_t> pids;
    for (const auto& node : node_names) {
      CAPTURE(node);
      const pid_t pid = cluster.pid_of(node);
      REQUIRE(pid > 0);
      CHECK(alive(pid));
      CHECK(::getsid(pid) == pid);  // a session of its own: a Ctrl-C in the terminal does not reach it
      const auto argv = command_line(pid);
      REQUIRE(argv.size() == 5);
      CHECK(argv[4] == node);
      CHECK(fs::exists(cluster.run_dir + "/" + node + ".log"));
      CHECK(up.output.find(node) != std::string::npos);
      pids.insert(pid);
    }
    CHECK(nodes_of(cluster.config) == pids);

    SUBCASE("the cluster is encrypted by default: up made its CA and certificates; a plaintext client is refused") {
      CHECK(up.output.find("made " + (fs::canonical(cluster.dir.path()) / "certs" / "ca.pem").string()) !=
            std::string::npos);
      for (const auto& node : node_names) CHECK(fs::exists(cluster.dir.path() + "/certs/" + node + ".pem"));
      CHECK((fs::status(cluster.dir.path() + "/certs/ca.key").permissions() & fs::perms::group_all) == fs::perms::none);
      const std::string address = "127.0.0.1:" + std::to_string(cluster.port);
      const auto listed = troupe_cli({"list", "--config", cluster.config});
      CHECK_MESSAGE(listed.exit_code == 0, listed.output);
      const auto plain = troupe_cli({"list", "--address", address});
      CHECK(plain.exit_code == 3);
      CHECK_MESSAGE(plain.output.find("a scheduler speaks TLS unless its config says plaintext") != std::string::npos,
                    plain.output);
      const auto trusted = troupe_cli({"list", "--address", address, "--tls-ca", cluster.dir.path() + "/certs/ca.pem"});
      CHECK_MESSAGE(trusted.exit_code == 0, trusted.output);
    }

    SUBCASE("the scheduler runs the example workflows on the workers") {
      const std::string suffix = "-" + std::to_string(::getpid());
      for (const std::string name : {"diamond", "fanout", "retry-heartbeat", "async-approval", "training"}) {
        CHECK(run_example(cluster, name) == "example-" + name + suffix + " SUCCESS\n");
      }
      // Only worker-b serves the io task list.
      CHECK(task_logs(cluster.dir.path() + "/logs/worker-b/example-diamond" + suffix, "right")
                .find("right: on the io task list") != std::string::npos);
      // The training session ran on one worker, its tasks sharing the dataset envEnter made.
      const std::string training = "/example-training" + suffix;
      std::string upload;
      for (const std::string worker : {"worker-a", "worker-b"}) {
        upload += task_logs(cluster.dir.path() + "/logs/" + worker + training, "upload");
      }
      CHECK_MESSAGE(upload.find("upload: the model of 5 samples, from session example-training" + suffix + "/dataset") !=
                        std::string::npos,
                    upload);
    }

    SUBCASE("troupe up again reports them running and starts nothing") {
      const auto again = troupe_cli({"up", cluster.config});
      INFO(again.output);
      CHECK(again.exit_code == 0);
      CHECK(again.output.find("already running") != std::string::npos);
      CHECK(again.output.find("started") == std::string::npos);
      CHECK(nodes_of(cluster.config) == pids);
      for (const auto& node : node_names) CHECK(pids.count(cluster.pid_of(node)) == 1);
    }

    const auto down = troupe_cli({"down", cluster.config});
    INFO(down.output);
    CHECK(down.exit_code == 0);
    for (pid_t pid : pids) CHECK_FALSE(alive(pid));
    for (const auto& node : node_names) CHECK_FALSE(fs::exists(cluster.pid_file(node)));
    CHECK(nodes_of(cluster.config).empty());

    const auto down_again = troupe_cli({"down", cluster.config});
    CHECK(down_again.exit_code == 0);
    CHECK(down_again.output.find("not running") != std::string::npos);
  }

  TEST_CASE("a stale pid file is replaced by troupe up and removed by troupe down") {
    LocalCluster cluster;
    fs::create_directories(cluster.run_dir);
    // A pid file naming a live process that is not the node (this test) must not stop up or
    // get that process signalled; one naming no number is stale as well.
    std::ofstream(cluster.pid_file("scheduler")) << ::getpid() << "\n";
    std::ofstream(cluster.pid_file("worker-a")) << "not a pid\n";

    const auto up = troupe_cli({"up", cluster.config, "--node", "scheduler"});
    INFO(up.output);
    CHECK(up.exit_code == 0);
    CHECK(up.output.find("replaced a stale pid file naming pid " + std::to_string(::getpid())) != std::string::npos);
    const pid_t scheduler = cluster.pid_of("scheduler");
    CHECK(scheduler != ::getpid());
    CHECK(alive(scheduler));
    CHECK(nodes_of(cluster.config) == std::set<pid_t>{scheduler});

    const auto down = troupe_cli({"down", cluster.config});
    INFO(down.output);
    CHECK(down.exit_code == 0);
    CHECK(down.output.find("removed a stale pid file") != std::string::npos);
    CHECK_FALSE(alive(scheduler));
    CHECK_FALSE(fs::exists(cluster.pid_file("scheduler")));
    CHECK_FALSE(fs::exists(cluster.pid_file("worker-a")));
  }

  TEST_CASE("a node still running after the grace is killed") {
    LocalCluster cluster;
    const auto up = troupe_cli({"up", cluster.config, "--node", "scheduler"});
    INFO(up.output);
    REQUIRE(up.exit_code == 0);
    const pid_t scheduler = cluster.pid_of("scheduler");
    REQUIRE(alive(scheduler));
    // A stopped process holds SIGTERM pending until it continues; SIGKILL ends it all the same.
    REQUIRE(::kill(scheduler, SIGSTOP) == 0);
    const auto down = troupe_cli({"down", cluster.config, "--grace", "300ms"});
    INFO(down.output);
    CHECK(down.exit_code == 0);
    CHECK(down.output.find("killed (SIGKILL: still running 300ms after SIGTERM)") != std::string::npos);
    CHECK_FALSE(alive(scheduler));
    CHECK_FALSE(fs::exists(cluster.pid_file("scheduler")));
  }

  TEST_CASE("a node that exits during startup fails troupe up with the end of its log") {
    LocalCluster cluster;
    std::ofstream(cluster.dir.path() + "/data") << "a file where the scheduler's data directory should be\n";
    const auto up = troupe_cli({"up", cluster.config});
    INFO(up.output);
    CHECK(up.exit_code == 1);
    CHECK(up.output.find("during startup") != std::string::npos);
    CHECK(up.output.find("scheduler logged") != std::string::npos);
    CHECK(up.output.find("not started: a scheduler did not come up") != std::string::npos);
    CHECK_FALSE(fs::exists(cluster.pid_file("scheduler")));
    CHECK(nodes_of(cluster.config).empty());
  }

  TEST_CASE("a config error or an unknown node exits 2 and starts nothing") {
    LocalCluster cluster;
    SUBCASE("an unknown key") {
      std::ofstream(cluster.config, std::ios::app) << "colour = \"blue\"\n";
      const auto up = troupe_cli({"up", cluster.config});
      INFO(up.output);
      CHECK(up.exit_code == 2);
      CHECK(up.output.find("colour: unknown key") != std::string::npos);
    }
    SUBCASE("a node the config does not have") {
      const auto up = troupe_cli({"up", cluster.config, "--node", "worker-z"});
      INFO(up.output);
      CHECK(up.exit_code == 2);
      CHECK(up.output.find("worker-z") != std::string::npos);
    }
    SUBCASE("no config") {
      CHECK(troupe_cli({"up"}).exit_code == 2);
      CHECK(troupe_cli({"down", cluster.dir.path() + "/missing.toml"}).exit_code == 2);
    }
    CHECK_FALSE(fs::exists(cluster.run_dir));
    CHECK(nodes_of(cluster.config).empty());
  }
}
