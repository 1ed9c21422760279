// The worker's persisted id: made once, the same on every later start, and a damaged file an
// error that says what to do rather than a new identity.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/identity/worker_id.hpp"
#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::runtime;

namespace {

std::string content_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

}  // namespace

TEST_SUITE("runtime.worker_id") {
  TEST_CASE("the first start makes an id and writes it, creating the directory") {
    test::TempDir dir;
    const std::string node_dir = dir / "logs/worker-1";
    auto id = load_or_create_worker_id(node_dir);
    REQUIRE_MESSAGE(id, test::why(id));
    CHECK(is_worker_id(*id));
    CHECK(id->rfind("wkr-", 0) == 0);
    const std::string path = node_dir + "/worker-id";
    CHECK(content_of(path) == *id + "\n");
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  }

  TEST_CASE("every later start presents the same id") {
    test::TempDir dir;
    auto first = load_or_create_worker_id(dir.path());
    REQUIRE(first);
    for (int start = 0; start < 3; ++start) {
      auto again = load_or_create_worker_id(dir.path());
      REQUIRE_MESSAGE(again, test::why(again));
      CHECK(*again == *first);
    }
    // An id written by hand, without the newline, is read as well.
    write_file(dir / "worker-id", "wkr-0123456789abcdef");
    auto edited = load_or_create_worker_id(dir.path());
    REQUIRE(edited);
    CHECK(*edited == "wkr-0123456789abcdef");
  }

  TEST_CASE("two workers get different ids") {
    test::TempDir a, b;
    auto first = load_or_create_worker_id(a.path());
    auto second = load_or_create_worker_id(b.path());
    REQUIRE(first);
    REQUIRE(second);
    CHECK(*first != *second);
  }

  TEST_CASE("a damaged id file is an error naming the file and what to do, and is kept") {
    test::TempDir dir;
    const std::string path = dir / "worker-id";
    for (const std::string& damaged : {std::string(), std::string("wkr-0123"), std::string("wkr-0123456789ABCDEF"),
                                       std::string("\x01\x02garbage\n"), std::string("wkr-0123456789abcdef\n\n")}) {
      CAPTURE(damaged);
      write_file(path, damaged);
      auto id = load_or_create_worker_id(dir.path());
      REQUIRE_FALSE(id);
      CHECK(id.error().code == Errc::CORRUPTION);
      CHECK(id.error().message.find(path) != std::string::npos);
      CHECK(id.error().message.find("delete the file") != std::string::npos);
      CHECK(content_of(path) == damaged);
    }
  }

  TEST_CASE("an id file that cannot be read is an error naming it") {
    test::TempDir dir;
    std::filesystem::create_directories(dir / "worker-id");  // a directory reads as EISDIR
    auto id = load_or_create_worker_id(dir.path());
    REQUIRE_FALSE(id);
    CHECK(id.error().code == Errc::UNAVAILABLE);
    CHECK(id.error().message.find(dir / "worker-id") != std::string::npos);
  }

  TEST_CASE("is_worker_id accepts only wkr- and 16 lower-case hex digits") {
    CHECK(is_worker_id("wkr-0123456789abcdef"));
    CHECK_FALSE(is_worker_id("wkr-0123456789abcde"));
    CHECK_FALSE(is_worker_id("wkr-0123456789abcdeg"));
    CHECK_FALSE(is_worker_id("wrk-0123456789abcdef"));
    CHECK_FALSE(is_worker_id(""));
  }
}
