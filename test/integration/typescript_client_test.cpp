// The client API from a second language: examples/client-typescript (TypeScript, capnp-es from
// npm) built from this tree's schema and run against real troupe-node processes. Its packages
// come from the npm registry (npm ci, pinned by its package-lock.json) into a directory of the
// build ($TROUPE_TS_WORK). Without node and npm, or when npm ci fails, the suite fails, saying
// why: tools/setup installs them, and a skip would count as a pass and leave the client untested.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using troupe::test::ChildProcess;
using troupe::test::CliRun;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::contains;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0')
    throw std::runtime_error(std::string(name) + " must be set (test/meson.build)");
  return value;
}

/// `command` run by sh in `dir` with stdin from /dev/null, its stdout and stderr together;
/// killed after `timeout` (then `code` is -1).
CliRun shell(const std::string& dir, const std::string& command, std::chrono::seconds timeout) {
  ChildProcess child({"/bin/sh", "-c", "cd \"$0\" && exec 2>&1 </dev/null && " + command, dir});
  CliRun run;
  run.output = troupe::test::read_output(child, timeout);
  if (troupe::test::still_running(child)) child.kill(SIGKILL);
  const int status = child.wait();
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

/// The example laid out as in the repository (WORK/examples/client-typescript beside
/// WORK/schema), so its scripts find ../../schema; what a developer built in the source tree
/// (node_modules, dist, src/schema) is not copied.
std::string copy_example(const std::string& work) {
  const fs::path source = fs::path(env("TROUPE_EXAMPLES")) / "client-typescript";
  const fs::path example = fs::path(work) / "examples" / "client-typescript";
  fs::remove_all(example / "src");
  fs::remove_all(example / "dist");
  fs::create_directories(example / "src");
  fs::create_directories(fs::path(work) / "schema");
  const auto options = fs::copy_options::overwrite_existing;
  for (const char* file : {"package.json", "package-lock.json", "tsconfig.json", "schema.mjs"}) {
    fs::copy_file(source / file, example / file, options);
  }
  for (const auto& entry : fs::directory_iterator(source / "src")) {
    if (entry.is_regular_file())
      fs::copy_file(entry.path(), example / "src" / entry.path().filename(), options);
  }
  for (const auto& entry : fs::directory_iterator(env("TROUPE_SCHEMA"))) {
    if (entry.path().extension() == ".capnp") {
      fs::copy_file(entry.path(), fs::path(work) / "schema" / entry.path().filename(), options);
    }
  }
  return example.string();
}

/// The example installed (npm ci) and built (npm run build) once for the suite; the directory
/// to run it in. Fails the case that asks first, with npm's words, when that cannot be done.
std::string built_client() {
  static std::string built;
  static std::string failure;
  if (built.empty() && failure.empty()) {
    if (shell("/", "command -v node && command -v npm", 10s).code != 0) {
      failure =
          "node and npm are needed to test the TypeScript client and are not on PATH: "
          "run tools/setup (it installs Debian's nodejs and npm)";
    } else {
      const std::string dir = copy_example(env("TROUPE_TS_WORK"));
      auto installed = shell(dir, "npm ci --no-audit --no-fund", 240s);
      if (installed.code != 0) {
        failure = "npm ci failed in " + dir + " (the npm registry must be reachable):\n" +
                  installed.output;
      } else if (auto compiled = shell(dir, "npm run build", 120s); compiled.code != 0) {
        failure = "npm run build failed in " + dir + ":\n" + compiled.output;
      } else {
        built = dir;
      }
    }
  }
  REQUIRE_MESSAGE(failure.empty(), failure);
  return built;
}

/// `node dist/main.js ARGS...` of the built client; arguments may not hold single quotes.
CliRun client(const std::vector<std::string>& args) {
  std::string command = "exec node dist/main.js";
  for (const auto& a : args) command += " '" + a + "'";
  return shell(built_client(), command, 60s);
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string random_secret() {
  std::random_device device;
  std::string s;
  for (int i = 0; i < 48; ++i) s += "0123456789abcdef"[device() % 16];
  return s;
}

ClusterSpec token_spec() {
  ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
  spec.token_file = "cluster.token";  // beside the config
  return spec;
}

/// A scheduler with a cluster token and one worker, accepting connections.
struct TokenCluster {
  TokenCluster() {
    write_file(cluster.dir / "cluster.token", random_secret() + "\n");
    write_file(cluster.dir / "chain.json", R"({"name": "chain", "tasks": [
        {"name": "fetch", "shell": {"command": ["sh", "-c", "echo fetched"]}},
        {"name": "report", "dependsOn": ["fetch"], "handler": "noop"}]})");
    cluster.start("scheduler");
    cluster.start("worker-a");
    troupe::test::connect(cluster.port);  // polls until the scheduler accepts connections
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(cluster.port); }
  std::string token() const { return cluster.dir / "cluster.token"; }
  std::string chain() const { return cluster.dir / "chain.json"; }

  Cluster cluster{token_spec()};
};

}  // namespace

