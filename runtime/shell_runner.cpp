// The shell runner: ProcessSupervisor behind the TaskContext of an invocation.
#include "runtime/shell_runner.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "actors/caf_types.hpp"
#include "runtime/logs/log_files.hpp"
#include "schema/json_syntax.hpp"

namespace troupe::runtime {
namespace {

/// How often a task's progress file is looked at: often enough that a task writing it more
/// often than its heartbeat timeout is never timed out (a quarter of the timeout), and about
/// once a second without one.
Duration progress_poll_interval(const actors::Invocation& invocation) {
  using namespace std::chrono_literals;
  if (invocation.heartbeat_timeout_us <= 0) return 1s;
  return std::clamp<Duration>(Duration(invocation.heartbeat_timeout_us / 4), 20ms, 5s);
}

/// The state of a task's progress file when it was last looked at.
struct ProgressWatch {
  std::string path;
  Duration interval;
  std::atomic<bool> ended{false};
  std::filesystem::file_time_type seen_time{};
};

/// What the file holds now, if it changed since the last look (a rewrite with the same content
/// counts: touching the file is a heartbeat).
std::optional<std::string> progress_changed(ProgressWatch& watch) {
  std::error_code ec;
  const auto time = std::filesystem::last_write_time(watch.path, ec);
  if (ec || time == watch.seen_time) return std::nullopt;
  std::ifstream in(watch.path, std::ios::binary);
  std::string content(ShellRunnerOptions::max_progress_bytes, '\0');
  in.read(content.data(), static_cast<std::streamsize>(content.size()));
  content.resize(static_cast<size_t>(in.gcount()));
  watch.seen_time = time;
  return content;
}

/// Looks at the progress file every interval until the process ends; a change is a heartbeat.
/// A heartbeat answered with "cancel requested" cancels the task, as in Cadence.
void poll_progress(std::shared_ptr<ProgressWatch> watch, std::shared_ptr<actors::TaskContext> context) {
  context->after(watch->interval, [watch, context] {
    if (watch->ended) return;
    if (auto progress = progress_changed(*watch)) {
      if (context->heartbeat(std::move(*progress))) return;  // the cancel reaches on_cancel
    }
    poll_progress(watch, context);
  });
}

/// Writes `content` to a new file at `path` that only this user may read (an input may hold
/// secrets): created 0600 (never readable in between), and never through a file or symlink
/// already there. UNAVAILABLE with the reason when it cannot (a full disk, a name taken).
Result<void> write_private_file(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return fail(Errc::UNAVAILABLE, "cannot create the task's input file " + path + ": " + std::strerror(errno));
  }
  size_t written = 0;
  int error = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      break;
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0) return ok();
  fs::remove(path, ec);  // ours: created by the open above
  return fail(Errc::UNAVAILABLE, "cannot write the task's input to " + path + ": " + std::strerror(error));
}

/// A name part unique to `invocation_id`: safe_file_name() maps many ids to one name, so the
/// input files of two invocations whose names differ only in bytes it replaces would otherwise
/// collide.
std::string invocation_tag(std::string_view invocation_id) { return file_name_tag(invocation_id); }

void remove_files(const std::vector<std::string>& files) {
  std::error_code ec;
  for (const auto& file : files) std::filesystem::remove(file, ec);
}

/// Adds TROUPE_INPUT and TROUPE_WORKFLOW_INPUT to `spec`'s environment, or, for an input too
/// long for the environment, TROUPE_INPUT_FILE / TROUPE_WORKFLOW_INPUT_FILE naming a file
/// beside the log (`stem` is the log's path without ".log"). Returns the files it wrote.
Result<std::vector<std::string>> pass_inputs(const actors::Invocation& invocation, const std::string& stem,
                                             ProcessSpec& spec) {
  std::vector<std::string> files;
  auto pass = [&](const std::string& name, const std::string& value, const std::string& path) -> Result<void> {
    if (value.size() <= ShellRunnerOptions::max_env_input_bytes) {
      spec.env.push_back(name + "=" + value);
      return ok();
    }
    if (std::find(files.begin(), files.end(), path) == files.end()) {
      if (auto written = write_private_file(path, value); !written) return written.error();
      files.push_back(path);
    }
    spec.env.push_back(name + "_FILE=" + path);
    return ok();
  };
  const std::string unique_stem = stem + "." + invocation_tag(invocation.invocation_id);
  static_assert(sizeof ".0123456789abcdef.workflow-input.json" - 1 <= log_stem_growth_bytes,
                "the names made beside a log must fit the room invocation_log_path leaves");
  const std::string input_file = unique_stem + ".input.json";
  auto passed = pass("TROUPE_INPUT", invocation.input_json, input_file);
  if (passed) {
    // Without an input of its own the task's input is the workflow's: one file serves both.
    passed = invocation.workflow_input_json.empty()
                 ? pass("TROUPE_WORKFLOW_INPUT", invocation.input_json, input_file)
                 : pass("TROUPE_WORKFLOW_INPUT", invocation.workflow_input_json, unique_stem + ".workflow-input.json");
  }
  if (!passed) {
    remove_files(files);
    return passed.error();
  }
  return files;
}

}  // namespace

