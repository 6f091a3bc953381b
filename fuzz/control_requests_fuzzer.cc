// The control plane's request parsers (control_requests.cc): the body of
// POST /sandboxes, /timeout and /connect as JSON text, and the same bytes as
// the query string of GET /sandboxes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/control_requests.h"
#include "daemon/url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  using namespace abx::daemon;
  (void)parse_create_sandbox(input, 4);
  (void)parse_timeout_body(input);
  (void)parse_list_query(url::parse_query(input));
  return 0;
}
