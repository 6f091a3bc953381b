// The top of the request path: plane selection, authentication, and the hand-off
// to the route file of the resource.
#pragma once

#include <memory>
#include <string>

#include "daemon/api_keys.h"
#include "daemon/http_server.h"
#include "daemon/service.h"

namespace abx::daemon {

// X-API-KEY must be one of `keys`; `key_path` is named in the 401 message.
http::Handler make_router(Service& service, std::shared_ptr<ApiKeys> keys, std::string key_path);

}  // namespace abx::daemon
