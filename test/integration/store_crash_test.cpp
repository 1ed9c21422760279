// The history store against real process death: a child appends with sync on and reports
// each durable append; the test kills it with SIGKILL mid-stream and checks what survived.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "storage/codec.hpp"
#include "storage/rocks_history_store.hpp"
#include "test/support/child_process.hpp"
#include "test/support/sample_events.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::storage;
using namespace std::chrono_literals;

namespace {

std::string child_binary() {
  const char* path = std::getenv("TROUPE_STORE_CHILD");
  REQUIRE_MESSAGE(path != nullptr, "TROUPE_STORE_CHILD must name the store_child binary");
  return path;
}

}  // namespace

TEST_SUITE("integration.store_crash") {
  TEST_CASE("every acknowledged append survives kill -9 of the writer, in order, none torn") {
    test::TempDir dir;
    std::map<std::string, uint64_t> acked;  // workflow -> last acknowledged sequence
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      test::ChildProcess child({child_binary(), "append", dir.path()});
      int acks = 0;
      while (acks < 600) {
        auto line = child.read_line(30s);
        REQUIRE_MESSAGE(line, "the child stopped acknowledging after " << acks << " appends");
        std::istringstream in(*line);
        std::string word, workflow;
        uint64_t first = 0, count = 0;
        in >> word >> workflow >> first >> count;
        REQUIRE(word == "ack");
        REQUIRE(count >= 1);
        // Sequences continue where the previous round's survivors ended.
        CHECK(first > acked[workflow]);
        acked[workflow] = first + count - 1;
        ++acks;
      }
      child.kill(SIGKILL);
      int status = child.wait();
      REQUIRE(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == SIGKILL);

      auto store = RocksHistoryStore::open(dir.path());
      REQUIRE_MESSAGE(store, test::why(store));
      for (auto& [workflow, last_acked] : acked) {
        CAPTURE(workflow);
        auto events = (*store)->read(workflow, 1, 10'000'000);
        REQUIRE_MESSAGE(events, test::why(events));
        REQUIRE(events->size() >= last_acked);
        for (size_t i = 0; i < events->size(); ++i) {
          REQUIRE((*events)[i].sequence == i + 1);
          auto decoded = DecodedEvent::decode((*events)[i].packed);
          REQUIRE(decoded);
          // The history's submission, then the samples under test.
          REQUIRE((i == 0 ? decoded->get().getBody().isWorkflowSubmitted() : test::is_intact_sample(decoded->get())));
        }
        // Appends that were durable but not yet reported count as survivors too.
        last_acked = events->size();
      }
    }
  }

  TEST_CASE("a store held by another process is refused until that process lets go") {
    test::TempDir dir;
    test::ChildProcess holder({child_binary(), "hold", dir.path()});
    auto ready = holder.read_line(30s);
    REQUIRE(ready);
    REQUIRE(*ready == "ready");

    auto refused = RocksHistoryStore::open(dir.path());
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Errc::UNAVAILABLE);
    CHECK(refused.error().message.find("history store at '" + dir.path() +
                                       "' is in use by another process") == 0);
    CHECK(refused.error().message.find("stop the other troupe node") != std::string::npos);

    holder.close_stdin();
    int status = holder.wait();
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    auto opened = RocksHistoryStore::open(dir.path());
    CHECK(opened);
  }
}
