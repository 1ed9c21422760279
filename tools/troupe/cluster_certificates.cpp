#include "tools/troupe/cluster_certificates.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "runtime/auth/local_ca.hpp"

namespace troupe::cli {
namespace fs = std::filesystem;

Result<std::vector<std::string>> make_missing_certificates(const runtime::ClusterConfig& config) {
  std::vector<std::string> written;
  if (config.plaintext) return written;
  const fs::path dir = fs::path(config.source_path).parent_path().empty()
                           ? fs::current_path()
                           : fs::absolute(fs::path(config.source_path).parent_path());
  const fs::path certs = (dir / "certs").lexically_normal();
  const std::string ca = (certs / "ca.pem").string();
  const std::string ca_key = (certs / "ca.key").string();
  std::error_code ec;
  fs::create_directories(certs, ec);
  if (ec) return fail(Errc::UNAVAILABLE, "cannot make " + certs.string() + ": " + ec.message());
  fs::permissions(certs, fs::perms::owner_all, ec);
  if (config.tls_ca == ca && !fs::exists(ca)) {
    if (auto made = runtime::make_certificate_authority(ca, ca_key, config.name + " CA"); !made) return made.error();
    written.push_back(ca);
    written.push_back(ca_key);
  }
  for (const auto& node : config.nodes) {
    const std::string certificate = (certs / (node.name + ".pem")).string();
    const std::string key = (certs / (node.name + ".key")).string();
    const bool default_path = node.tls_certificate.empty() || node.tls_certificate == certificate;
    if (!default_path || fs::exists(certificate)) continue;
    if (!fs::exists(ca_key)) {
      return fail(Errc::INVALID_ARGUMENT, certificate + " is missing and there is no " + ca_key +
                                              " to sign one: make it with your own CA, or set tls_certificate and "
                                              "tls_key for node " + node.name);
    }
    // A scheduler's certificate names every host it is dialled by: its listen host, what the
    // workers of the config name as their scheduler, and the loopback names. A worker's is a
    // client certificate naming the worker only, so it cannot pose as the scheduler.
    std::vector<std::string> hosts = {node.name};
    auto use = runtime::CertificateUse::CLIENT;
    if (node.scheduler) {
      use = runtime::CertificateUse::SERVER_AND_CLIENT;
      for (const std::string loopback : {"localhost", "127.0.0.1", "::1"}) hosts.push_back(loopback);
      auto add = [&hosts](const std::string& host) {
        const bool wildcard = host == "0.0.0.0" || host == "::";
        if (!host.empty() && !wildcard && std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
          hosts.push_back(host);
        }
      };
      add(node.listen.host);
      for (const auto& other : config.nodes) {
        if (other.worker && other.scheduler_address.port == node.listen.port) add(other.scheduler_address.host);
      }
    }
    if (auto made = runtime::issue_certificate(ca, ca_key, certificate, key, node.name, hosts, use); !made) {
      return made.error();
    }
    written.push_back(certificate);
    written.push_back(key);
  }
  return written;
}

}  // namespace troupe::cli
