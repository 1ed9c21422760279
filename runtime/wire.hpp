// Small conversions between Cap'n Proto readers/builders and troupe's std types, shared by the
// scheduler's and the worker's RPC code.
#pragma once

#include <string>

#include <capnp/blob.h>

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

/// Errc and ErrorCode share their values (schema/common.capnp).
inline void set_error(schema::Error::Builder out, const Error& error) {
  out.setCode(static_cast<schema::ErrorCode>(static_cast<uint16_t>(error.code)));
  out.setMessage(error.message);
}

}  // namespace troupe::runtime
