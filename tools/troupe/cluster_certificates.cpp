#include "tools/troupe/cluster_certificates.hpp"

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
    std::vector<std::string> hosts = {node.name, "localhost", "127.0.0.1", "::1"};
    if (node.scheduler && !node.listen.empty() && node.listen.host != "localhost" &&
        node.listen.host != "127.0.0.1" && node.listen.host != "::1") {
      hosts.push_back(node.listen.host);
    }
    if (auto made = runtime::issue_certificate(ca, ca_key, certificate, key, node.name, hosts); !made) {
      return made.error();
    }
    written.push_back(certificate);
    written.push_back(key);
  }
  return written;
}

}  // namespace troupe::cli
