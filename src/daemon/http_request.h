// A parsed Beast request turned into what the routes see (http::Request),
// apart from http_server.cc so the HTTP fuzz target runs this very code.
#pragma once

#include <boost/beast/http.hpp>
#include <string>
#include <string_view>

#include "daemon/http_exchange.h"

namespace abx::daemon::http {

std::string lower(std::string_view text);

// A comma-separated header value (`Connection: keep-alive, Upgrade`) names
// `token` (lower case), whatever its case and spacing.
bool lists_token(std::string_view value, std::string_view token);

// Method, target, percent-decoded path and query, headers with lower-cased
// names (a repeated header's values joined with ", ").
Request to_request(const boost::beast::http::request<boost::beast::http::buffer_body>& message);

}  // namespace abx::daemon::http
