// Where a client command's scheduler is, and its token.
#include "tools/troupe/connection.hpp"

#include <cstdlib>

#include "runtime/auth/task_token.hpp"
#include "runtime/config/cluster_config.hpp"

namespace troupe::cli {
namespace {

/// The scheduler's address: --address, else --config's scheduler node, else $TROUPE_ADDRESS,
/// else 127.0.0.1:7700.
Result<runtime::Address> scheduler_address(const Args& args) {
  if (auto text = args.get("address")) return runtime::parse_address(*text);
  if (auto path = args.get("config")) {
    auto config = runtime::load_cluster_config(*path);
    if (!config) return config.error();
    for (const auto& node : config->nodes) {
      if (node.scheduler) return node.listen;
    }
    return fail(Errc::INVALID_ARGUMENT, *path + " has no node with the scheduler role");
  }
  if (const char* env = std::getenv("TROUPE_ADDRESS"); env != nullptr && *env != '\0') {
    return runtime::parse_address(env);
  }
  return runtime::Address{"127.0.0.1", 7700};
}

/// The cluster token: --token-file, else the token file of --config's cluster, else none.
Result<std::string> cluster_token(const Args& args) {
  if (auto file = args.get("token-file")) return runtime::read_token_file(*file);
  if (auto path = args.get("config")) {
    auto config = runtime::load_cluster_config(*path);
    if (!config) return config.error();
    if (config->token_file) return runtime::read_token_file(*config->token_file);
  }
  return std::string();
}


/// Connects with `Client::connect` to the scheduler and token the options name.
template <class Client>
Result<std::unique_ptr<Client>> connect_to(const Args& args) {
  auto address = scheduler_address(args);
  if (!address) return address.error();
  auto token = cluster_token(args);
  if (!token) return token.error();
  client::ConnectOptions options;
  options.token = std::move(*token);
  return Client::connect(address->host, address->port, options);
}

}  // namespace

Result<std::unique_ptr<client::GatewayClient>> connect(const Args& args) {
  return connect_to<client::GatewayClient>(args);
}

Result<std::unique_ptr<client::AdminClient>> connect_admin(const Args& args) {
  return connect_to<client::AdminClient>(args);
}

}  // namespace troupe::cli
