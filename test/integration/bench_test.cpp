// The benchmarks as a user runs them, small: each must end by itself with its JSON report. A
// benchmark that waits for a condition the code no longer produces sits out its deadline
// instead, so these runs are short and their figures only checked to be present.
#include <doctest/doctest.h>

#include <string>

#include "test/support/cli.hpp"
#include "test/support/temp_dir.hpp"

using troupe::test::contains;
using troupe::test::troupe_cli;

TEST_SUITE("integration.bench") {
  TEST_CASE("bench idle ends once every workflow runs and reports bytes per running workflow") {
    troupe::test::TempDir dir;
    auto run = troupe_cli({"bench", "idle", "--workflows", "300", "--dir", dir / "idle"});
    INFO(run.output);
    CHECK(run.code == 0);
    CHECK(contains(run.output, "all 300 running"));
    CHECK(contains(run.output, "\"workload\":\"IDLE\""));
    CHECK(contains(run.output, "\"bytes_per_running_workflow\":"));
  }

  TEST_CASE("bench chain in process ends with its report") {
    troupe::test::TempDir dir;
    auto run = troupe_cli({"bench", "chain", "--in-process", "--workflows", "50", "--tasks", "3", "--dir",
                           dir / "chain"});
    INFO(run.output);
    CHECK(run.code == 0);
    CHECK(contains(run.output, "\"mode\":\"in-process\""));
    CHECK(contains(run.output, "\"workflows\":50"));
  }
}
