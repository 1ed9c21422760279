// Task tokens: the claims codec, strict base64url, HMAC-SHA256 via OpenSSL's libcrypto, and
// reading the cluster secret from its token file.
#include "runtime/auth/task_token.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>

namespace troupe::runtime {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "tt1.";
constexpr uint8_t kClaimsVersion = 2;
constexpr size_t kMacSize = 32;
constexpr size_t kMinSecretSize = 16;
constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  uint32_t bits = 0;
  int count = 0;
  for (unsigned char c : bytes) {
    bits = (bits << 8) | c;
    count += 8;
    while (count >= 6) {
      count -= 6;
      out += kAlphabet[(bits >> count) & 0x3f];
    }
  }
  if (count > 0) out += kAlphabet[(bits << (6 - count)) & 0x3f];
  return out;
}

int base64url_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

/// `c` for a message: itself if printable ASCII, else \xNN.
std::string shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char hex[] = "0123456789abcdef";
  return std::string("\\x") + hex[u >> 4] + hex[u & 0xf];
}

/// Decodes unpadded base64url, refusing every text that encode would not produce: padding,
/// other alphabets, impossible lengths, and non-zero unused bits in the last character.
/// Without the last rule two texts would decode to the same MAC, and an altered token would
/// pass. `what` names the part and `offset` is where it starts in the token, for messages.
Result<std::string> base64url_decode(std::string_view text, std::string_view what, size_t offset) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t bits = 0;
  int count = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const int v = base64url_value(text[i]);
    if (v < 0) {
      return fail(Errc::INVALID_ARGUMENT,
                  "task token's " + std::string(what) + " is not base64url: character " +
                      shown(text[i]) + " at offset " + std::to_string(offset + i) +
                      " (expected A-Z a-z 0-9 - _, no padding)");
    }
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  // Checked after the characters, so a stray character is named rather than miscounted.
  if (text.size() % 4 == 1) {
    return fail(Errc::INVALID_ARGUMENT, "task token's " + std::string(what) + " has " +
                                            std::to_string(text.size()) +
                                            " characters, a length no base64url text has; "
                                            "the token was truncated or altered");
  }
  if ((bits & ((1u << count) - 1)) != 0) {
    return fail(Errc::INVALID_ARGUMENT, "task token's " + std::string(what) +
                                            " is not canonical base64url: its last character "
                                            "has unused bits set; the token was altered");
  }
  return out;
}

void put_field(std::string& out, std::string_view field) {
  const auto n = static_cast<uint32_t>(field.size());
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
  out += field;
}

/// Version byte, then each field as a 4-byte big-endian length and its bytes: a prefix code,
/// so no two claim sets share an encoding, whatever bytes the fields hold.
std::string encode_claims(const TaskTokenClaims& claims) {
  for (const std::string* f : {&claims.workflow_id, &claims.task_name, &claims.invocation_id, &claims.nonce}) {
    // 4 GiB of id is a bug upstream; a wrapped length would make an ambiguous encoding.
    if (f->size() > UINT32_MAX) throw std::length_error("task token claim longer than 4 GiB");
  }
  std::string out(1, static_cast<char>(kClaimsVersion));
  put_field(out, claims.workflow_id);
  put_field(out, claims.task_name);
  put_field(out, claims.invocation_id);
  put_field(out, claims.nonce);
  return out;
}

/// Reads one length-prefixed field at `pos`, advancing it; nullopt if the bytes run out.
std::optional<std::string> take_field(std::string_view bytes, size_t& pos) {
  if (bytes.size() - pos < 4) return std::nullopt;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(bytes[pos + i]);
  pos += 4;
  if (bytes.size() - pos < n) return std::nullopt;
  std::string field(bytes.substr(pos, n));
  pos += n;
  return field;
}

Result<TaskTokenClaims> decode_claims(std::string_view bytes) {
  // Reached only for a correctly signed token, so a failure here means a peer with the secret
  // encodes claims differently (another version), not a forgery.
  if (bytes.empty() || static_cast<uint8_t>(bytes[0]) != kClaimsVersion) {
    return fail(Errc::INVALID_ARGUMENT,
                "task token's claims have an unknown encoding version; "
                "the token was minted by a different troupe version");
  }
  size_t pos = 1;
  TaskTokenClaims claims;
  for (std::string* f : {&claims.workflow_id, &claims.task_name, &claims.invocation_id, &claims.nonce}) {
    auto field = take_field(bytes, pos);
    if (!field) {
      return fail(Errc::INVALID_ARGUMENT, "task token's claims are cut short; "
                                          "the token was minted by a different troupe version");
    }
    *f = std::move(*field);
  }
  if (pos != bytes.size()) {
    return fail(Errc::INVALID_ARGUMENT, "task token's claims have " +
                                            std::to_string(bytes.size() - pos) +
                                            " bytes after the last field; the token was minted "
                                            "by a different troupe version");
  }
  return claims;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string make_one(const std::string& path) {
  return "make one with `head -c 32 /dev/urandom | base64 > " + path + "`";
}

}  // namespace

namespace detail {

std::array<uint8_t, 32> hmac_sha256(std::string_view key, std::string_view data) {
  std::array<uint8_t, 32> mac{};
  unsigned int size = 0;
  // HMAC() takes an int key length and rejects a null key pointer even for length 0.
  if (key.size() > static_cast<size_t>(INT_MAX)) throw std::length_error("HMAC key over 2 GiB");
  static constexpr unsigned char empty = 0;
  const void* key_bytes = key.empty() ? &empty : static_cast<const void*>(key.data());
  const auto* data_bytes = data.empty() ? &empty : reinterpret_cast<const unsigned char*>(data.data());
  // Fails only when OpenSSL cannot allocate; minting has no error channel and a token with a
  // wrong MAC would fail later and far away, so this throws.
  if (HMAC(EVP_sha256(), key_bytes, static_cast<int>(key.size()), data_bytes, data.size(),
           mac.data(), &size) == nullptr ||
      size != mac.size()) {
    char reason[256] = "unknown error";
    if (const unsigned long e = ERR_get_error()) ERR_error_string_n(e, reason, sizeof reason);
    throw std::runtime_error(std::string("HMAC-SHA256 failed in OpenSSL: ") + reason);
  }
  return mac;
}

}  // namespace detail

