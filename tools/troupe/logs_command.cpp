// `troupe logs` and `troupe describe WORKFLOW`: a task's log, streamed from the worker that ran
// it through the scheduler, and a workflow's DAG drawn by Graphviz.
#include <charconv>
#include <iostream>
#include <string>

#include "runtime/client/gateway_client.hpp"
#include "tools/troupe/client_commands.hpp"
#include "tools/troupe/connection.hpp"
#include "tools/troupe/exit_codes.hpp"
#include "tools/troupe/graphviz.hpp"
#include "tools/troupe/workflow_dot.hpp"

namespace troupe::cli {
namespace {

/// --attempt as a number from 1; 0 when not given.
Result<uint32_t> attempt_option(const Args& args) {
  auto text = args.get("attempt");
  if (!text) return uint32_t{0};
  uint32_t attempt = 0;
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), attempt);
  if (error != std::errc() || end != text->data() + text->size() || attempt == 0) {
    return fail(Errc::INVALID_ARGUMENT, "--attempt takes an attempt number from 1, not '" + *text + "'");
  }
  return attempt;
}

/// Prints the chunks of a log stream: the bytes as the task wrote them, each invocation after a
/// header line when more than one task's log is shown or an attempt moved to another worker.
class LogPrinter {
 public:
  explicit LogPrinter(bool every_task) : every_task_(every_task) {}

  bool print(const client::LogChunk& chunk) {
    if (chunk.first && (every_task_ || invocations_ > 0)) {
      if (printed_ && !ends_line_) std::cout << "\n";
      if (printed_) std::cout << "\n";
      std::cout << "==> " << chunk.task << " (attempt " << chunk.attempt << ", worker " << chunk.worker
                << ") <==\n";
      printed_ = true;
      ends_line_ = true;
    }
    if (chunk.first) ++invocations_;
    if (!chunk.data.empty()) {
      std::cout.write(chunk.data.data(), static_cast<std::streamsize>(chunk.data.size()));
      printed_ = true;
      ends_line_ = chunk.data.back() == '\n';
    }
    // Shown as it comes: a follow is read by people (or a pipe) while the task runs.
    std::cout.flush();
    return static_cast<bool>(std::cout);  // a closed pipe ends the stream
  }

 private:
  bool every_task_;
  size_t invocations_ = 0;
  bool printed_ = false;
  bool ends_line_ = true;
};

}  // namespace

int logs_command(const Args& args) {
  const auto& words = args.positionals();
  auto follow = args.boolean("follow", false);
  if (!follow) return usage_error(args, follow.error().message);
  auto attempt = attempt_option(args);
  if (!attempt) return usage_error(args, attempt.error().message);
  client::LogRequest request;
  request.task = words.size() > 1 ? words[1] : "";
  request.attempt = *attempt;
  request.follow = *follow;
  if (request.task.empty() && request.attempt != 0) {
    return usage_error(args, "--attempt needs a TASK: each task has its own attempts");
  }
  auto client = connect(args);
  if (!client) return failed(client.error());
  LogPrinter printer(request.task.empty());
  auto streamed = (*client)->task_logs(words[0], request, [&](const client::LogChunk& chunk) {
    return printer.print(chunk);
  });
  if (!streamed) return failed(streamed.error());
  return exit_ok;
}

int describe_workflow_command(const Args& args) {
  const std::string format = args.get("format").value_or("dot");
  if (format != "dot" && format != "svg") {
    return usage_error(args, "--format takes dot or svg, not '" + format + "'");
  }
  auto client = connect(args);
  if (!client) return failed(client.error());
  auto status = (*client)->describe(args.positionals()[0]);
  if (!status) return failed(status.error());
  const std::string dot = workflow_dot(*status);
  if (format == "dot") {
    std::cout << dot;
    return exit_ok;
  }
  auto svg = render_with_dot(dot, "svg");
  // No Graphviz is not a usage error: the command was right, this machine lacks a program.
  if (!svg) return complain(exit_failed, svg.error().message);
  std::cout << *svg;
  return exit_ok;
}

}  // namespace troupe::cli
