// abx env e2b: the lines that point the unmodified E2B SDKs at our daemon.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"

namespace abx::cli {
namespace {

// What the SDKs' get_host(port) builds `{port}-{id}.{domain}` from: for a
// daemon on loopback, `localhost:PORT` (names under localhost resolve to
// loopback), else the daemon's own host and port.
std::string e2b_domain(const http::Url& url) {
  const bool loopback = url.host == "127.0.0.1" || url.host == "::1" || url.host == "localhost";
  return loopback ? "localhost" + (url.port.empty() ? "" : ":" + url.port) : url.authority();
}

Result<int> run_e2b(bool with_export) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const std::string url = endpoint->url.str();
  const char* prefix = with_export ? "export " : "";
  std::cout << prefix << "E2B_API_URL=" << url << "\n"
            << prefix << "E2B_SANDBOX_URL=" << url
            << "\n"
            // Volume content goes to https://api.$E2B_DOMAIN unless this is set.
            << prefix << "E2B_VOLUME_API_URL=" << url << "\n"
            << prefix << "E2B_API_KEY=" << endpoint->api_key << "\n"
            << prefix << "E2B_DOMAIN=" << e2b_domain(endpoint->url) << "\n";
  return 0;
}

}  // namespace

void add_env(CLI::App& root, Commands& commands) {
  auto* env = root.add_subcommand("env", "Print environment settings for other clients");
  env->require_subcommand(1);
  auto with_export = std::make_shared<bool>(false);
  auto* e2b = env->add_subcommand(
      "e2b",
      "E2B_API_URL, E2B_SANDBOX_URL, E2B_VOLUME_API_URL, E2B_API_KEY and E2B_DOMAIN for the E2B "
      "SDKs (eval with --export)");
  e2b->add_flag("--export", *with_export, "Prefix each line with `export `");
  commands.push_back({e2b, [with_export] { return run_e2b(*with_export); }});
}

}  // namespace abx::cli
