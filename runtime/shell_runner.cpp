// The shell runner: ProcessSupervisor behind the TaskContext of an invocation.
#include "runtime/shell_runner.hpp"

#include "actors/caf_types.hpp"

namespace troupe::runtime {
namespace {

std::string safe(std::string_view part) {
  std::string out;
  for (char c : part) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
    out += plain ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string invocation_log_path(const std::string& log_dir, const actors::Invocation& invocation) {
  // The invocation id ends in ATTEMPT.DISPATCH after the last '/'.
  const auto slash = invocation.invocation_id.rfind('/');
  const std::string suffix =
      slash == std::string::npos ? invocation.invocation_id : invocation.invocation_id.substr(slash + 1);
  return log_dir + "/" + safe(invocation.workflow_id) + "/" + safe(invocation.task_name) + "." + safe(suffix) +
         ".log";
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
    spec.env.push_back("TROUPE_INPUT=" + invocation.input_json);
    spec.cwd = invocation.cwd;
    spec.log_path = invocation_log_path(options.log_dir, invocation);
    spec.log_cap_bytes = options.log_cap_bytes;
    const std::string log_path = spec.log_path;
    auto id = supervisor->spawn(std::move(spec), [context, log_path](ProcessExit exit) {
      if (exit.cancelled) {
        context->cancelled();
      } else if (exit.success()) {
        context->succeed("{\"exitCode\":0,\"log\":\"" + json_escape(log_path) + "\"}");
      } else if (exit.signal != 0) {
        context->fail("Signal:" + std::to_string(exit.signal), exit.describe() + "; log: " + log_path);
      } else {
        context->fail("ExitCode:" + std::to_string(exit.exit_code), exit.describe() + "; log: " + log_path);
      }
    });
    if (!id) {
      context->fail("SpawnFailed", id.error().message, false);
      return;
    }
    const auto process = *id;
    std::weak_ptr<ProcessSupervisor> weak = supervisor;
    context->on_cancel([weak, process, grace = options.cancel_grace] {
      if (auto s = weak.lock()) s->terminate(process, grace);
    });
  };
}

}  // namespace troupe::runtime
