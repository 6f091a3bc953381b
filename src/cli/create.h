// abx create's request as other commands make it too (abx run).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/api.h"
#include "cli/commands.h"

namespace abx::cli {

struct CreateOptions {
  std::string template_id = "base";  // as the SDKs default
  std::string snapshot;              // a snapshot id: E2B creates on it as on a template
  int timeout = 300;
  std::vector<std::string> env;
  std::vector<std::string> metadata;
  NetworkFlags network;
  bool json = false;
  int cpus = 0;        // 0: the daemon's default
  std::string memory;  // "512m", "2g" (MiB without a unit); "": the default
  std::string disk;
  std::vector<std::string> volumes;  // NAME:/path, E2B's volumeMounts
};

// --cpus, --memory, --disk, --volume and the network flags.
void add_resource_flags(CLI::App& app, CreateOptions& options);

// Creates the sandbox `options` describe (building its template first on
// first use, with progress): E2B's create answer.
Result<json> create_sandbox(const Endpoint& endpoint, const CreateOptions& options);

}  // namespace abx::cli
