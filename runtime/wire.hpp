// Small conversions between Cap'n Proto readers/builders and troupe's std types, shared by the
// scheduler's and the worker's RPC code.
#pragma once

#include <string>

#include <capnp/blob.h>
#include <capnp/message.h>

#include "schema/common.capnp.h"
#include "schema/result.hpp"

namespace troupe::runtime {

inline std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

inline std::string bytes(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

inline capnp::Data::Reader as_data(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

/// The first segment's size for an RPC message of about `text_bytes` of text and data: without
/// a hint capnp allocates (and zeroes) 8 KiB for every message, most of a small message's cost.
/// A message larger than the hint simply grows another segment.
inline capnp::MessageSize message_size(size_t text_bytes, unsigned capabilities = 0) {
  return capnp::MessageSize{32 + text_bytes / 8, capabilities};
}

/// Errc and ErrorCode share their values (schema/common.capnp).
inline void set_error(schema::Error::Builder out, const Error& error) {
  out.setCode(static_cast<schema::ErrorCode>(static_cast<uint16_t>(error.code)));
  out.setMessage(error.message);
}

}  // namespace troupe::runtime
