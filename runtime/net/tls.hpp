// TLS for the node's connections, with KJ's TLS (OpenSSL underneath): what an endpoint
// presents and trusts, read from PEM files with errors a user can act on, and the KJ context
// that wraps a connection's stream in it. Included by the files that open or accept
// connections only (it brings in KJ).
#pragma once

#include <memory>
#include <string>

#include <kj/async-io.h>
#include <kj/compat/tls.h>

#include "schema/result.hpp"

namespace troupe::runtime {

/// Where an endpoint's TLS material is (PEM files). Empty paths: not used.
struct TlsFiles {
  std::string ca;           ///< CA certificates trusted to sign the peer's certificate
  std::string certificate;  ///< this endpoint's certificate (and chain); a server's is required
  std::string key;          ///< its private key
};

/// One endpoint's TLS context and the keys it uses (the context refers to them, so they live
/// together). Made once per server, or per client connection setup; used on one thread.
class TlsEndpoint {
 public:
  /// A server presenting `files.certificate`; with `verify_clients`, a client must present a
  /// certificate signed by `files.ca`. INVALID_ARGUMENT or NOT_FOUND naming the file otherwise.
  static Result<std::unique_ptr<TlsEndpoint>> server(const TlsFiles& files, bool verify_clients);
  /// A client trusting `files.ca` (only it), presenting `files.certificate` when one is set.
  static Result<std::unique_ptr<TlsEndpoint>> client(const TlsFiles& files);

  kj::TlsContext& context() { return *context_; }

 private:
  TlsEndpoint() = default;
  kj::Maybe<kj::TlsKeypair> keypair_;
  kj::Array<kj::TlsCertificate> trusted_;
  kj::Own<kj::TlsContext> context_;
};

}  // namespace troupe::runtime
