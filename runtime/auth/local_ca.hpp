// A small certificate authority of a cluster's own, for TLS where no other PKI is at hand:
// `troupe certs` and `troupe up` make one CA and a certificate per node with it, so that a
// cluster is encrypted from its first start. Keys are EC P-256, certificates X.509 v3, written
// as PEM (keys mode 0600). Std-only: OpenSSL stays inside local_ca.cpp.
#pragma once

#include <string>
#include <vector>

#include "schema/result.hpp"

namespace troupe::runtime {

/// Makes a CA: a self-signed certificate named `name`, valid for `days`, at `certificate_path`
/// and its key at `key_path`. UNAVAILABLE naming the file that could not be written.
Result<void> make_certificate_authority(const std::string& certificate_path, const std::string& key_path,
                                        const std::string& name, int days = 3650);

/// What a certificate may be used for.
enum class CertificateUse {
  SERVER_AND_CLIENT,  ///< a scheduler's: presented to clients, and as a client by its own worker
  CLIENT,             ///< a worker's or a user's: presented to the scheduler only
};

/// Issues a certificate signed by the CA at ca_certificate_path/ca_key_path: common name
/// `name`, valid for `days`, for `use`, naming each of `hosts` (DNS names, and IP addresses as
/// both IP and DNS entries: a client checks the host it dialled against them). NOT_FOUND or INVALID_ARGUMENT naming a CA file that cannot be used;
/// UNAVAILABLE naming the file that could not be written.
Result<void> issue_certificate(const std::string& ca_certificate_path, const std::string& ca_key_path,
                               const std::string& certificate_path, const std::string& key_path,
                               const std::string& name, const std::vector<std::string>& hosts,
                               CertificateUse use, int days = 825);

}  // namespace troupe::runtime
