// Text for a Result in assertion messages. Safe on success: doctest evaluates messages even
// for passing assertions when run with -s.
#pragma once

#include <string>

#include "schema/result.hpp"

namespace troupe::test {

template <class T>
std::string why(const Result<T>& result) {
  return result ? std::string("ok") : result.error().to_string();
}

}  // namespace troupe::test