std::string invocation_log_path(const std::string& log_dir, const actors::Invocation& invocation) {
  return invocation_log_path(log_dir, invocation.workflow_id, invocation.task_name, invocation.invocation_id);
}

std::string session_directory(const std::string& log_dir, const std::string& workflow_id,
                              const std::string& session_name) {
  return log_dir + "/sessions/" + safe_file_name(workflow_id) + "/" + safe_file_name(session_name);
}

actors::ShellRunner make_shell_runner(std::shared_ptr<ProcessSupervisor> supervisor, ShellRunnerOptions options) {
  return [supervisor, options](const actors::Invocation& invocation, std::shared_ptr<actors::TaskContext> context) {
    if (invocation.command.empty()) {
      context->fail("BadCommand", "a shell task needs a non-empty command", true);
      return;
    }
    ProcessSpec spec;
    spec.argv = invocation.command;
    spec.env = invocation.env;
    spec.env.push_back("TROUPE_WORKFLOW_ID=" + invocation.workflow_id);
    spec.env.push_back("TROUPE_TASK=" + invocation.task_name);
    spec.env.push_back("TROUPE_ATTEMPT=" + std::to_string(invocation.attempt));
    if (!invocation.task_token.empty()) spec.env.push_back("TROUPE_TASK_TOKEN=" + invocation.task_token);
    spec.cwd = invocation.cwd;
    if (!invocation.session_id.empty()) {
      // The session's tasks share its directory: their working directory unless they name one.
      spec.env.push_back("TROUPE_SESSION_ID=" + invocation.session_id);
      spec.env.push_back("TROUPE_SESSION_DIR=" + invocation.session_dir);
      if (spec.cwd.empty()) spec.cwd = invocation.session_dir;
    }
    spec.log_path = invocation_log_path(options.log_dir, invocation);
    spec.log_cap_bytes = options.log_cap_bytes;
    const std::string log_path = spec.log_path;
    auto input_files = pass_inputs(invocation, log_path.substr(0, log_path.size() - 4), spec);
    if (!input_files) {
      context->fail("SpawnFailed", input_files.error().message, false);
      return;
    }
    // Heartbeats: the task writes its progress to this file (beside its log); every change is
    // a heartbeat carrying the content. It starts with the progress of the last attempt.
    auto watch = std::make_shared<ProgressWatch>();
    watch->path = log_path.substr(0, log_path.size() - 4) + ".progress";
    watch->interval = progress_poll_interval(invocation);
    {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(watch->path).parent_path(), ec);
      std::ofstream(watch->path, std::ios::binary | std::ios::trunc) << invocation.progress;
      watch->seen_time = std::filesystem::last_write_time(watch->path, ec);
    }
    spec.env.push_back("TROUPE_PROGRESS_FILE=" + watch->path);
    spec.env.push_back("TROUPE_PROGRESS=" + invocation.progress);
    auto id = supervisor->spawn(std::move(spec), [context, log_path, watch, files = *input_files](ProcessExit exit) {
      watch->ended = true;
      remove_files(files);
      // Progress written just before the exit still counts (a failed attempt's last word is
      // what the next one starts from).
      if (auto progress = progress_changed(*watch); progress && !exit.cancelled) context->heartbeat(std::move(*progress));
      if (exit.cancelled) {
        context->cancelled();
      } else if (exit.success() && context->async_completion()) {
        context->handed_off();  // the task ends when its token is presented
      } else if (exit.success()) {
        context->succeed("{\"exitCode\":0,\"log\":" + json_quote(log_path) + "}");
      } else if (exit.signal != 0) {
        context->fail("Signal:" + std::to_string(exit.signal), exit.describe() + "; log: " + log_path);
      } else {
        context->fail("ExitCode:" + std::to_string(exit.exit_code), exit.describe() + "; log: " + log_path);
      }
    });
    if (!id) {
      remove_files(*input_files);
      context->fail("SpawnFailed", id.error().message, false);
      return;
    }
    poll_progress(watch, context);
    const auto process = *id;
    std::weak_ptr<ProcessSupervisor> weak = supervisor;
    std::weak_ptr<actors::TaskContext> weak_context = context;  // the context holds this callback
    context->on_cancel([weak, weak_context, process] {
      auto s = weak.lock();
      auto c = weak_context.lock();
      if (s && c) s->terminate(process, c->cancel_grace());
    });
  };
}

}  // namespace troupe::runtime
