// Task tokens: round trips, refusal of every altered, truncated or foreign token with a message,
// an unambiguous claims encoding, HMAC-SHA256 against RFC 4231, and the token file's errors.
#include "runtime/auth/task_token.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "test/support/temp_dir.hpp"
#include "test/support/why.hpp"

using namespace troupe;
using namespace troupe::runtime;

namespace {

const std::string kSecret = "0123456789abcdef0123456789abcdef";
const TaskTokenClaims kClaims{"wf-42", "fetch", "wf-42/fetch/3", "00112233445566778899aabbccddeeff"};

std::string hex(const std::array<uint8_t, 32>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

/// The refusal a token gets when it is well formed but not signed with the secret.
bool is_bad_signature(const Result<TaskTokenClaims>& r) {
  return !r && contains(r.error().message, "not signed by this scheduler");
}

/// A malformed token's refusal: INVALID_ARGUMENT saying what is wrong, not "bad signature".
void check_malformed(const std::string& token, const std::string& fragment) {
  auto r = verify_task_token(kSecret, token);
  INFO("token: ", token, " -> ", test::why(r));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::INVALID_ARGUMENT);
  CHECK_FALSE(is_bad_signature(r));
  CHECK(contains(r.error().message, fragment));
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

}  // namespace

TEST_SUITE("runtime.task_token") {
  TEST_CASE("a token round-trips to its claims") {
    const std::string token = mint_task_token(kSecret, kClaims);
    auto r = verify_task_token(kSecret, token);
    REQUIRE_MESSAGE(r, test::why(r));
    CHECK(*r == kClaims);
    // Minting is deterministic: the same claims and secret give the same token.
    CHECK(mint_task_token(kSecret, kClaims) == token);
  }

  TEST_CASE("the token has the documented format") {
    // Computed independently (Python hmac/base64) from the format in task_token.hpp, so a
    // change of encoding, which would orphan the tokens of running tasks, fails here.
    CHECK(mint_task_token(kSecret, kClaims) ==
          "tt1.AgAAAAV3Zi00MgAAAAVmZXRjaAAAAA13Zi00Mi9mZXRjaC8zAAAAIDAwMTEyMjMzNDQ1NTY2Nzc4ODk5YWFiYmNjZGRlZWZm."
          "LdYAVLxK59SR0RQOItYbXYxhoipsmU-2xm8okEYyKoE");
  }

  TEST_CASE("nonces are random: two tokens for one invocation differ, and both verify") {
    TaskTokenClaims a = kClaims, b = kClaims;
    a.nonce = new_task_token_nonce();
    b.nonce = new_task_token_nonce();
    CHECK(a.nonce.size() == 32);
    CHECK(a.nonce != b.nonce);
    CHECK(mint_task_token(kSecret, a) != mint_task_token(kSecret, b));
    CHECK(verify_task_token(kSecret, mint_task_token(kSecret, a)).has_value());
  }

  TEST_CASE("tokens are printable and shell-safe") {
    const std::string token = mint_task_token(kSecret, {"wf é/.", "t\x01 ask", "id;$(rm -rf)", new_task_token_nonce()});
    for (char c : token) {
      const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
      CHECK_MESSAGE(ok, "character ", static_cast<int>(static_cast<unsigned char>(c)));
    }
  }

  TEST_CASE("a token verified with another secret is refused") {
    const std::string token = mint_task_token(kSecret, kClaims);
    auto r = verify_task_token("another-secret-of-32-bytes......", token);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::INVALID_ARGUMENT);
    CHECK_MESSAGE(is_bad_signature(r), test::why(r));
    // A secret that is a prefix of the real one is another secret too.
    CHECK(is_bad_signature(verify_task_token(kSecret.substr(0, 31), token)));
  }