TEST_SUITE("integration.typescript_client") {
  TEST_CASE(
      "the TypeScript client starts, watches, describes and lists workflows; refusals are errors") {
    built_client();  // before the cluster: npm ci may take a while on a cold cache
    TokenCluster c;
    auto run = client({"--address", c.address(), "--token-file", c.token(), "--id", "ts-1",
                       "--input", R"({"n": 3})", "--watch", c.chain()});
    INFO(run.output);
    CHECK(run.code == 0);
    CHECK(contains(run.output, "started ts-1\n"));
    // The history, pushed to the HistorySink the client serves, from its first event to its last.
    CHECK(contains(run.output, "event 1 workflow ts-1 workflowSubmitted\n"));
    CHECK(contains(run.output, "task fetch taskSucceeded\n"));
    CHECK(contains(run.output, "workflow ts-1 workflowFinalized\n"));
    CHECK(contains(run.output, "result ts-1 SUCCESS\n"));
    CHECK(contains(run.output, "task fetch SUCCESS attempt 1 worker worker-a\n"));
    CHECK(contains(run.output, "task report SUCCESS attempt 1 worker worker-a\n"));
    CHECK(contains(run.output, "listed ts-1 SUCCESS chain\n"));

    // runFrom: the task and its descendants run; the others never run and do not block them.
    auto from = client({"--address", c.address(), "--token-file", c.token(), "--id", "ts-from",
                        "--from", "report", c.chain()});
    INFO(from.output);
    CHECK(from.code == 0);
    CHECK(contains(from.output, "result ts-from SUCCESS\n"));
    CHECK(contains(from.output, "task fetch WAITING attempt 0 worker -\n"));
    CHECK(contains(from.output, "task report SUCCESS attempt 1 worker worker-a\n"));
    CHECK(contains(from.output, "listed ts-1 SUCCESS chain\n"));
    CHECK(contains(from.output, "listed ts-from SUCCESS chain\n"));

    // Refusals arrive as Common.Error values, code and message.
    auto bare = client({"--address", c.address(), c.chain()});
    CHECK(bare.code == 2);
    CHECK_MESSAGE(
        contains(bare.output, "refused (invalidArgument): this cluster requires its token"),
        bare.output);

    write_file(
        c.cluster.dir / "broken.json",
        R"({"name": "broken", "tasks": [{"name": "a", "dependsOn": ["ghost"], "handler": "noop"}]})");
    auto broken = client(
        {"--address", c.address(), "--token-file", c.token(), c.cluster.dir / "broken.json"});
    CHECK(broken.code == 2);
    CHECK_MESSAGE(
        contains(broken.output, "refused (invalidArgument): the workflow definition has 1 problem"),
        broken.output);
    CHECK(contains(broken.output, "$.tasks[0].dependsOn[0]: unknown task 'ghost'"));

    auto again =
        client({"--address", c.address(), "--token-file", c.token(), "--id", "ts-1", c.chain()});
    CHECK(again.code == 2);
    CHECK_MESSAGE(
        contains(again.output, "refused (alreadyExists): workflow 'ts-1' has finished (SUCCESS)"),
        again.output);
  }

  TEST_CASE("the TypeScript client says so when no scheduler listens at the address") {
    const uint16_t port = troupe::test::free_port();  // free a moment ago: nothing listens
    auto run = client({"--address", "127.0.0.1:" + std::to_string(port), "chain"});
    CHECK(run.code == 3);
    CHECK_MESSAGE(
        contains(run.output, "cannot reach the scheduler at 127.0.0.1:" + std::to_string(port)),
        run.output);
  }
}
