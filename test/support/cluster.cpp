// The test cluster: config text, node processes, and the Gateway client.
#include "test/support/cluster.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <kj/async-io.h>

namespace troupe::test {
namespace {

std::string error_text(schema::Error::Reader error) {
  return std::string("error: ") + error.getMessage().cStr();
}

bool is_error(schema::Error::Reader error) { return error.getCode() != schema::ErrorCode::NONE; }

/// Waits for `answer` on `rpc`'s event loop, or returns "timed out" after `deadline`.
std::string wait_with_deadline(capnp::EzRpcClient& rpc, kj::Promise<std::string> answer,
                               std::chrono::seconds deadline) {
  auto timeout = rpc.getIoProvider().getTimer().afterDelay(deadline.count() * kj::SECONDS).then([] {
    return std::string("timed out");
  });
  return answer.exclusiveJoin(kj::mv(timeout)).wait(rpc.getWaitScope());
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

int open_connection(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("free_port: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!bound) throw std::runtime_error("free_port: cannot bind 127.0.0.1:0");
  return ntohs(addr.sin_port);
}

std::string node_binary() {
  const char* path = std::getenv("TROUPE_NODE");
  if (path == nullptr || *path == '\0') {
    throw std::runtime_error("TROUPE_NODE must name the troupe-node binary");
  }
  return path;
}

/// The `log_level` and `log_format` lines of a node of `spec`, if it sets them.
std::string log_keys(const ClusterSpec& spec) {
  std::string keys;
  if (!spec.log_level.empty()) keys += "log_level = " + quoted(spec.log_level) + "\n";
  if (!spec.log_format.empty()) keys += "log_format = " + quoted(spec.log_format) + "\n";
  return keys;
}

std::string cluster_config_text(const ClusterSpec& spec, uint16_t port) {
  const std::string address = quoted("127.0.0.1:" + std::to_string(port));
  std::ostringstream out;
  out << "[cluster]\nname = \"test\"\n" << (spec.plaintext ? "plaintext = true\n" : "")
      << (spec.require_client_certificates ? "require_client_certificates = true\n" : "")
      << "heartbeat_interval = \"" << spec.heartbeat_interval
      << "\"\nunhealthy_after = \"" << spec.unhealthy_after << "\"\nmust_die_after = \"" << spec.must_die_after
      << "\"\n";
  if (!spec.kill_grace.empty()) out << "kill_grace = \"" << spec.kill_grace << "\"\n";
  if (!spec.shutdown_grace.empty()) out << "shutdown_grace = \"" << spec.shutdown_grace << "\"\n";
  if (!spec.quarantine_failures.empty()) out << "quarantine_failures = " << spec.quarantine_failures << "\n";
  if (!spec.quarantine_backoff.empty()) out << "quarantine_backoff = \"" << spec.quarantine_backoff << "\"\n";
  if (!spec.retention.empty()) out << "retention = \"" << spec.retention << "\"\n";
  if (!spec.worker_lease.empty()) out << "worker_lease = \"" << spec.worker_lease << "\"\n";
  if (!spec.recovery_window.empty()) out << "recovery_window = \"" << spec.recovery_window << "\"\n";
  if (!spec.token_file.empty()) out << "token_file = " << quoted(spec.token_file) << "\n";
  out << "\n";
  if (!spec.connections.empty()) {
    out << "[connections]\n";
    for (const auto& line : spec.connections) out << line << "\n";
    out << "\n";
  }
  for (const auto& [list, limit] : spec.task_list_limits) {
    out << "[task_lists." << quoted(list) << "]\nrate = " << limit.rate << "\n";
    if (limit.burst) out << "burst = " << *limit.burst << "\n";
    out << "\n";
  }
  if (!spec.limits.empty()) {
    out << "[limits]\n";
    for (const auto& [key, value] : spec.limits) out << key << " = " << value << "\n";
    out << "\n";
  }
  out << "[[node]]\nname = \"scheduler\"\nroles = [\"scheduler\"]\nlisten = " << address
      << "\ndata_dir = \"data\"\n" << (spec.sync ? "" : "sync = false\n")
      << (spec.definitions.empty() ? "" : "definitions = \"" + spec.definitions + "\"\n")
      << (spec.workflow_cache ? "workflow_cache = " + std::to_string(*spec.workflow_cache) + "\n" : "")
      << (spec.metrics ? "metrics = \"127.0.0.1:0\"\n" : "") << log_keys(spec) << "\n";
  for (const auto& worker : spec.workers) {
    out << "[[node]]\nname = " << quoted(worker.name) << "\nroles = [\"worker\"]\nscheduler = " << address
        << "\ntask_lists = {";
    const char* separator = " ";
    for (const auto& [list, slots] : worker.task_lists) {
      out << separator << quoted(list) << " = " << slots;
      separator = ", ";
    }
    out << " }\n";
    if (worker.rate) out << "rate = " << *worker.rate << "\n";
    if (!worker.resource_id.empty()) out << "resource_id = " << quoted(worker.resource_id) << "\n";
    if (worker.max_sessions) out << "max_concurrent_sessions = " << *worker.max_sessions << "\n";
    if (spec.metrics) out << "metrics = \"127.0.0.1:0\"\n";
    out << log_keys(spec);
    out << "log_dir = " << quoted("logs/" + worker.name) << "\n\n";
  }
  return out.str();
}

Cluster::Cluster(ClusterSpec cluster_spec) : spec(std::move(cluster_spec)) {
  std::ofstream(config) << cluster_config_text(spec, port);
}

void Cluster::start(const std::string& name) {
  nodes[name] = std::make_unique<ChildProcess>(
      std::vector<std::string>{node_binary(), "--config", config, "--node", name});
}

std::unique_ptr<ChildProcess> start_node_with_output(const std::string& config, const std::string& name) {
  // sh passes its arguments through untouched ($0 is the binary) and execs the node, so the
  // child's pid is the node's.
  return std::make_unique<ChildProcess>(std::vector<std::string>{
      "/bin/sh", "-c", "exec \"$0\" --config \"$1\" --node \"$2\" 2>&1", node_binary(), config, name});
}

std::string read_output(ChildProcess& child, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string all;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return all;
    auto line = child.read_line(left);
    if (!line) return all;
    all += *line + "\n";
  }
}

std::optional<ParsedLogLine> await_log_line(ChildProcess& child, std::string_view message,
                                            std::chrono::milliseconds timeout, std::string* seen) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto line = child.read_line(left);
    if (!line) return std::nullopt;
    if (seen) *seen += *line + "\n";
    auto parsed = parse_log_line(*line);
    if (parsed && parsed->message == message) return parsed;
  }
}

bool has_log_line(const std::string& output, std::string_view message,
                  std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    auto said = parse_log_line(std::string_view(output).substr(start, end - start));
    start = end + 1;
    if (!said || said->message != message) continue;
    bool all = true;
    for (const auto& [key, value] : fields) all = all && said->field(key) == value;
    if (all) return true;
  }
  return false;
}

