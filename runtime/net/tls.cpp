#include "runtime/net/tls.hpp"

#include <fstream>
#include <sstream>
#include <vector>

#include <kj/debug.h>

namespace troupe::runtime {
namespace {

Result<std::string> read_pem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(Errc::NOT_FOUND, "cannot read the " + std::string(what) + " " + path +
                                     ": `troupe certs CLUSTER.toml` makes the default ones (troupe up does it), or "
                                     "point tls_ca, tls_certificate and tls_key at your own");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Runs `make` (which parses PEM with KJ), turning a parse failure into an error naming `path`.
template <class Make>
Result<void> parsed(const std::string& path, const char* what, Make make) {
  KJ_IF_MAYBE(e, kj::runCatchingExceptions(make)) {
    return fail(Errc::INVALID_ARGUMENT, "the " + std::string(what) + " " + path + " is not usable PEM: " +
                                            e->getDescription().cStr());
  }
  return {};
}

/// Every certificate in a PEM file: KJ reads a chain as one, so the file is split by hand.
Result<kj::Array<kj::TlsCertificate>> read_certificates(const std::string& path) {
  auto pem = read_pem(path, "CA certificate file");
  if (!pem) return pem.error();
  const std::string end_marker = "-----END CERTIFICATE-----";
  std::vector<std::string> blocks;
  for (size_t from = 0;;) {
    const size_t begin = pem->find("-----BEGIN CERTIFICATE-----", from);
    if (begin == std::string::npos) break;
    const size_t end = pem->find(end_marker, begin);
    if (end == std::string::npos) break;
    blocks.push_back(pem->substr(begin, end + end_marker.size() - begin) + "\n");
    from = end + end_marker.size();
  }
  if (blocks.empty()) return fail(Errc::INVALID_ARGUMENT, "the CA certificate file " + path + " holds no certificate");
  auto builder = kj::heapArrayBuilder<kj::TlsCertificate>(blocks.size());
  for (const auto& block : blocks) {
    auto ok = parsed(path, "CA certificate file", [&] { builder.add(kj::TlsCertificate(block)); });
    if (!ok) return ok.error();
  }
  return builder.finish();
}

/// The certificate (with its chain) and private key in `files`.
Result<kj::TlsKeypair> read_keypair(const TlsFiles& files) {
  auto certificate = read_pem(files.certificate, "TLS certificate");
  if (!certificate) return certificate.error();
  auto key = read_pem(files.key, "TLS key");
  if (!key) return key.error();
  kj::Maybe<kj::TlsPrivateKey> private_key;
  kj::Maybe<kj::TlsCertificate> chain;
  if (auto ok = parsed(files.key, "TLS key", [&] { private_key = kj::TlsPrivateKey(*key); }); !ok) return ok.error();
  if (auto ok = parsed(files.certificate, "TLS certificate", [&] { chain = kj::TlsCertificate(*certificate); }); !ok) {
    return ok.error();
  }
  return kj::TlsKeypair{kj::mv(KJ_ASSERT_NONNULL(private_key)), kj::mv(KJ_ASSERT_NONNULL(chain))};
}

}  // namespace

Result<std::unique_ptr<TlsEndpoint>> TlsEndpoint::server(const TlsFiles& files, bool verify_clients) {
  std::unique_ptr<TlsEndpoint> endpoint(new TlsEndpoint());
  auto keypair = read_keypair(files);
  if (!keypair) return keypair.error();
  endpoint->keypair_ = kj::mv(*keypair);
  kj::TlsContext::Options options;
  options.minVersion = kj::TlsVersion::TLS_1_2;
  options.defaultKeypair = KJ_ASSERT_NONNULL(endpoint->keypair_);
  if (verify_clients) {
    auto trusted = read_certificates(files.ca);
    if (!trusted) return trusted.error();
    endpoint->trusted_ = kj::mv(*trusted);
    options.useSystemTrustStore = false;
    options.verifyClients = true;
    options.trustedCertificates = endpoint->trusted_;
  }
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&] { endpoint->context_ = kj::heap<kj::TlsContext>(kj::mv(options)); })) {
    return fail(Errc::INVALID_ARGUMENT, "cannot use the TLS certificate " + files.certificate + " with the key " +
                                            files.key + ": " + e->getDescription().cStr());
  }
  return endpoint;
}

Result<std::unique_ptr<TlsEndpoint>> TlsEndpoint::client(const TlsFiles& files) {
  std::unique_ptr<TlsEndpoint> endpoint(new TlsEndpoint());
  kj::TlsContext::Options options;
  options.minVersion = kj::TlsVersion::TLS_1_2;
  if (!files.ca.empty()) {
    auto trusted = read_certificates(files.ca);
    if (!trusted) return trusted.error();
    endpoint->trusted_ = kj::mv(*trusted);
    options.useSystemTrustStore = false;
    options.trustedCertificates = endpoint->trusted_;
  }
  if (!files.certificate.empty()) {
    auto keypair = read_keypair(files);
    if (!keypair) return keypair.error();
    endpoint->keypair_ = kj::mv(*keypair);
    options.defaultKeypair = KJ_ASSERT_NONNULL(endpoint->keypair_);
  }
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&] { endpoint->context_ = kj::heap<kj::TlsContext>(kj::mv(options)); })) {
    return fail(Errc::INVALID_ARGUMENT, std::string("cannot set up TLS: ") + e->getDescription().cStr());
  }
  return endpoint;
}

}  // namespace troupe::runtime
