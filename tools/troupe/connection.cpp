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


/// How to speak TLS with the scheduler at `address`, nullopt for plaintext: --plaintext, else
/// the TLS flags, else --config's [cluster], else plaintext on a loopback address (what a
/// plaintext cluster must use) and TLS trusting the system's CAs anywhere else.
Result<std::optional<client::TlsOptions>> tls_options(const Args& args, const runtime::Address& address) {
  auto plaintext = args.boolean("plaintext", false);
  if (!plaintext) return plaintext.error();
  if (*plaintext) {
    for (const char* flag : {"tls-ca", "tls-certificate", "tls-key"}) {
      if (args.has(flag)) return fail(Errc::INVALID_ARGUMENT, std::string("--plaintext and --") + flag + " contradict");
    }
    return std::optional<client::TlsOptions>();
  }
  if (args.has("tls-certificate") != args.has("tls-key")) {
    return fail(Errc::INVALID_ARGUMENT, "--tls-certificate and --tls-key go together");
  }
  client::TlsOptions tls;
  tls.certificate_file = args.get("tls-certificate").value_or("");
  tls.key_file = args.get("tls-key").value_or("");
  if (auto ca = args.get("tls-ca")) {
    tls.ca_file = *ca;
    return std::optional(tls);
  }
  if (auto path = args.get("config")) {
    auto config = runtime::load_cluster_config(*path);
    if (!config) return config.error();
    // Plaintext only where the config allows it: on the loopback address dialled.
    if (config->plaintext && is_loopback_host(address.host)) return std::optional<client::TlsOptions>();
    tls.ca_file = config->tls_ca;
    return std::optional(tls);
  }
  if (!tls.certificate_file.empty() || !is_loopback_host(address.host)) return std::optional(tls);
  return std::optional<client::TlsOptions>();
}

/// Connects with `Client::connect` to the scheduler and token the options name.
template <class Client>
Result<std::unique_ptr<Client>> connect_to(const Args& args) {
  auto address = scheduler_address(args);
  if (!address) return address.error();
  auto token = cluster_token(args);
  if (!token) return token.error();
  auto tls = tls_options(args, *address);
  if (!tls) return tls.error();
  client::ConnectOptions options;
  options.token = std::move(*token);
  options.tls = std::move(*tls);
  auto connected = Client::connect(address->host, address->port, options);
  if (!connected && connected.error().code == Errc::UNAVAILABLE && !options.tls &&
      connected.error().message.find("cannot reach") != std::string::npos &&
      connected.error().message.find("disconnected") != std::string::npos) {
    // A TLS scheduler hangs up on a client that does not speak it.
    return fail(Errc::UNAVAILABLE, connected.error().message +
                                       " (a scheduler speaks TLS unless its config says plaintext: pass --config "
                                       "CLUSTER.toml, or --tls-ca with its CA certificate)");
  }
  return connected;
}

}  // namespace

Result<std::unique_ptr<client::GatewayClient>> connect(const Args& args) {
  return connect_to<client::GatewayClient>(args);
}

Result<std::unique_ptr<client::AdminClient>> connect_admin(const Args& args) {
  return connect_to<client::AdminClient>(args);
}

}  // namespace troupe::cli
