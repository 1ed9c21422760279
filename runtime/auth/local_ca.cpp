#include "runtime/auth/local_ca.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace troupe::runtime {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
};
template <class T>
using Owned = std::unique_ptr<T, Free>;

std::string openssl_error() {
  char text[256] = "unknown error";
  if (const unsigned long code = ERR_get_error(); code != 0) ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return text;
}

Error failed(const std::string& what) { return fail(Errc::INTERNAL, what + ": " + openssl_error()); }

/// Writes `pem` to `path` (mode 0600 for a key, 0644 for a certificate), replacing nothing.
Result<void> write_pem(const std::string& path, const std::string& pem, bool secret) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, secret ? 0600 : 0644);
  if (fd < 0) return fail(Errc::UNAVAILABLE, "cannot write " + path + ": " + std::strerror(errno));
  size_t written = 0;
  while (written < pem.size()) {
    const ssize_t n = ::write(fd, pem.data() + written, pem.size() - written);
    if (n <= 0) {
      ::close(fd);
      return fail(Errc::UNAVAILABLE, "cannot write " + path + ": " + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return fail(Errc::UNAVAILABLE, "cannot write " + path);
  return {};
}

Result<std::string> pem_of(EVP_PKEY* key) {
  Owned<BIO> out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_PrivateKey(out.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return failed("cannot encode a key");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> pem_of(X509* certificate) {
  Owned<BIO> out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_X509(out.get(), certificate) != 1) return failed("cannot encode a certificate");
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<Owned<EVP_PKEY>> new_key() {
  Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (!key) return failed("cannot make a key");
  return key;
}

/// A certificate for `key` named `name`, valid from an hour ago for `days`, with a random
/// serial number; unsigned.
Result<Owned<X509>> new_certificate(EVP_PKEY* key, const std::string& name, int days) {
  Owned<X509> certificate(X509_new());
  Owned<BIGNUM> serial(BN_new());
  if (!certificate || !serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(certificate.get())) == nullptr ||
      X509_set_version(certificate.get(), 2) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(certificate.get()), static_cast<long>(days) * 86400) == nullptr ||
      X509_set_pubkey(certificate.get(), key) != 1 ||
      X509_NAME_add_entry_by_txt(X509_get_subject_name(certificate.get()), "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0) != 1) {
    return failed("cannot make a certificate");
  }
  return certificate;
}

Result<void> add_extension(X509* certificate, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, certificate, nullptr, nullptr, 0);
  Owned<X509_EXTENSION> extension(X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str()));
  if (!extension || X509_add_ext(certificate, extension.get(), -1) != 1) {
    return failed("cannot add " + value + " to a certificate");
  }
  return {};
}

bool is_ip_address(const std::string& host) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 || inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

Result<void> check_readable(const std::string& path) {
  Owned<BIO> in(BIO_new_file(path.c_str(), "r"));
  if (!in) {
    ERR_clear_error();
    return fail(Errc::NOT_FOUND, "cannot read " + path);
  }
  return {};
}

}  // namespace

Result<void> make_certificate_authority(const std::string& certificate_path, const std::string& key_path,
                                        const std::string& name, int days) {
  auto key = new_key();
  if (!key) return key.error();
  auto certificate = new_certificate(key->get(), name, days);
  if (!certificate) return certificate.error();
  X509* ca = certificate->get();
  if (X509_set_issuer_name(ca, X509_get_subject_name(ca)) != 1) return failed("cannot make a certificate");
  for (const auto& [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                                  std::pair{NID_key_usage, "critical,keyCertSign,cRLSign"},
                                  std::pair{NID_subject_key_identifier, "hash"}}) {
    if (auto added = add_extension(ca, ca, nid, value); !added) return added.error();
  }
  if (X509_sign(ca, key->get(), EVP_sha256()) == 0) return failed("cannot sign the CA certificate");
  auto key_pem = pem_of(key->get());
  if (!key_pem) return key_pem.error();
  auto certificate_pem = pem_of(ca);
  if (!certificate_pem) return certificate_pem.error();
  if (auto written = write_pem(key_path, *key_pem, true); !written) return written.error();
  return write_pem(certificate_path, *certificate_pem, false);
}

Result<void> issue_certificate(const std::string& ca_certificate_path, const std::string& ca_key_path,
                               const std::string& certificate_path, const std::string& key_path,
                               const std::string& name, const std::vector<std::string>& hosts,
                               CertificateUse use, int days) {
  if (auto readable = check_readable(ca_certificate_path); !readable) return readable.error();
  if (auto readable = check_readable(ca_key_path); !readable) return readable.error();
  Owned<BIO> ca_in(BIO_new_file(ca_certificate_path.c_str(), "r"));
  Owned<X509> ca(ca_in ? PEM_read_bio_X509(ca_in.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!ca) {
    return fail(Errc::INVALID_ARGUMENT, "the CA certificate " + ca_certificate_path + " is not a PEM certificate: " +
                                            openssl_error());
  }
  Owned<BIO> key_in(BIO_new_file(ca_key_path.c_str(), "r"));
  Owned<EVP_PKEY> ca_key(key_in ? PEM_read_bio_PrivateKey(key_in.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!ca_key) {
    return fail(Errc::INVALID_ARGUMENT, "the CA key " + ca_key_path + " is not a PEM private key: " + openssl_error());
  }
  if (X509_check_private_key(ca.get(), ca_key.get()) != 1) {
    return fail(Errc::INVALID_ARGUMENT, "the CA key " + ca_key_path + " is not the key of " + ca_certificate_path);
  }
  auto key = new_key();
  if (!key) return key.error();
  auto certificate = new_certificate(key->get(), name, days);
  if (!certificate) return certificate.error();
  X509* issued = certificate->get();
  if (X509_set_issuer_name(issued, X509_get_subject_name(ca.get())) != 1) return failed("cannot make a certificate");
  std::string names;
  for (const auto& host : hosts) {
    if (!names.empty()) names += ",";
    // An address as an IP entry for clients that check one, and as a DNS entry for those
    // (KJ's among them) that check every host they dial as a name.
    names += is_ip_address(host) ? "IP:" + host + ",DNS:" + host : "DNS:" + host;
  }
  std::vector<std::pair<int, std::string>> extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
      {NID_ext_key_usage, use == CertificateUse::CLIENT ? "clientAuth" : "serverAuth,clientAuth"},
      {NID_authority_key_identifier, "keyid:always"}};
  if (!names.empty()) extensions.emplace_back(NID_subject_alt_name, names);
  for (const auto& [nid, value] : extensions) {
    if (auto added = add_extension(issued, ca.get(), nid, value); !added) return added.error();
  }
  if (X509_sign(issued, ca_key.get(), EVP_sha256()) == 0) return failed("cannot sign the certificate of " + name);
  auto key_pem = pem_of(key->get());
  if (!key_pem) return key_pem.error();
  auto certificate_pem = pem_of(issued);
  if (!certificate_pem) return certificate_pem.error();
  if (auto written = write_pem(key_path, *key_pem, true); !written) return written.error();
  return write_pem(certificate_path, *certificate_pem, false);
}

}  // namespace troupe::runtime
