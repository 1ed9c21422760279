// A scheduler whose disk fills up, for real: its data directory is a small tmpfs that the test
// fills. Mounting needs root (CAP_SYS_ADMIN); where that is not allowed the case is skipped,
// saying why (the store's side of a full disk is covered everywhere by storage.faults).
#include <doctest/doctest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <kj/exception.h>

#include "test/support/cli.hpp"
#include "test/support/cluster.hpp"
#include "test/support/stop.hpp"

using namespace std::chrono_literals;
using troupe::test::Cluster;
using troupe::test::contains;
using troupe::test::eventually;
using troupe::test::troupe_cli;

namespace {

/// A tmpfs of `size` (e.g. "8m") mounted on `path` (created) for the object's life.
class Tmpfs {
 public:
  Tmpfs(const std::string& path, const std::string& size) : path_(path) {
    ::mkdir(path.c_str(), 0755);
    const std::string options = "size=" + size;
    if (::mount("tmpfs", path.c_str(), "tmpfs", 0, options.c_str()) != 0) error_ = std::strerror(errno);
  }
  ~Tmpfs() {
    if (error_.empty()) ::umount2(path_.c_str(), MNT_DETACH);  // lazily: a process may still hold it
  }
  Tmpfs(const Tmpfs&) = delete;
  Tmpfs& operator=(const Tmpfs&) = delete;

  /// Empty once mounted; else why not.
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  std::string error_;
};

/// Whether this process may mount a tmpfs; prints why not when it may not. Decides the skip
/// below, so it runs when the tests are registered.
bool tmpfs_mountable() {
  troupe::test::TempDir probe;
  Tmpfs tmpfs(probe / "mnt", "1m");
  if (tmpfs.error().empty()) return true;
  std::cerr << "integration.disk_full: SKIPPED: cannot mount a tmpfs (" << tmpfs.error()
            << "); the test needs root or CAP_SYS_ADMIN\n";
  return false;
}

/// Writes into `path` until the filesystem is full; returns the bytes written.
size_t fill(const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  const std::string chunk(64 << 10, 'x');
  size_t written = 0;
  while (out.write(chunk.data(), static_cast<std::streamsize>(chunk.size())) && out.flush()) written += chunk.size();
  return written;
}

/// The message a full disk stops or refuses the scheduler with.
void check_disk_full_message(const troupe::test::Stopped& stopped, const std::string& data) {
  CHECK_MESSAGE(contains(stopped.output, "history store at '" + data + "/history'"), stopped.describe());
  CHECK_MESSAGE(contains(stopped.output, "the disk is full"), stopped.describe());
  CHECK_MESSAGE(contains(stopped.output, " free there"), stopped.describe());
  CHECK_MESSAGE(contains(stopped.output, "free space, then restart the node"), stopped.describe());
  CHECK_MESSAGE(!contains(stopped.output, "Assertion"), stopped.describe());
}

/// A client of the scheduler once it accepts connections; fails the test with what the
/// scheduler said if it never does.
std::unique_ptr<troupe::test::Client> connect(Cluster& cluster) {
  try {
    return troupe::test::connect(cluster.port);
  } catch (const kj::Exception& e) {
    auto stopped = troupe::test::stop_with(*cluster.nodes["scheduler"], SIGTERM, 5s);
    FAIL("the scheduler accepts no connection (" << e.getDescription().cStr() << "): " << stopped.describe());
  }
  return nullptr;
}

const std::string noop = R"({"name": "small", "tasks": [{"name": "a", "handler": "noop"}]})";

}  // namespace

TEST_SUITE("integration.disk_full") {
  TEST_CASE("a full disk stops the scheduler with a message and exit code 4; it refuses to start until space is "
            "freed; then nothing acknowledged is lost" * doctest::skip(!tmpfs_mountable())) {
    troupe::test::ClusterSpec spec;
    spec.workers = {{"worker-a", {{"default", 2}}, std::nullopt}};
    Cluster cluster(spec);
    const std::string data = cluster.dir / "data";  // the scheduler's data_dir
    Tmpfs disk(data, "8m");
    REQUIRE_MESSAGE(disk.error().empty(), disk.error());
    cluster.nodes["scheduler"] = troupe::test::start_node_with_output(cluster.config, "scheduler");
    cluster.start("worker-a");
    const std::string address = "127.0.0.1:" + std::to_string(cluster.port);

    std::vector<std::string> acknowledged;
    {
      auto client = connect(cluster);
      for (int i = 0; i < 5; ++i) {
        const std::string id = "before-" + std::to_string(i);
        REQUIRE(client->start(id, noop) == id);
        REQUIRE(client->result(id, 30s) == "SUCCESS");
        acknowledged.push_back(id);
      }
      CHECK(fill(data + "/filler") > 0);
      // Submissions now fail to be written; the first failed write stops the scheduler. Any
      // that was acknowledged all the same must survive.
      for (int i = 0; i < 50 && troupe::test::still_running(*cluster.nodes["scheduler"]); ++i) {
        const std::string id = "during-" + std::to_string(i);
        try {
          if (client->start(id, noop, 5s) == id) acknowledged.push_back(id);
        } catch (const kj::Exception&) {
          break;  // the scheduler went away
        }
      }
    }
    auto stopped = troupe::test::stop_with(*cluster.nodes["scheduler"], 0, 20s);  // signal 0: only waits
    CHECK_MESSAGE(stopped.exited_with(4), stopped.describe());
    check_disk_full_message(stopped, data);

    // Started on the still full disk, it refuses, saying the same. (Its exit gave back the room
    // RocksDB had reserved for its log: whatever filled the disk takes that too.)
    fill(data + "/filler-2");
    cluster.nodes["scheduler"] = troupe::test::start_node_with_output(cluster.config, "scheduler");
    auto refused = troupe::test::stop_with(*cluster.nodes["scheduler"], 0, 20s);
    CHECK_MESSAGE(refused.exited_with(3), refused.describe());
    check_disk_full_message(refused, data);

    // Space freed: it starts, and has everything it acknowledged.
    REQUIRE(std::remove((data + "/filler").c_str()) == 0);
    REQUIRE(std::remove((data + "/filler-2").c_str()) == 0);
    cluster.nodes["scheduler"] = troupe::test::start_node_with_output(cluster.config, "scheduler");
    auto client = connect(cluster);
    for (const auto& id : acknowledged) {
      CAPTURE(id);
      auto status = troupe_cli({"status", id, "--address", address});
      CHECK_MESSAGE(status.code == 0, status.output);
    }
    CHECK(client->start("after", noop) == "after");
    auto last = troupe::test::stop_with(*cluster.nodes["scheduler"], SIGTERM, 5s);
    CHECK_MESSAGE(last.exited_with(0), last.describe());
  }
}
