// Graphviz's `dot` as a child process: dot text in, a rendering (SVG) out.
#pragma once

#include <string>

#include "schema/result.hpp"

namespace troupe::cli {

/// `dot_text` rendered by `dot -T<format>` (looked up in PATH): what it printed. NOT_FOUND
/// saying how to install Graphviz when there is no `dot`; INVALID_ARGUMENT with what dot said
/// when it refuses the input; UNAVAILABLE when it cannot be run.
Result<std::string> render_with_dot(const std::string& dot_text, const std::string& format);

}  // namespace troupe::cli
