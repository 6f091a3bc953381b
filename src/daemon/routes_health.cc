#include "daemon/routes.h"

namespace abx::daemon::routes {

Task<void> control_health(Exchange& exchange) { co_await exchange.respond(204, "", ""); }

}  // namespace abx::daemon::routes
