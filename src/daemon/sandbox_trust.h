// The CAs a sandbox trusts beyond its image's own: the egress proxy's, for
// sandboxes whose HTTPS to some hosts the proxy terminates (network.rules),
// and an admin's extra bundle (a corporate CA; ABX_SANDBOX_EXTRA_CA_FILE),
// trusted by every sandbox with a network. Appended to the system bundle,
// kept as a file of their own for Node, and named by the environment
// variables Python, requests and Node read.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::daemon {

// The certificates of an admin's CA bundle, re-encoded as PEM so that nothing
// else in the file (a private key put there by mistake) reaches a sandbox. A
// file that cannot be read or holds no certificate is an error saying so.
Result<std::string> load_extra_ca(const std::filesystem::path& file);

// Each PEM text in `pems` is appended to the sandbox's bundle unless it holds
// it already (idempotent), and all of them make up the file NODE_EXTRA_CA_CERTS
// names.
Status install_trusted_cas(const runtime::Sandbox& sandbox, const std::vector<std::string>& pems);

// SSL_CERT_FILE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS; set on the sandbox
// unless its creator set them.
std::map<std::string, std::string> egress_ca_env();

}  // namespace abx::daemon
