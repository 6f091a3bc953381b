// The top of the request path: plane selection, authentication, and the hand-off
// to the route file of the resource.
#pragma once

#include <string>

#include "daemon/http_server.h"
#include "daemon/service.h"

namespace abx::daemon {

// `api_key` is what X-API-KEY must equal; `key_path` is named in the 401 message.
http::Handler make_router(Service& service, std::string api_key, std::string key_path);

}  // namespace abx::daemon
