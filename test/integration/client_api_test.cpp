// The client API and the client commands end to end, against real troupe-node processes
// ($TROUPE_NODE), the troupe CLI ($TROUPE_CLI) and the C++ GatewayClient: kill, list paging
// over many workflows, watch across a reconnect, asyncCompletion tokens, the cluster token,
// `troupe dev` restarting on its directory, and the CLI's exit codes.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/client/gateway_client.hpp"
#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/processes.hpp"

using namespace std::chrono_literals;
namespace client = troupe::client;
using troupe::test::ChildProcess;
using troupe::test::Cluster;
using troupe::test::ClusterSpec;
using troupe::test::cli_binary;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::troupe_cli;

namespace {

using troupe::test::alive;
using troupe::test::ReapTask;


std::string address_of(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

/// A GatewayClient once the scheduler at `port` accepts connections (20 s at most).
std::unique_ptr<client::GatewayClient> gateway(uint16_t port, const std::string& token = "") {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    client::ConnectOptions options;
    options.timeout = 2s;
    options.token = token;
    auto connected = client::GatewayClient::connect("127.0.0.1", port, options);
    if (connected) return std::move(*connected);
    if (connected.error().code != troupe::Errc::UNAVAILABLE || std::chrono::steady_clock::now() > deadline) {
      REQUIRE_MESSAGE(false, "cannot connect to " << address_of(port) << ": " << connected.error().message);
    }
    std::this_thread::sleep_for(50ms);
  }
}

/// Every string value of `"key":"..."` in `json` (CLI output: keys and ids need no escapes).
std::vector<std::string> json_strings(const std::string& json, const std::string& key) {
  std::vector<std::string> out;
  const std::string needle = "\"" + key + "\":\"";
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at)) {
    at += needle.size();
    const size_t end = json.find('"', at);
    if (end == std::string::npos) break;
    out.push_back(json.substr(at, end - at));
    at = end;
  }
  return out;
}

std::string json_string(const std::string& json, const std::string& key) {
  auto all = json_strings(json, key);
  return all.empty() ? std::string("<no " + key + ">") : all.front();
}

/// The lines of `text`.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

/// The pid written to `pid_file`, once it is there (0 if it did not appear within `timeout`).
pid_t wait_for_pid(const std::string& pid_file, std::chrono::milliseconds timeout) {
  pid_t pid = 0;
  eventually([&] {
    std::ifstream in(pid_file);
    pid = 0;
    in >> pid;
    return pid > 0;
  }, timeout);
  return pid;
}

/// `troupe status ID --json` until `condition` holds for its output (20 s at most).
bool status_until(const std::string& id, const std::string& address,
                  const std::function<bool(const std::string&)>& condition, std::string* last = nullptr) {
  std::string seen;
  const bool held = eventually([&] {
    auto run = troupe_cli({"status", id, "--json", "--address", address});
    seen = run.output;
    return run.code == 0 && condition(run.output);
  }, 20s);
  if (last) *last = seen;
  return held;
}

/// A single-worker cluster started and accepting connections.
std::unique_ptr<Cluster> start_cluster(ClusterSpec spec) {
  auto cluster = std::make_unique<Cluster>(std::move(spec));
  cluster->start("scheduler");
  for (const auto& worker : cluster->spec.workers) cluster->start(worker.name);
  return cluster;
}

ClusterSpec one_worker(uint32_t slots = 4) {
  ClusterSpec spec;
  spec.workers = {{"worker-a", {{"default", slots}}, std::nullopt}};
  return spec;
}

std::string first_of(const std::vector<std::string>& problems) { return problems.empty() ? "" : problems.front(); }

/// `troupe dev` serving `address` with its data in `data`, not syncing (faster).
std::unique_ptr<ChildProcess> dev_process(const std::string& address, const std::string& data) {
  return std::make_unique<ChildProcess>(
      std::vector<std::string>{cli_binary(), "dev", "--listen", address, "--dir", data, "--sync", "false"});
}

