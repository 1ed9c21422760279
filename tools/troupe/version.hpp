// Build facts printed by `troupe version` and in every benchmark report.
#pragma once

namespace troupe::cli {

/// The git revision the binary was built from ("unknown" outside a checkout).
const char* git_revision();
/// Meson's build type: "debug", "release", …
const char* build_type();

}  // namespace troupe::cli
