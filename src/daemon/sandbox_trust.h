// The egress proxy's CA in a sandbox's trust store, for sandboxes whose
// HTTPS to some hosts the proxy terminates (network.rules): appended to the
// system bundle, kept as a file of its own for Node, and named by the
// environment variables Python, requests and Node read.
#pragma once

#include <map>
#include <string>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::daemon {

// Idempotent: a bundle that holds the CA already is left as it is.
Status install_egress_ca(const runtime::Sandbox& sandbox, const std::string& ca_pem);

// SSL_CERT_FILE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS; set on the sandbox
// unless its creator set them.
std::map<std::string, std::string> egress_ca_env();

}  // namespace abx::daemon