/// SIGINT to `troupe dev`: it must exit 0 within 30 s.
void stop_dev(ChildProcess& dev) {
  dev.kill(SIGINT);
  REQUIRE_MESSAGE(eventually([&] { return !troupe::test::still_running(dev); }, 30s),
                  "troupe dev did not exit after SIGINT");
  const int status = dev.wait();
  CHECK_MESSAGE(WIFEXITED(status), "troupe dev ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  CHECK(WEXITSTATUS(status) == 0);
}

/// 48 random hex digits.
std::string random_secret() {
  std::random_device device;
  std::string s;
  for (int i = 0; i < 48; ++i) s += "0123456789abcdef"[device() % 16];
  return s;
}

/// Starts `total` one-task noop workflows (ids PREFIX1, PREFIX2, ...), 100 in flight, and asks
/// each for its result `asks` times at once; `on_end` runs with each answer, the moment it
/// says the workflow ended. Returns once every call, and every call `on_end` queued, answered.
void at_their_ends(client::GatewayClient& api, const std::string& prefix, int total, int asks,
                   std::vector<std::string>& problems,
                   const std::function<void(const std::string&, troupe::Result<client::WorkflowResult>)>& on_end) {
  const std::string noop = R"({"name": "small", "tasks": [{"name": "a", "handler": "noop"}]})";
  int next = 0;
  std::function<void()> launch = [&] {
    if (next >= total) return;
    const std::string id = prefix + std::to_string(++next);
    api.start_async({noop, "", id, ""}, [&, id](troupe::Result<std::string> started) {
      if (!started) {
        problems.push_back(id + ": start: " + started.error().message);
        launch();
        return;
      }
      auto left = std::make_shared<int>(asks);
      for (int k = 0; k < asks; ++k) {
        api.result_async(id, [&, id, left](troupe::Result<client::WorkflowResult> r) {
          on_end(id, std::move(r));
          if (--*left == 0) launch();
        });
      }
    });
  };
  for (int i = 0; i < 100; ++i) launch();
  auto ran = api.run(std::chrono::minutes(3));
  REQUIRE_MESSAGE(ran, ran.error().message);
}

}  // namespace