bool still_running(const ChildProcess& child) {
  siginfo_t info{};
  // WNOWAIT leaves an exited child a zombie for ChildProcess::wait to reap.
  if (::waitid(P_PID, static_cast<id_t>(child.pid()), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == 0;
}

Client::Client(uint16_t port)
    : rpc("127.0.0.1", port),
      service(rpc.getMain<schema::Gateway>().clientRequest().send().wait(rpc.getWaitScope()).getClient()) {}

std::string Client::start(const std::string& id, const std::string& definition, std::chrono::seconds deadline) {
  auto request = service.startWorkflowRequest();
  request.setWorkflowId(id);
  request.setDefinitionJson(definition);
  auto answer = request.send().then([](auto response) {
    if (response.hasError() && is_error(response.getError())) return error_text(response.getError());
    return std::string(response.getWorkflowId().cStr());
  });
  return wait_with_deadline(rpc, kj::mv(answer), deadline);
}

std::string Client::result(const std::string& id, std::chrono::seconds deadline) {
  auto request = service.resultRequest();
  request.setWorkflowId(id);
  auto answer = request.send().then([](auto response) {
    if (response.hasError() && is_error(response.getError())) return error_text(response.getError());
    auto r = response.getResult();
    return std::string(r.getState().cStr()) + (r.getDetail().size() ? std::string(": ") + r.getDetail().cStr() : "");
  });
  return wait_with_deadline(rpc, kj::mv(answer), deadline);
}

std::unique_ptr<Client> connect(uint16_t port) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    try {
      return std::make_unique<Client>(port);
    } catch (const kj::Exception&) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace troupe::test
