// The E2B client as the CLI uses it (src/common/e2b_api.h), plus how the CLI
// finds its daemon.
#pragma once

#include "common/e2b_api.h"

namespace abx::cli {

using e2b::ControlPlane;
using e2b::describe_failure;
using e2b::Endpoint;
using e2b::SandboxPlane;
using nlohmann::json;

// The daemon to talk to: env > config > the local daemon (started if needed;
// with start_daemon false, its recorded address, whether it answers or not).
Result<Endpoint> resolve_endpoint(bool start_daemon = true);

// A request to the daemon carrying the endpoint's key (and a JSON body, if any).
http::Request api_request(const Endpoint& endpoint, const std::string& method,
                          const std::string& target, std::string body = {});

// One call to our own API (/abx/v1/…) with the endpoint's key: the JSON
// answer (null when empty), or the daemon's one-line error.
Result<json> call_api(const std::string& method, const std::string& target,
                      const std::string& body = {});

// GET /abx/v1/sandboxes/{id}/{resource}[?query] with the endpoint's key,
// once `id` is known to be a sandbox id: the answer whatever its status (the
// caller words a 404 for what it asked).
Result<http::Response> get_sandbox_resource(const std::string& id, const std::string& resource,
                                            const std::string& query = {});

// E2B's `metadata` query of GET /v2/sandboxes for --metadata K=V pairs ("" for none).
Result<std::string> metadata_query(const std::vector<std::string>& pairs);

}  // namespace abx::cli