TEST_SUITE("integration.client_api") {
  TEST_CASE("kill: tasks that ignore SIGTERM are SIGKILLed at once; stop waits for the kill grace") {
    ClusterSpec spec = one_worker();
    spec.kill_grace = "1h";
    auto cluster = start_cluster(spec);
    gateway(cluster->port);
    const std::string address = address_of(cluster->port);
    const std::string dir = cluster->dir.path();
    const std::string pid_file = dir + "/ignores-term.pid";
    write_file(dir + "/ignores-term.json", R"({"name": "ignores-term", "tasks": [{"name": "t",
        "shell": {"command": ["sh", "-c", "trap '' TERM; echo $$ > )" + pid_file + R"(; sleep 600"]}}]})");
    ReapTask reap;

    auto submit_and_wait_running = [&](const std::string& id) {
      REQUIRE(troupe_cli({"submit", dir + "/ignores-term.json", "--id", id, "--address", address}).code == 0);
      reap.pid = wait_for_pid(pid_file, 20s);
      REQUIRE(reap.pid > 0);
      std::string status;
      REQUIRE_MESSAGE(status_until(id, address, [](const std::string& s) {
        return contains(s, R"({"name":"t","state":"RUNNING")");
      }, &status), status);
      CHECK(alive(reap.pid));
    };
    auto killed_promptly = [&](const std::string& id) {
      const auto asked = std::chrono::steady_clock::now();
      auto killed = troupe_cli({"kill", id, "--address", address});
      CHECK_MESSAGE(killed.code == 0, killed.output);
      // The answer is the state the kill ends in, durable: the task's immediate kill needs no
      // word from the worker, so STOPPED follows at once.
      CHECK_MESSAGE(killed.output == id + " STOPPED\n", killed.output);
      auto result = troupe_cli({"result", id, "--timeout", "20s", "--address", address});
      CHECK_MESSAGE(result.code == 1, result.output);
      CHECK(contains(result.output, id + " STOPPED"));
      CHECK(std::chrono::steady_clock::now() - asked < 10s);  // not the 1h grace
      const pid_t pid = reap.pid;
      CHECK(eventually([pid] { return !alive(pid); }, 10s));
      std::string status;
      CHECK_MESSAGE(status_until(id, address, [](const std::string& s) {
        return contains(s, R"("state":"STOPPED")") && contains(s, R"({"name":"t","state":"KILLED")");
      }, &status), status);
    };

    SUBCASE("stop waits for the grace; kill escalates") {
      submit_and_wait_running("ignores-term-1");
      auto stopped = troupe_cli({"stop", "ignores-term-1", "--address", address});
      CHECK_MESSAGE(stopped.code == 0, stopped.output);
      CHECK(contains(stopped.output, "ignores-term-1 READY_STOP"));
      // The task ignores SIGTERM and its grace is an hour: the workflow stays open.
      std::string status;
      CHECK_MESSAGE(status_until("ignores-term-1", address, [](const std::string& s) {
        return contains(s, R"("workflowId":"ignores-term-1","state":"READY_STOP")");
      }, &status), status);
      auto waited = troupe_cli({"result", "ignores-term-1", "--timeout", "1s", "--address", address});
      CHECK(waited.code == 5);  // timed out waiting, not FAILED
      CHECK(contains(waited.output, "did not end within"));
      CHECK(alive(reap.pid));
      auto listed = troupe_cli({"list", "--state", "OPEN", "--json", "--address", address});
      CHECK(json_strings(listed.output, "workflowId") == std::vector<std::string>{"ignores-term-1"});
      killed_promptly("ignores-term-1");
    }
    SUBCASE("kill a running workflow") {
      submit_and_wait_running("ignores-term-2");
      killed_promptly("ignores-term-2");
    }
  }

  TEST_CASE("list pages through 10000 workflows newest first or in id order; state and name filters") {
    ClusterSpec spec = one_worker(64);
    spec.sync = false;
    auto cluster = start_cluster(spec);
    auto api = gateway(cluster->port);
    const std::string address = address_of(cluster->port);
    const std::string dir = cluster->dir.path();

    // A few workflows in each state, their ids among the bulk's in id order.
    const std::string noop = R"({"name": "small", "tasks": [{"name": "a", "handler": "noop"}]})";
    const std::string other_ok = R"({"name": "other", "tasks": [{"name": "a", "handler": "noop"}]})";
    const std::string other_fails = R"({"name": "other", "tasks": [{"name": "a", "shell": {"command": ["sh", "-c", "exit 3"]}}]})";
    const std::string fails = R"({"name": "failing", "tasks": [{"name": "a", "shell": {"command": ["sh", "-c", "exit 3"]}}]})";
    // Runs until the test's directory goes away (so it cannot outlive the test).
    const std::string sleepy = R"({"name": "sleepy", "tasks": [{"name": "a", "shell": {"command": ["sh", "-c", "while [ -d )" +
                               dir + R"( ]; do sleep 0.2; done"]}}]})";
    const std::vector<std::pair<std::string, std::string>> extras = {
        {"wf-00100a", other_ok}, {"wf-05000a", other_fails}, {"wf-09000a", fails},
        {"wf-02000a", sleepy},   {"wf-10000a", sleepy}};
    for (const auto& [id, definition] : extras) {
      auto started = api->start({definition, "", id, ""});
      REQUIRE_MESSAGE(started, started.error().message);
    }

    // The bulk: 10000 one-task workflows through the async API, 200 in flight.
    constexpr int total = 10000;
    constexpr int in_flight = 200;
    int next = 0, succeeded = 0;
    std::vector<std::string> problems;
    std::function<void()> launch = [&] {
      if (next >= total) return;
      char buf[16];
      std::snprintf(buf, sizeof buf, "wf-%05d", ++next);
      const std::string id = buf;
      api->start_async({noop, "", id, ""}, [&, id](troupe::Result<std::string> started) {
        if (!started || *started != id) {
          problems.push_back(id + ": start: " + (started ? *started : started.error().message));
          launch();
          return;
        }
        api->result_async(id, [&, id](troupe::Result<client::WorkflowResult> ended) {
          if (ended && ended->state == "SUCCESS") {
            ++succeeded;
          } else {
            problems.push_back(id + ": " + (ended ? ended->state + " " + ended->detail : ended.error().message));
          }
          launch();
        });
      });
    };
    const auto began = std::chrono::steady_clock::now();
    for (int i = 0; i < in_flight; ++i) launch();
    auto ran = api->run(std::chrono::minutes(4));
    const auto bulk_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    MESSAGE("10000 workflows submitted and ended in " << bulk_seconds << " s");
    REQUIRE_MESSAGE(ran, ran.error().message);
    CHECK_MESSAGE(problems.empty(), problems.size() << " failed, the first: " << first_of(problems));
    CHECK(succeeded == total);
    auto ended = [&](const std::string& id) {
      auto r = api->result(id, 30s);
      return r ? r->state : r.error().message;
    };
    CHECK(ended("wf-00100a") == "SUCCESS");
    CHECK(ended("wf-05000a") == "FAILED");
    CHECK(ended("wf-09000a") == "FAILED");

    std::vector<std::string> expected;
    for (int i = 1; i <= total; ++i) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "wf-%05d", i);
      expected.push_back(buf);
    }
    for (const auto& extra : extras) expected.push_back(extra.first);
    std::sort(expected.begin(), expected.end());

    // The listings below share the one bulk run (subcases would repeat it).
    {  // troupe list --limit 1000 --after CURSOR pages through all of them, each once
      const auto listing = std::chrono::steady_clock::now();
      std::vector<std::string> listed;
      std::string cursor;
      int pages = 0;
      do {
        std::vector<std::string> args = {"list", "--limit", "1000", "--json", "--address", address};
        if (!cursor.empty()) args.insert(args.end(), {"--after", cursor});
        auto page = troupe_cli(args);
        REQUIRE_MESSAGE(page.code == 0, page.output.substr(0, 500));
        auto ids = json_strings(page.output, "workflowId");
        CHECK(ids.size() <= 1000);
        listed.insert(listed.end(), ids.begin(), ids.end());
        const auto cursors = json_strings(page.output, "nextCursor");
        REQUIRE(cursors.size() <= 1);
        cursor = cursors.empty() ? "" : cursors.front();
        REQUIRE(contains(page.output, R"("nextCursor":")" + cursor + "\""));
        REQUIRE(++pages <= 20);
      } while (!cursor.empty());
      MESSAGE("listed " << listed.size() << " workflows in " << pages << " pages in "
                        << std::chrono::duration<double>(std::chrono::steady_clock::now() - listing).count() << " s");
      CHECK(pages == 11);  // 10005 workflows: ten full pages and one of 5
      CHECK(listed.size() == expected.size());
      std::sort(listed.begin(), listed.end());
      CHECK(listed == expected);  // every id once
    }
    {  // the client API pages newest first by default
      std::vector<std::string> listed;
      std::vector<int64_t> created;
      client::ListQuery query;
      query.limit = 777;
      int pages = 0;
      do {
        auto page = api->list(query);
        REQUIRE_MESSAGE(page, page.error().message);
        for (const auto& w : page->workflows) {
          listed.push_back(w.workflow_id);
          created.push_back(w.created_us);
        }
        query.after = page->next_cursor;
        REQUIRE(++pages <= 30);
      } while (!query.after.empty());
      CHECK(std::is_sorted(created.rbegin(), created.rend()));
      std::sort(listed.begin(), listed.end());
      CHECK(listed == expected);
    }
    {  // and in id order with any limit
      std::vector<std::string> listed;
      client::ListQuery query;
      query.limit = 777;
      query.sort = client::ListSort::ID;
      int pages = 0;
      do {
        auto page = api->list(query);
        REQUIRE_MESSAGE(page, page.error().message);
        CHECK(page->workflows.size() <= 777);
        for (const auto& w : page->workflows) listed.push_back(w.workflow_id);
        query.after = page->next_cursor;
        REQUIRE(++pages <= 30);
      } while (!query.after.empty());
      CHECK(listed == expected);
    }
    {  // filters: state, name, both
      // The ids listed, in id order.
      auto ids_of = [&](std::vector<std::string> filter) {
        std::vector<std::string> args = {"list", "--json", "--address", address};
        args.insert(args.end(), filter.begin(), filter.end());
        auto run = troupe_cli(args);
        CHECK_MESSAGE(run.code == 0, run.output.substr(0, 500));
        CHECK(json_string(run.output, "nextCursor") == "");
        auto ids = json_strings(run.output, "workflowId");
        std::sort(ids.begin(), ids.end());
        return ids;
      };
      using ids = std::vector<std::string>;
      CHECK(ids_of({"--state", "FAILED"}) == ids{"wf-05000a", "wf-09000a"});
      CHECK(ids_of({"--state", "OPEN"}) == ids{"wf-02000a", "wf-10000a"});
      CHECK(ids_of({"--state", "open"}) == ids{"wf-02000a", "wf-10000a"});
      CHECK(ids_of({"--state", "RUNNING"}) == ids{"wf-02000a", "wf-10000a"});
      CHECK(ids_of({"--state", "PAUSED"}).empty());
      CHECK(ids_of({"--state", "STOPPED"}).empty());
      CHECK(ids_of({"--name", "other"}) == ids{"wf-00100a", "wf-05000a"});
      CHECK(ids_of({"--name", "other", "--state", "SUCCESS"}) == ids{"wf-00100a"});
      CHECK(ids_of({"--name", "sleepy", "--state", "CLOSED"}).empty());
      CHECK(ids_of({"--name", "nobody"}).empty());
      auto succeeded_ids = ids_of({"--state", "SUCCESS", "--limit", "20000"});
      ids want;
      std::copy_if(expected.begin(), expected.end(), std::back_inserter(want),
                   [](const std::string& id) { return id.size() == 8 || id == "wf-00100a"; });
      CHECK(succeeded_ids.size() == total + 1);
      CHECK(succeeded_ids == want);
      // A limit smaller than the matches: the newest and a cursor that continues after it.
      auto first = troupe_cli({"list", "--state", "FAILED", "--limit", "1", "--json", "--address", address});
      CHECK(json_strings(first.output, "workflowId") == ids{"wf-09000a"});
      const std::string cursor = json_string(first.output, "nextCursor");
      CHECK(cursor != "");
      CHECK(ids_of({"--state", "FAILED", "--after", cursor}) == ids{"wf-05000a"});
    }
  }

  TEST_CASE("result asked as a workflow ends answers how it ended, never an actor error") {
    // The workflow's actor quits as it closes; the directory forgets it only once the actor's
    // down message arrives. A result asked in between used to be forwarded to the ended actor
    // and fail with "actor error: system_error(request_receiver_down)" (seen from `troupe
    // submit --wait`). Many result calls right at the end of many short workflows hit that gap.
    ClusterSpec spec = one_worker(64);
    spec.sync = false;
    auto cluster = start_cluster(spec);
    auto api = gateway(cluster->port);
    constexpr int total = 4000;
    constexpr int asks = 8;  // result calls per workflow at once, and as many again once answered
    int answered = 0;
    std::vector<std::string> problems;
    auto check = [&](const std::string& id, const troupe::Result<client::WorkflowResult>& r) {
      ++answered;
      if (!r || r->state != "SUCCESS") problems.push_back(id + ": " + (r ? r->state : r.error().message));
    };
    at_their_ends(*api, "r-", total, asks, problems, [&](const std::string& id, troupe::Result<client::WorkflowResult> r) {
      check(id, r);
      // Asked again the moment an answer says it ended.
      api->result_async(id, [&, id](troupe::Result<client::WorkflowResult> again) { check(id, again); });
    });
    CHECK(answered == total * asks * 2);
    CHECK_MESSAGE(problems.empty(), problems.size() << " failed, the first: " << first_of(problems));
  }

  TEST_CASE("stop asked as a workflow ends answers a state or 'has finished', never an actor error") {
    // As for result: a stop that reaches the workflow's actor just after it quit as it closed
    // bounces (request_receiver_down); the directory must then answer from the history.
    ClusterSpec spec = one_worker(64);
    spec.sync = false;
    auto cluster = start_cluster(spec);
    auto api = gateway(cluster->port);
    constexpr int total = 3000;
    constexpr int asks = 4;
    int answered = 0;
    std::vector<std::string> problems;
    at_their_ends(*api, "s-", total, asks, problems, [&](const std::string& id, troupe::Result<client::WorkflowResult>) {
      // Stopped the moment an answer says it ended: the actor is quitting right now.
      api->control_async(id, client::GatewayClient::Control::STOP, [&, id](troupe::Result<std::string> r) {
        ++answered;
        if (r) return;  // stopped it (READY_STOP, STOPPED) before it ended
        if (r.error().code == troupe::Errc::NOT_ALLOWED_IN_STATE) return;  // it had ended
        problems.push_back(id + ": " + r.error().message);
      });
    });
    CHECK(answered == total * asks);
    CHECK_MESSAGE(problems.empty(), problems.size() << " failed, the first: " << first_of(problems));
  }

  TEST_CASE("watch resumes after a reconnect without gaps or duplicates") {
    auto cluster = start_cluster(one_worker());
    auto api = gateway(cluster->port);
    const std::string address = address_of(cluster->port);
    const std::string dir = cluster->dir.path();
    std::string tasks;
    for (int i = 1; i <= 8; ++i) {
      tasks += (i > 1 ? ", " : "") + std::string(R"({"name": "t)") + std::to_string(i) +
               R"(", "shell": {"command": ["sh", "-c", "sleep 0.2"]})" +
               (i > 1 ? R"(, "dependsOn": ["t)" + std::to_string(i - 1) + "\"]" : "") + "}";
    }
    REQUIRE(api->start({R"({"name": "chain", "tasks": [)" + tasks + "]}", "", "chain", ""}).value() == "chain");

    std::vector<uint64_t> sequences;
    std::vector<std::string> kinds;
    uint64_t last_of_a = 0;
    {
      auto a = gateway(cluster->port);
      auto watched = a->watch("chain", 1, [&](const client::WatchedEvent& e) {
        sequences.push_back(e.sequence);
        kinds.push_back(e.kind);
        return sequences.size() < 10;
      });
      REQUIRE_MESSAGE(watched, watched.error().message);
      last_of_a = *watched;
    }  // a's connection closes here
    CHECK(sequences.size() == 10);
    CHECK(last_of_a == 10);
    // The reconnect happens while the workflow runs, so B sees live events too.
    auto during = api->describe("chain");
    REQUIRE(during);
    CHECK(during->state == "RUNNING");
    {
      auto b = gateway(cluster->port);
      auto watched = b->watch("chain", last_of_a + 1, [&](const client::WatchedEvent& e) {
        sequences.push_back(e.sequence);
        kinds.push_back(e.kind);
        return true;
      });
      REQUIRE_MESSAGE(watched, watched.error().message);
      CHECK(*watched == sequences.back());
    }
    CHECK(api->result("chain", 30s)->state == "SUCCESS");

    std::vector<uint64_t> full;
    std::vector<std::string> full_kinds;
    auto whole = api->watch("chain", 1, [&](const client::WatchedEvent& e) {
      full.push_back(e.sequence);
      full_kinds.push_back(e.kind);
      return true;
    });
    REQUIRE(whole);
    const size_t n = full.size();
    CHECK(n > 8 * 4);  // each task at least scheduled, dispatched, running, succeeded
    CHECK(sequences.size() == n);
    for (size_t i = 0; i < sequences.size(); ++i) {
      if (sequences[i] != i + 1) {
        FAIL_CHECK("position " << i << " holds sequence " << sequences[i]);
        break;
      }
    }
    CHECK(sequences == full);
    CHECK(kinds == full_kinds);
    CHECK(full_kinds.back() == "workflowFinalized");

    auto json = troupe_cli({"watch", "chain", "--json", "--address", address});
    CHECK(json.code == 0);
    auto lines = lines_of(json.output);
    CHECK(lines.size() == n);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!contains(lines[i], R"({"sequence":)" + std::to_string(i + 1) + ",")) {
        FAIL_CHECK("line " << i << ": " << lines[i]);
        break;
      }
    }
    // From the middle: the rest, and the exit code says how it ended (asked, not replayed).
    auto rest = troupe_cli({"watch", "chain", "--json", "--from", std::to_string(n - 2), "--address", address});
    CHECK(rest.code == 0);
    CHECK(lines_of(rest.output).size() == 3);

    write_file(dir + "/fails.json", R"({"name": "fails", "tasks": [{"name": "t", "shell": {"command": ["sh", "-c", "exit 3"]}}]})");
    REQUIRE(troupe_cli({"submit", dir + "/fails.json", "--id", "fails", "--address", address}).code == 0);
    auto failing = troupe_cli({"watch", "fails", "--address", address});  // a line per event (not a terminal)
    CHECK(failing.code == 1);
    CHECK(contains(failing.output, "workflowFailed"));
    CHECK(troupe_cli({"watch", "fails", "--json", "--from", "2", "--address", address}).code == 1);
    auto unknown = troupe_cli({"watch", "no-such-workflow", "--address", address});
    CHECK(unknown.code == 2);
    CHECK(contains(unknown.output, "no-such-workflow"));
  }

  TEST_CASE("a task that ends before its worker answers runTask records no start; one that runs does") {
    auto cluster = start_cluster(one_worker());
    auto api = gateway(cluster->port);
    const std::string definition = R"({"name": "starts", "tasks": [
      {"name": "quick", "handler": "noop"},
      {"name": "long", "dependsOn": ["quick"], "shell": {"command": ["sh", "-c", "sleep 0.2"]}}]})";
    REQUIRE(api->start({definition, "", "starts", ""}).value() == "starts");
    std::vector<std::string> events;
    auto watched = api->watch("starts", 1, [&](const client::WatchedEvent& e) {
      events.push_back(e.kind + ":" + e.actor_id);
      return true;
    });
    REQUIRE_MESSAGE(watched, watched.error().message);
    auto has = [&](const std::string& event) { return std::count(events.begin(), events.end(), event); };
    CHECK(has("taskSucceeded:quick") == 1);
    CHECK(has("taskRunning:quick") == 0);
    CHECK(has("taskSucceeded:long") == 1);
    CHECK(has("taskRunning:long") == 1);
    CHECK(has("workflowSucceeded:starts") == 1);
  }

  TEST_CASE("asyncCompletion: the task's token completes or fails it; forged and reused tokens are refused") {
    auto cluster = start_cluster(one_worker());
    gateway(cluster->port);
    const std::string address = address_of(cluster->port);
    const std::string dir = cluster->dir.path();
    auto definition = [&](const std::string& token_file) {
      return R"({"name": "handoff", "tasks": [
          {"name": "hand", "asyncCompletion": true,
           "shell": {"command": ["sh", "-c", "printf %s \"$TROUPE_TASK_TOKEN\" > )" + token_file + R"("]}},
          {"name": "after", "handler": "noop", "dependsOn": ["hand"]}]})";
    };
    auto handed_off = [&](const std::string& id, const std::string& token_file) {
      write_file(dir + "/" + id + ".json", definition(token_file));
      REQUIRE(troupe_cli({"submit", dir + "/" + id + ".json", "--id", id, "--address", address}).code == 0);
      std::string status;
      REQUIRE_MESSAGE(status_until(id, address, [](const std::string& s) {
        return contains(s, R"("name":"hand")") && contains(s, R"("awaitingCompletion":true)");
      }, &status), status);
      const std::string token = read_whole(token_file);
      REQUIRE(token.size() > 20);
      return token;
    };

    SUBCASE("complete") {
      const std::string token = handed_off("async-ok", dir + "/ok.token");
      std::string forged = token;
      const size_t middle = forged.size() / 2;
      forged[middle] = forged[middle] == 'A' ? 'B' : 'A';
      auto refused = troupe_cli({"complete", forged, R"({"answer":42})", "--address", address});
      CHECK(refused.code == 2);
      CHECK_FALSE(contains(refused.output, token));  // the message never echoes a token
      auto still = troupe_cli({"status", "async-ok", "--json", "--address", address});
      CHECK(contains(still.output, R"("awaitingCompletion":true)"));
      CHECK(contains(still.output, R"("workflowId":"async-ok","state":"RUNNING")"));

      auto completed = troupe_cli({"complete", token, R"({"answer":42})", "--address", address});
      CHECK_MESSAGE(completed.code == 0, completed.output);
      auto result = troupe_cli({"result", "async-ok", "--timeout", "20s", "--address", address});
      CHECK_MESSAGE(result.code == 0, result.output);
      CHECK(contains(result.output, "async-ok SUCCESS"));
      if (result.code != 0) MESSAGE("its history: " << troupe_cli({"watch", "async-ok", "--address", address}).output);
      auto status = troupe_cli({"status", "async-ok", "--json", "--address", address});
      CHECK(contains(status.output, R"({"name":"hand","state":"SUCCESS")"));
      CHECK(contains(status.output, R"({"name":"after","state":"SUCCESS")"));
      CHECK_FALSE(contains(status.output, R"("awaitingCompletion":true)"));
      auto history = troupe_cli({"watch", "async-ok", "--json", "--address", address});
      CHECK(history.code == 0);
      bool recorded = false;
      for (const auto& line : lines_of(history.output)) {
        if (contains(line, R"("actorId":"hand")") && contains(line, R"("kind":"taskSucceeded")")) {
          recorded = contains(line, R"(result = \"{\\\"answer\\\":42}\")");
          CHECK_MESSAGE(recorded, line);
        }
      }
      CHECK(recorded);
      CHECK(contains(history.output, R"("kind":"taskAwaitingCompletion")"));

      auto again = troupe_cli({"complete", token, R"({"answer":43})", "--address", address});
      CHECK(again.code == 2);
      auto failed_late = troupe_cli({"fail", token, "Late", "--address", address});
      CHECK(failed_late.code == 2);
    }
    SUBCASE("fail") {
      const std::string token = handed_off("async-rejected", dir + "/rejected.token");
      auto failed = troupe_cli({"fail", token, "Rejected", "--details", "the reviewer said no", "--address", address});
      CHECK_MESSAGE(failed.code == 0, failed.output);
      auto result = troupe_cli({"result", "async-rejected", "--timeout", "20s", "--address", address});
      CHECK(result.code == 1);
      CHECK(contains(result.output, "async-rejected FAILED"));
      CHECK(contains(result.output, "Rejected"));
      auto status = troupe_cli({"status", "async-rejected", "--json", "--address", address});
      CHECK_MESSAGE(contains(status.output, R"({"name":"hand","state":"FAILURE","attempt":1,"worker":"worker-a","failure":"Rejected")"),
                    status.output);
      // It cannot run any more: the task it depends on failed.
      CHECK(contains(status.output, R"({"name":"after","state":"UPSTREAM_FAILED")"));
      CHECK(troupe_cli({"complete", token, "{}", "--address", address}).code == 2);
    }
  }

  TEST_CASE("a cluster token: clients without it are refused; workers of the cluster register") {
    ClusterSpec spec = one_worker();
    spec.token_file = "cluster.token";  // beside the config
    Cluster cluster(spec);
    const std::string dir = cluster.dir.path();
    const std::string secret = random_secret();
    write_file(dir + "/cluster.token", secret + "\n");
    write_file(dir + "/wrong.token", random_secret() + "\n");
    cluster.start("scheduler");
    cluster.start("worker-a");
    gateway(cluster.port, secret);
    const std::string address = address_of(cluster.port);

    auto bare = troupe_cli({"list", "--address", address});
    CHECK(bare.code == 2);
    CHECK(contains(bare.output, "requires its token"));
    auto with_file = troupe_cli({"list", "--token-file", dir + "/cluster.token", "--address", address});
    CHECK_MESSAGE(with_file.code == 0, with_file.output);
    auto with_config = troupe_cli({"list", "--config", cluster.config});
    CHECK_MESSAGE(with_config.code == 0, with_config.output);
    auto wrong = troupe_cli({"list", "--token-file", dir + "/wrong.token", "--address", address});
    CHECK(wrong.code == 2);
    CHECK(contains(wrong.output, "not this cluster's token"));
    CHECK_FALSE(contains(wrong.output, secret));

    client::ConnectOptions no_token;
    auto refused = client::GatewayClient::connect("127.0.0.1", cluster.port, no_token);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == troupe::Errc::INVALID_ARGUMENT);

    // The worker presented the token too: a workflow runs on it.
    write_file(dir + "/ok.json", R"({"name": "ok", "tasks": [{"name": "a", "handler": "noop"}]})");
    auto ran = troupe_cli({"submit", dir + "/ok.json", "--id", "tokened", "--wait", "--timeout", "30s",
                           "--config", cluster.config});
    CHECK_MESSAGE(ran.code == 0, ran.output);
    CHECK(contains(ran.output, "tokened SUCCESS"));
    auto status = troupe_cli({"status", "tokened", "--json", "--config", cluster.config});
    CHECK(contains(status.output, R"({"name":"a","state":"SUCCESS","attempt":1,"worker":"worker-a")"));
  }

  TEST_CASE("troupe dev: a restart on the same directory resumes an open workflow") {
    troupe::test::TempDir dir;
    const uint16_t port = troupe::test::free_port();
    const std::string address = address_of(port);
    const std::string data = dir.path() + "/dev";
    auto start_dev = [&] { return dev_process(address, data); };
    write_file(dir.path() + "/resumable.json", R"({"name": "resumable", "tasks": [
        {"name": "slow", "shell": {"command": ["sh", "-c", "sleep 3"]},
         "retry": {"maximumAttempts": 3, "initialInterval": "100ms"}},
        {"name": "after", "handler": "noop", "dependsOn": ["slow"]}]})");

    auto dev = start_dev();
    gateway(port);
    REQUIRE(troupe_cli({"submit", dir.path() + "/resumable.json", "--id", "resumable", "--address", address}).code == 0);
    std::string status;
    REQUIRE_MESSAGE(status_until("resumable", address, [](const std::string& s) {
      return contains(s, R"({"name":"slow","state":"RUNNING")");
    }, &status), status);
    stop_dev(*dev);
    auto down = troupe_cli({"status", "resumable", "--address", address});
    CHECK(down.code == 3);

    dev = start_dev();
    gateway(port);
    auto result = troupe_cli({"result", "resumable", "--timeout", "60s", "--address", address});
    CHECK_MESSAGE(result.code == 0, result.output);
    CHECK(contains(result.output, "resumable SUCCESS"));
    auto history = troupe_cli({"watch", "resumable", "--json", "--address", address});
    CHECK(history.code == 0);
    CHECK(contains(history.output, R"("kind":"workflowFailover")"));
    auto after = troupe_cli({"status", "resumable", "--json", "--address", address});
    CHECK(contains(after.output, R"({"name":"after","state":"SUCCESS")"));
    stop_dev(*dev);
  }

  TEST_CASE("troupe dev starts, runs a workflow and exits 0 on SIGINT, again and again") {
    // Its worker registers with its own scheduler at once: the race between that and the node's
    // start-up, and the shutdown with a registered worker, each crashed it (SIGSEGV).
    troupe::test::TempDir dir;
    const uint16_t port = troupe::test::free_port();
    const std::string address = address_of(port);
    write_file(dir.path() + "/ok.json", R"({"name": "ok", "tasks": [{"name": "a", "handler": "noop"}]})");
    for (int round = 1; round <= 5; ++round) {
      CAPTURE(round);
      auto dev = dev_process(address, dir.path() + "/dev");
      gateway(port);
      auto ran = troupe_cli({"submit", dir.path() + "/ok.json", "--id", "round-" + std::to_string(round), "--wait",
                             "--timeout", "30s", "--address", address});
      CHECK_MESSAGE(ran.code == 0, ran.output);
      CHECK(troupe::test::still_running(*dev));
      stop_dev(*dev);
    }
  }

  TEST_CASE("exit codes of the client commands") {
    SUBCASE("3: nothing listens at the address") {
      const std::string nowhere = address_of(troupe::test::free_port());
      const std::vector<std::vector<std::string>> commands = {
          {"status", "x"}, {"pause", "x"}, {"resume", "x"}, {"stop", "x"}, {"kill", "x"}, {"list"},
          {"list", "--state", "OPEN", "--json"}, {"watch", "x"}, {"watch", "x", "--json"},
          {"complete", "tt1.x.y", "{}"}, {"fail", "tt1.x.y", "Reason"}};
      for (auto command : commands) {
        command.insert(command.end(), {"--address", nowhere});
        auto run = troupe_cli(command);
        CHECK_MESSAGE(run.code == 3, command[0] << " " << command[1] << ": " << run.output);
        CHECK_MESSAGE(contains(run.output, "cannot reach the scheduler"), run.output);
      }
    }
    SUBCASE("2, 1 and 0 against a cluster") {
      auto cluster = start_cluster(one_worker());
      gateway(cluster->port);
      const std::string address = address_of(cluster->port);
      const std::string dir = cluster->dir.path();
      write_file(dir + "/ok.json", R"({"name": "ok", "tasks": [{"name": "a", "handler": "noop"}]})");
      REQUIRE(troupe_cli({"submit", dir + "/ok.json", "--id", "done", "--wait", "--address", address}).code == 0);

      // Unknown ids.
      for (const char* action : {"kill", "pause", "resume"}) {
        auto run = troupe_cli({action, "nobody", "--address", address});
        CHECK_MESSAGE(run.code == 2, action << ": " << run.output);
      }
      // Actions that do not apply to a finished workflow.
      for (const char* action : {"kill", "stop", "pause", "resume"}) {
        auto run = troupe_cli({action, "done", "--address", address});
        CHECK_MESSAGE(run.code == 2, action << ": " << run.output);
      }
      // Bad usage.
      const std::vector<std::vector<std::string>> usage = {
          {"list", "--state", "BOGUS"}, {"list", "--limit", "0"}, {"list", "--limit", "x"}, {"list", "extra"},
          {"list", "--bogus", "1"},     {"watch"},                {"watch", "done", "--from", "0"},
          {"watch", "a", "b"},          {"kill"},                 {"kill", "a", "b"},
          {"complete", "tt1.x.y"},      {"fail", "tt1.x.y"},      {"complete", "not-a-token", "{}"},
          {"fail", "", "Reason"},       {"status"}};
      for (auto command : usage) {
        command.insert(command.end(), {"--address", address});
        auto run = troupe_cli(command);
        CHECK_MESSAGE(run.code == 2, command[0] << ": " << run.output);
      }
      // 0.
      auto listed = troupe_cli({"list", "--address", address});
      CHECK(listed.code == 0);
      CHECK(contains(listed.output, "done"));
      CHECK(troupe_cli({"watch", "done", "--address", address}).code == 0);
    }
  }
}

