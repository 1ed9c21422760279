// The connection of a client command to its scheduler: where it is and the cluster's token,
// from the command's connection options, the environment or the defaults.
#pragma once

#include <memory>

#include "runtime/client/admin_client.hpp"
#include "runtime/client/gateway_client.hpp"
#include "tools/troupe/args.hpp"

namespace troupe::cli {

/// A connection to the scheduler the options name: --address, else --config's scheduler node,
/// else $TROUPE_ADDRESS, else 127.0.0.1:7700; with --token-file's token, else the token file of
/// --config's cluster, else none.
Result<std::unique_ptr<client::GatewayClient>> connect(const Args& args);

/// The same scheduler's admin interface.
Result<std::unique_ptr<client::AdminClient>> connect_admin(const Args& args);

}  // namespace troupe::cli
