// The one place an Error becomes a status: an HTTP status for the control
// plane, /files and the interpreter, a Connect code for envd's RPCs. Every
// route answers a given errno (or kErr* kind) the same way.
#pragma once

#include <string>

#include "common/error.h"

namespace abx::daemon::error_map {

// HTTP status for an error's errnum (500 for anything unlisted).
int http_status(int errnum);
inline int http_status(const Error& error) { return http_status(error.errnum); }

// Connect code ("not_found", "already_exists", …) for an error's errnum.
std::string connect_code(int errnum);
inline std::string connect_code(const Error& error) { return connect_code(error.errnum); }

// The HTTP status a unary Connect error with `code` is sent with.
int http_status_for_connect_code(const std::string& code);

}  // namespace abx::daemon::error_map
