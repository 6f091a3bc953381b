// Helpers every route file shares: bodies in, errors out.
#include "daemon/routes.h"

namespace abx::daemon::routes {

Task<void> respond_error(Exchange& exchange, const Error& error) {
  co_await respond_error(exchange, error_map::http_status(error), error.message());
}

Task<Result<std::string>> read_json_body(Exchange& exchange, size_t limit) {
  bool fits = true;
  std::string body = co_await http::read_body(exchange, limit, &fits);
  if (!fits) {
    co_return Error::with_message("body: larger than " + std::to_string(limit >> 10) + " KiB",
                                  kErrTooLarge);
  }
  co_return body;
}

}  // namespace abx::daemon::routes
