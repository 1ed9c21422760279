// A worker's invocation logs: their names, and reads of a range by invocation id, which never
// reach outside the log_dir.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/logs/log_files.hpp"
#include "test/support/temp_dir.hpp"

using namespace troupe;
using namespace troupe::runtime;

namespace {

void write(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

}  // namespace

TEST_SUITE("runtime.log_files") {
  TEST_CASE("a log is named by its workflow, task, attempt and dispatch, each part made safe") {
    CHECK(invocation_log_path("/logs", "wf-1", "build", "wf-1/build/2.3") == "/logs/wf-1/build.2.3.log");
    CHECK(*invocation_log_path("/logs", "wf-1/build/2.3") == "/logs/wf-1/build.2.3.log");
    // A workflow id may hold '/', which becomes '_'; the id is read from its end.
    CHECK(*invocation_log_path("/logs", "team/nightly/build/1.1") == "/logs/team_nightly/build.1.1.log");
    CHECK(*invocation_log_path("/logs", "../x/../../1.1") == "/logs/.._x_../_...1.1.log");
    CHECK(safe_file_name("..") == "_..");
    CHECK(safe_file_name("") == "_");
    CHECK(safe_file_name("a b/c") == "a_b_c");
  }

  TEST_CASE("the longest workflow ids and names give log paths the file system takes") {
    test::TempDir dir;
    // As long as the limits allow (512-byte ids, 1024-byte names), and past them.
    for (const size_t id_bytes : {size_t{200}, size_t{255}, size_t{256}, size_t{512}, size_t{4000}}) {
      for (const size_t name_bytes : {size_t{1}, size_t{196}, size_t{200}, size_t{1024}}) {
        CAPTURE(id_bytes);
        CAPTURE(name_bytes);
        const std::string id(id_bytes, 'w'), task(name_bytes, 't');
        const std::string invocation = id + "/" + task + "/4294967295.4294967295";
        const auto path = *invocation_log_path(dir.path(), invocation);
        const std::filesystem::path file(path);
        CHECK(file.parent_path().filename().string().size() <= max_file_name_bytes);
        // The longest name the shell runner makes beside the log fits as well.
        const std::string stem = path.substr(0, path.size() - 4);
        const std::string beside = stem + ".0123456789abcdef.workflow-input.json";
        CHECK(std::filesystem::path(beside).filename().string().size() <= max_file_name_bytes);
        write(beside, "{}");
        write(path, "log of " + std::to_string(id_bytes));
        auto read = read_invocation_log(dir.path(), invocation, 0, 1024);
        REQUIRE_MESSAGE(read, (read ? "" : read.error().message));
        CHECK(read->data == "log of " + std::to_string(id_bytes));
      }
    }
  }

  TEST_CASE("a part shortened to fit keeps its start and a hash of the whole, so long parts stay apart") {
    CHECK(safe_file_name(std::string(255, 'a')) == std::string(255, 'a'));  // names that fit are kept
    const std::string long_a = std::string(300, 'x') + "a", long_b = std::string(300, 'x') + "b";
    const std::string a = safe_file_name(long_a), b = safe_file_name(long_b);
    CHECK(a.size() == max_file_name_bytes);
    CHECK(a.starts_with(std::string(238, 'x') + "~"));
    CHECK(a != b);
    CHECK(a == safe_file_name(long_a));  // the same on every call, node and build
    CHECK(file_name_tag("") == "cbf29ce484222325");
    CHECK(safe_file_name(std::string(100, 'n'), 40) == std::string(23, 'n') + "~" + file_name_tag(std::string(100, 'n')));
  }

  TEST_CASE("an id that is not an invocation's is refused") {
    for (const char* id : {"", "build", "wf/build", "wf/build/", "/build/1.1"}) {
      CAPTURE(id);
      auto path = invocation_log_path("/logs", id);
      REQUIRE_FALSE(path);
      CHECK(path.error().code == Errc::INVALID_ARGUMENT);
      CHECK(path.error().message.find("is not an invocation id") != std::string::npos);
    }
  }

  TEST_CASE("a range is read from an offset, with the size and where the next read starts") {
    test::TempDir dir;
    write(dir.path() + "/wf-1/build.1.1.log", "line 1\nline 2\n");
    auto all = read_invocation_log(dir.path(), "wf-1/build/1.1", 0, 1024);
    REQUIRE(all);
    CHECK(all->data == "line 1\nline 2\n");
    CHECK(all->next_offset == 14);
    CHECK(all->size == 14);
    auto part = read_invocation_log(dir.path(), "wf-1/build/1.1", 7, 3);
    REQUIRE(part);
    CHECK(part->data == "lin");
    CHECK(part->next_offset == 10);
    auto past = read_invocation_log(dir.path(), "wf-1/build/1.1", 99, 10);
    REQUIRE(past);
    CHECK(past->data.empty());
    CHECK(past->next_offset == 99);
  }

  TEST_CASE("a missing log is NOT_FOUND") {
    test::TempDir dir;
    auto read = read_invocation_log(dir.path(), "wf-1/build/1.1", 0, 10);
    REQUIRE_FALSE(read);
    CHECK(read.error().code == Errc::NOT_FOUND);
  }

  TEST_CASE("a symbolic link on the way out of the log_dir is refused, and so is a linked log") {
    test::TempDir dir;
    test::TempDir outside;
    write(outside.path() + "/secret/build.1.1.log", "secret\n");
    std::filesystem::create_directories(dir.path() + "/logs");
    std::filesystem::create_directory_symlink(outside.path() + "/secret", dir.path() + "/logs/wf-1");
    auto through_dir = read_invocation_log(dir.path() + "/logs", "wf-1/build/1.1", 0, 100);
    REQUIRE_FALSE(through_dir);
    CHECK(through_dir.error().code == Errc::INVALID_ARGUMENT);
    CHECK(through_dir.error().message.find("outside this worker's log_dir") != std::string::npos);

    write(dir.path() + "/logs/wf-2/other.1.1.log", "mine\n");
    std::filesystem::create_symlink(dir.path() + "/logs/wf-2/other.1.1.log", dir.path() + "/logs/wf-2/build.1.1.log");
    auto linked = read_invocation_log(dir.path() + "/logs", "wf-2/build/1.1", 0, 100);
    REQUIRE_FALSE(linked);
    CHECK(linked.error().code == Errc::INVALID_ARGUMENT);
  }

  TEST_CASE("one read returns at most max_log_read_bytes") {
    test::TempDir dir;
    write(dir.path() + "/wf/t.1.1.log", std::string(max_log_read_bytes + 10, 'x'));
    auto read = read_invocation_log(dir.path(), "wf/t/1.1", 0, max_log_read_bytes * 4);
    REQUIRE(read);
    CHECK(read->data.size() == max_log_read_bytes);
    CHECK(read->size == max_log_read_bytes + 10);
  }
}
