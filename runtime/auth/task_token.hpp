// Task completion tokens: a task that completes asynchronously is given a token naming its
// invocation, and whoever later calls completeTask/failTask presents it. The token is signed
// with a key of the scheduler's own (kept in its data directory, never the cluster token or
// any other credential a client holds), so the scheduler can tell a token it minted from a
// forged or altered one without keeping a table of the tokens it handed out.
// Std-only: OpenSSL stays inside task_token.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe::runtime {

/// What a task token names. Any bytes are allowed in each field (the encoding is
/// length-prefixed), so no two different claim sets share a token.
struct TaskTokenClaims {
  std::string workflow_id;
  std::string task_name;
  std::string invocation_id;  ///< unique per attempt; names what the token completes
  /// Random (new_task_token_nonce): no two tokens alike, and none to be guessed from the ids,
  /// which a client can see.
  std::string nonce;

  friend bool operator==(const TaskTokenClaims&, const TaskTokenClaims&) = default;
};

/// The token: "tt1." base64url(claims) "." base64url(HMAC-SHA256(secret, "tt1." + base64url(claims))),
/// base64url without padding, so it is printable and safe to pass unquoted in a shell.
/// `claims` is encoded as a version byte (2) and four fields (workflow, task, invocation, nonce),
/// each a 4-byte big-endian length and its bytes. `secret` should come from read_token_file. The token is a bearer credential:
/// whoever holds it can complete the invocation, so do not log it.
std::string mint_task_token(std::string_view secret, const TaskTokenClaims& claims);

/// The claims of a token minted with `secret`; INVALID_ARGUMENT otherwise, the message saying
/// what is wrong: a malformed token (empty, wrong prefix, truncated, not base64url, a signature
/// of the wrong size, undecodable claims), or a signature that does not match ("... was not
/// signed by this scheduler ..."). Errc has no PERMISSION_DENIED and the caller
/// refuses both alike, so the two differ in the message only. The MAC is compared in constant
/// time and checked before the claims are decoded. Messages never echo the token.
Result<TaskTokenClaims> verify_task_token(std::string_view secret, std::string_view token);

/// 16 random bytes as hex, for TaskTokenClaims::nonce.
std::string new_task_token_nonce();

/// The cluster secret from a token file: its content with surrounding whitespace trimmed.
/// NOT_FOUND if the file does not exist; UNAVAILABLE if it cannot be read; INVALID_ARGUMENT if
/// it is a directory, or empty or shorter than 16 bytes after trimming (the message names the
/// file and says how to make one).
Result<std::string> read_token_file(const std::string& path);

/// The key in `path`, read as read_token_file reads it; when the file does not exist, first
/// made: 32 random bytes as hex, mode 0600, synced. The scheduler's task-token key, so the
/// tokens it signs stay valid across its restarts. UNAVAILABLE naming the file
/// when it cannot be made.
Result<std::string> read_or_create_key_file(const std::string& path);

namespace detail {

/// HMAC-SHA256(key, data) as mint_task_token uses it; exposed for a known-answer test.
std::array<uint8_t, 32> hmac_sha256(std::string_view key, std::string_view data);

}  // namespace detail

}  // namespace troupe::runtime
