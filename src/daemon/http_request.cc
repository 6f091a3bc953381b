#include "daemon/http_request.h"

#include <cctype>

#include "daemon/url.h"

namespace abx::daemon::http {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Request to_request(const boost::beast::http::request<boost::beast::http::buffer_body>& message) {
  Request req;
  req.method = std::string(message.method_string());
  req.target = std::string(message.target());
  std::string raw_query;
  url::split_target(req.target, &req.path, &raw_query);
  req.query = url::parse_query(raw_query);
  for (const auto& field : message) {
    const std::string name = lower(std::string(field.name_string()));
    std::string& value = req.headers[name];
    // Cookie lines join with "; " (RFC 9113 8.2.3), every other field with ", ".
    if (!value.empty()) value += name == "cookie" ? "; " : ", ";
    value += std::string(field.value());
  }
  return req;
}

std::string Request::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string{} : it->second;
}

bool lists_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (lower(item) == token) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool Exchange::wants_upgrade() const {
  return lists_token(request().header("connection"), "upgrade") &&
         !request().header("upgrade").empty();
}

}  // namespace abx::daemon::http