  TEST_CASE("an empty secret verifies nothing") {
    const std::string token = mint_task_token("", kClaims);
    auto r = verify_task_token("", token);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::INVALID_ARGUMENT);
    CHECK(contains(r.error().message, "read_token_file"));
  }

  TEST_CASE("every single-character change of a token is refused") {
    const std::string token = mint_task_token(kSecret, kClaims);
    size_t refused = 0;
    for (size_t i = 0; i < token.size(); ++i) {
      for (int b = 0; b < 256; ++b) {
        if (static_cast<char>(b) == token[i]) continue;
        std::string altered = token;
        altered[i] = static_cast<char>(b);
        auto r = verify_task_token(kSecret, altered);
        if (r) {
          FAIL_CHECK("position ", i, " changed to byte ", b, " was accepted");
        } else if (r.error().code == Errc::INVALID_ARGUMENT && !r.error().message.empty()) {
          ++refused;
        }
      }
      std::string shorter = token;
      shorter.erase(i, 1);
      CHECK_MESSAGE(!verify_task_token(kSecret, shorter), "deleting position ", i, " was accepted");
    }
    CHECK(refused == token.size() * 255);
  }

  TEST_CASE("a signature with unused bits set is refused as altered") {
    // 32 bytes take 43 base64url characters; the last one carries 2 unused bits. A lenient
    // decoder would read 'E' (4) and 'F' (5) alike, accepting a changed token.
    std::string token = mint_task_token(kSecret, kClaims);
    REQUIRE(token.back() == 'E');  // value 4: unused bits clear
    token.back() = 'F';
    check_malformed(token, "not canonical base64url");
  }

  TEST_CASE("malformed tokens are INVALID_ARGUMENT saying what is wrong") {
    const std::string token = mint_task_token(kSecret, kClaims);
    const size_t dot = token.rfind('.');

    check_malformed("", "empty");
    check_malformed("tt2" + token.substr(3), "does not start with \"tt1.\"");
    check_malformed("TT1" + token.substr(3), "does not start with \"tt1.\"");
    check_malformed("eyJhbGciOiJIUzI1NiJ9.e30.sig", "does not start with \"tt1.\"");
    check_malformed(token.substr(0, dot), "no signature part");
    check_malformed("tt1.", "no signature part");
    check_malformed(token.substr(0, dot + 1), "signature is 0 bytes");
    check_malformed(token.substr(0, token.size() - 3), "signature is 30 bytes");  // 40 chars
    check_malformed(token.substr(0, token.size() - 2), "a length no base64url text has");
    check_malformed(token + "=", "character '='");
    check_malformed(token + ".extra", "more than three '.'-separated parts");
    check_malformed("tt1.AQ.." + token.substr(dot + 1), "more than three '.'-separated parts");
    check_malformed("tt1.AQ+A." + token.substr(dot + 1), "claims part is not base64url: character '+' at offset 6");
    check_malformed("tt1.AQ/A." + token.substr(dot + 1), "character '/'");
    check_malformed("tt1.AQ A." + token.substr(dot + 1), "character ' '");
    check_malformed("tt1.AQ\nA." + token.substr(dot + 1), "character \\x0a");
  }

  TEST_CASE("every truncation of a token is malformed") {
    const std::string token = mint_task_token(kSecret, kClaims);
    for (size_t n = 0; n < token.size(); ++n) {
      auto r = verify_task_token(kSecret, token.substr(0, n));
      INFO("length ", n, ": ", test::why(r));
      REQUIRE_FALSE(r);
      CHECK(r.error().code == Errc::INVALID_ARGUMENT);
      CHECK_FALSE(r.error().message.empty());
      CHECK_FALSE(is_bad_signature(r));
    }
  }

  TEST_CASE("messages never echo the token") {
    // A valid token refused by a misconfigured scheduler must not end up in its logs.
    const std::string token = mint_task_token(kSecret, kClaims);
    const std::string signature = token.substr(token.rfind('.') + 1);
    for (const std::string& t : {token, token + "=", token.substr(0, token.size() - 1)}) {
      auto r = verify_task_token("another-secret-of-32-bytes......", t);
      REQUIRE_FALSE(r);
      CHECK_FALSE(contains(r.error().message, signature.substr(0, 8)));
    }
  }

  TEST_CASE("claims with separators, unicode and empty fields round-trip") {
    const std::vector<TaskTokenClaims> cases = {
        {"wf.1.2", "a/b/c", "wf.1.2/a/b/c/7", "n"},
        {"workflow-ünïcødé-日本語", "задача 🚀", "id-\u2028-\u00a0", new_task_token_nonce()},
        {"", "", "", ""},
        {"tt1.", "..", ".", "."},
        {std::string("nul\0inside", 10), std::string(3, '\0'), "\x01\xff", std::string(2, '\0')},
        {std::string(100000, 'w'), "t", "i", "n"},
    };
    for (const auto& claims : cases) {
      auto r = verify_task_token(kSecret, mint_task_token(kSecret, claims));
      REQUIRE_MESSAGE(r, test::why(r));
      CHECK(*r == claims);
    }
  }

  TEST_CASE("different claim sets never share a token") {
    // Fields chosen to collide under naive encodings: concatenation, separators, and a field
    // that looks like a length prefix.
    const std::vector<std::string> parts = {
        "", "a", "ab", "b", ".", "a.b", std::string(1, '\0'), std::string("\0\0\0\x01", 4),
        std::string("\0\0\0\x01" "a", 5), "\x01"};
    std::set<std::string> tokens;
    size_t sets = 0;
    for (const auto& w : parts) {
      for (const auto& t : parts) {
        for (const auto& i : parts) {
          const TaskTokenClaims claims{w, t, i, w + t};
          const std::string token = mint_task_token(kSecret, claims);
          tokens.insert(token);
          ++sets;
          auto r = verify_task_token(kSecret, token);
          REQUIRE_MESSAGE(r, test::why(r));
          CHECK(*r == claims);
        }
      }
    }
    CHECK(tokens.size() == sets);
  }

  TEST_CASE("HMAC-SHA256 matches RFC 4231") {
    // Test case 2: a key shorter than the hash.
    CHECK(hex(detail::hmac_sha256("Jefe", "what do ya want for nothing?")) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // Test case 1: 20 bytes of 0x0b.
    CHECK(hex(detail::hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    // Test case 6: a key longer than the block, which HMAC hashes first.
    CHECK(hex(detail::hmac_sha256(std::string(131, '\xaa'),
                                  "Test Using Larger Than Block-Size Key - Hash Key First")) ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  }

  TEST_CASE("read_token_file trims the secret and explains its errors") {
    test::TempDir dir;
    const std::string path = dir / "cluster.token";
    const std::string how = "head -c 32 /dev/urandom | base64 > " + path;

    SUBCASE("a missing file is NOT_FOUND") {
      auto r = read_token_file(path);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == Errc::NOT_FOUND);
      CHECK(contains(r.error().message, path));
      CHECK(contains(r.error().message, how));
    }
    SUBCASE("surrounding whitespace is trimmed, inner kept") {
      write_file(path, " \t\nsecret with  spaces-0123\r\n\n");
      auto r = read_token_file(path);
      REQUIRE_MESSAGE(r, test::why(r));
      CHECK(*r == "secret with  spaces-0123");
    }
    SUBCASE("the output of the suggested command is accepted") {
      write_file(path, "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=\n");
      auto r = read_token_file(path);
      REQUIRE_MESSAGE(r, test::why(r));
      CHECK(*r == "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=");
    }
    SUBCASE("exactly 16 bytes is enough") {
      write_file(path, "0123456789abcdef\n");
      auto r = read_token_file(path);
      REQUIRE_MESSAGE(r, test::why(r));
      CHECK(*r == "0123456789abcdef");
    }
    SUBCASE("an empty file is INVALID_ARGUMENT") {
      write_file(path, "");
      auto r = read_token_file(path);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == Errc::INVALID_ARGUMENT);
      CHECK(contains(r.error().message, "is empty"));
      CHECK(contains(r.error().message, how));
    }
    SUBCASE("a file of whitespace only is INVALID_ARGUMENT") {
      write_file(path, " \n\t\r\n");
      auto r = read_token_file(path);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == Errc::INVALID_ARGUMENT);
      CHECK(contains(r.error().message, "is empty"));
    }
    SUBCASE("fewer than 16 bytes after trimming is INVALID_ARGUMENT") {
      write_file(path, "  0123456789abcde  \n");
      auto r = read_token_file(path);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == Errc::INVALID_ARGUMENT);
      CHECK(contains(r.error().message, "holds 15 bytes, fewer than 16"));
      CHECK(contains(r.error().message, how));
    }
    SUBCASE("a directory is INVALID_ARGUMENT") {
      std::filesystem::create_directory(path);
      auto r = read_token_file(path);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == Errc::INVALID_ARGUMENT);
      CHECK(contains(r.error().message, "is a directory"));
    }
  }

  TEST_CASE("read_or_create_key_file makes a private key once and reads the same one after") {
    test::TempDir dir;
    const std::string path = dir / "task-token.key";
    auto made = read_or_create_key_file(path);
    REQUIRE_MESSAGE(made, test::why(made));
    CHECK(made->size() == 64);
    CHECK(made->find_first_not_of("0123456789abcdef") == std::string::npos);
    const auto perms = std::filesystem::status(path).permissions();
    CHECK((perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all)) ==
          std::filesystem::perms::none);
    auto again = read_or_create_key_file(path);
    REQUIRE_MESSAGE(again, test::why(again));
    CHECK(*again == *made);
    test::TempDir other;
    auto elsewhere = read_or_create_key_file(other / "task-token.key");
    REQUIRE(elsewhere);
    CHECK(*elsewhere != *made);
    write_file(path, "short");  // a damaged key is reported, not replaced
    auto damaged = read_or_create_key_file(path);
    REQUIRE_FALSE(damaged);
    CHECK(damaged.error().code == Errc::INVALID_ARGUMENT);
  }
}