std::string new_task_token_nonce() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes for a task token nonce");
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::string mint_task_token(std::string_view secret, const TaskTokenClaims& claims) {
  std::string token(kPrefix);
  token += base64url_encode(encode_claims(claims));
  const auto mac = detail::hmac_sha256(secret, token);
  token += '.';
  token += base64url_encode(std::string_view(reinterpret_cast<const char*>(mac.data()), mac.size()));
  return token;
}

Result<TaskTokenClaims> verify_task_token(std::string_view secret, std::string_view token) {
  // An empty secret would accept any token minted with an empty key: a misconfigured
  // scheduler must refuse everything rather than trust everyone.
  if (secret.empty()) {
    return fail(Errc::INVALID_ARGUMENT,
                "cannot verify task tokens without the cluster secret; load it with read_token_file");
  }
  if (token.empty()) return fail(Errc::INVALID_ARGUMENT, "task token is empty");
  if (!token.starts_with(kPrefix)) {
    return fail(Errc::INVALID_ARGUMENT,
                "not a task token: it does not start with \"tt1.\" "
                "(tokens look like tt1.CLAIMS.SIGNATURE)");
  }
  const size_t dot = token.find('.', kPrefix.size());
  if (dot == std::string_view::npos) {
    return fail(Errc::INVALID_ARGUMENT,
                "task token has no signature part (expected tt1.CLAIMS.SIGNATURE); "
                "it is probably truncated");
  }
  if (token.find('.', dot + 1) != std::string_view::npos) {
    return fail(Errc::INVALID_ARGUMENT,
                "task token has more than three '.'-separated parts (expected tt1.CLAIMS.SIGNATURE)");
  }
  const std::string_view signed_part = token.substr(0, dot);
  const std::string_view claims_text = token.substr(kPrefix.size(), dot - kPrefix.size());
  const std::string_view mac_text = token.substr(dot + 1);

  auto claims_bytes = base64url_decode(claims_text, "claims part", kPrefix.size());
  if (!claims_bytes) return claims_bytes.error();
  auto mac = base64url_decode(mac_text, "signature part", dot + 1);
  if (!mac) return mac.error();
  if (mac->size() != kMacSize) {
    return fail(Errc::INVALID_ARGUMENT, "task token's signature is " + std::to_string(mac->size()) +
                                            " bytes, not the " + std::to_string(kMacSize) +
                                            " of HMAC-SHA256; the token was truncated or altered");
  }

  const auto expected = detail::hmac_sha256(secret, signed_part);
  // Constant time: a comparison that stops at the first wrong byte tells a forger, by its
  // timing, how many leading bytes they have right.
  if (CRYPTO_memcmp(expected.data(), mac->data(), kMacSize) != 0) {
    return fail(Errc::INVALID_ARGUMENT,
                "task token was not signed by this scheduler: it was forged, altered, "
                "or minted by another scheduler (each keeps its key in DATA_DIR/task-token.key)");
  }
  return decode_claims(*claims_bytes);
}

Result<std::string> read_token_file(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    return fail(Errc::NOT_FOUND, "token file '" + path + "' does not exist; " + make_one(path));
  }
  if (ec) return fail(Errc::UNAVAILABLE, "cannot read token file '" + path + "': " + ec.message());
  if (fs::is_directory(status)) {
    return fail(Errc::INVALID_ARGUMENT,
                "token file '" + path + "' is a directory; name the file holding the secret");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(Errc::UNAVAILABLE,
                "cannot read token file '" + path + "': " + std::strerror(errno));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return fail(Errc::UNAVAILABLE,
                "cannot read token file '" + path + "': " + std::strerror(errno));
  }
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && is_space(text[begin])) ++begin;
  while (end > begin && is_space(text[end - 1])) --end;
  std::string secret = text.substr(begin, end - begin);
  if (secret.empty()) {
    return fail(Errc::INVALID_ARGUMENT, "token file '" + path + "' is empty; " + make_one(path));
  }
  // 16 bytes is 128 bits if random: below that a secret can be guessed, and tokens forged.
  if (secret.size() < kMinSecretSize) {
    return fail(Errc::INVALID_ARGUMENT, "token file '" + path + "' holds " +
                                            std::to_string(secret.size()) + " bytes, fewer than " +
                                            std::to_string(kMinSecretSize) +
                                            " (too easy to guess); " + make_one(path));
  }
  return secret;
}

Result<std::string> read_or_create_key_file(const std::string& path) {
  if (auto existing = read_token_file(path); existing || existing.error().code != Errc::NOT_FOUND) return existing;
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) return fail(Errc::UNAVAILABLE, "no random bytes for the key in " + path);
  std::string key;
  for (unsigned char c : raw) {
    static constexpr char hex[] = "0123456789abcdef";
    key += hex[c >> 4];
    key += hex[c & 15];
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return fail(Errc::UNAVAILABLE, "cannot create " + path + ": " + std::strerror(errno));
  const bool written = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written) return fail(Errc::UNAVAILABLE, "cannot write " + path + ": " + std::strerror(errno));
  return key;
}

}  // namespace troupe::runtime
