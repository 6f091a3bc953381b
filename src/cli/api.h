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

// The daemon to talk to: env > config > the local daemon (started if needed).
Result<Endpoint> resolve_endpoint();

}  // namespace abx::cli
