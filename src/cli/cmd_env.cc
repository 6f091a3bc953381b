// abx env e2b: the three lines that point the unmodified E2B SDKs at our daemon.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"

namespace abx::cli {
namespace {

Result<int> run_e2b(bool with_export) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const std::string url = endpoint->url.str();
  const char* prefix = with_export ? "export " : "";
  std::cout << prefix << "E2B_API_URL=" << url << "\n"
            << prefix << "E2B_SANDBOX_URL=" << url << "\n"
            << prefix << "E2B_API_KEY=" << endpoint->api_key << "\n";
  return 0;
}

}  // namespace

void add_env(CLI::App& root, Commands& commands) {
  auto* env = root.add_subcommand("env", "Print environment settings for other clients");
  env->require_subcommand(1);
  auto with_export = std::make_shared<bool>(false);
  auto* e2b = env->add_subcommand(
      "e2b", "E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY for the E2B SDKs (eval with --export)");
  e2b->add_flag("--export", *with_export, "Prefix each line with `export `");
  commands.push_back({e2b, [with_export] { return run_e2b(*with_export); }});
}

}  // namespace abx::cli
