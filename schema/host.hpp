// What the rest of troupe needs to know about a host name as written: whether only this
// machine can reach it. Std-only (POSIX's inet_pton).
#pragma once

#include <string_view>

namespace troupe {

/// Whether `host` can be reached only from this machine: "localhost", an IPv4 address in
/// 127.0.0.0/8 or "::1", parsed as addresses (so a name such as "127.example" is not one).
/// Plaintext is allowed only there: nobody on the network sees that traffic.
bool is_loopback_host(std::string_view host);

}  // namespace troupe
