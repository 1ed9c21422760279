// The scheduler's AdminService (schema/admin.capnp): the live actors through the roster and
// their probes, diagnoses, histories, task lists and the store. Lives on the RPC thread.
#pragma once

#include <memory>

#include "schema/admin.capnp.h"

namespace troupe::runtime {

struct SchedulerServices;
class ConnectionTicket;

/// The admin service handed to the connection `ticket` stands for (nullptr: none counted).
schema::AdminService::Client make_admin_service(std::shared_ptr<SchedulerServices> services,
                                                std::shared_ptr<ConnectionTicket> ticket = nullptr);

}  // namespace troupe::runtime
