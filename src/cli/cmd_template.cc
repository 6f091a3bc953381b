// abx template build|list|inspect|rm: templates through the daemon's own
// API (/abx/v1/templates).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

constexpr const char* kPrefix = "/abx/v1/templates";

struct BuildOptions {
  std::string target;  // a spec name (base) or, later, a dir with a Sandboxfile
  std::string file;
  std::string name;
  bool no_cache = false;
  bool no_network = false;
};

struct RemoveOptions {
  std::string name;
  bool force = false;
};

http::Request api_request(const Endpoint& endpoint, const std::string& method,
                          const std::string& target, std::string body = {}) {
  http::Request request{method, target, {{"X-API-KEY", endpoint.api_key}}, std::move(body)};
  if (!request.body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  return request;
}

Result<json> call_json(const std::string& method, const std::string& target) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto response = http::Client(endpoint->url).send(api_request(*endpoint, method, target));
  if (!response) return response.error();
  if (response->status >= 300) return Error{describe_failure(*response)};
  if (response->body.empty()) return json{};
  return json::parse(response->body, nullptr, false);
}

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::string created_text(const json& info) {
  const int64_t ms = info.value("createdMs", int64_t{0});
  return ms ? format_local_time(ms / 1000) : "-";
}

Result<int> run_list(bool as_json) {
  auto listed = call_json("GET", kPrefix);
  if (!listed) return listed.error();
  if (as_json) {
    std::cout << (*listed)["templates"].dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "SIZE", "CREATED", "SOURCE"}};
  for (const auto& info : (*listed)["templates"]) {
    const uint64_t size = info.value("sizeBytes", uint64_t{0});
    rows.push_back({info.value("name", ""), size ? mib(size) : "-", created_text(info),
                    info.value("source", "")});
  }
  std::cout << format_table(rows);
  return 0;
}

Result<int> run_inspect(const std::string& name) {
  auto info = call_json("GET", std::string(kPrefix) + "/" + http::url_encode(name));
  if (!info) return info.error();
  std::cout << info->dump(2) << "\n";
  return 0;
}

Result<int> run_remove(const RemoveOptions& options) {
  const std::string target = std::string(kPrefix) + "/" + http::url_encode(options.name) +
                             (options.force ? "?force=true" : "");
  auto removed = call_json("DELETE", target);
  if (!removed) return removed.error();
  std::cout << "removed " << options.name << "\n";
  return 0;
}

// One NDJSON line of the build stream: progress goes to stderr, the outcome
// decides the exit code.
std::optional<Result<int>> show_build_line(const std::string& line) {
  const json event = json::parse(line, nullptr, false);
  if (!event.is_object()) return std::nullopt;
  if (event.contains("progress")) {
    std::cerr << "  " << event["progress"].get<std::string>() << "\n";
    return std::nullopt;
  }
  if (event.contains("error")) {
    return Result<int>(Error{"template build failed: " + event["error"].value("message", "")});
  }
  const json& done = event["done"];
  std::cout << "built " << done.value("name", "") << " ("
            << mib(done.value("sizeBytes", uint64_t{0})) << ")\n";
  return Result<int>(0);
}

Result<int> follow_build(http::ResponseStream& stream) {
  std::string pending;
  while (!stream.done()) {
    auto piece = stream.read_some();
    if (!piece) return piece.error();
    pending += *piece;
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      if (auto outcome = show_build_line(line)) return std::move(*outcome);
    }
  }
  return Error{"the daemon ended the build stream without a result; see its log"};
}

Result<int> run_build(const BuildOptions& options) {
  if (!options.file.empty() || options.target.find('/') != std::string::npos ||
      options.target == ".") {
    return Error{
        "Sandboxfile builds are not available yet; build a spec from templates/ "
        "(abx template build base)"};
  }
  const std::string name = options.name.empty() ? options.target : options.name;
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const json body = {{"noCache", options.no_cache}, {"allowNetwork", !options.no_network}};
  const std::string target = std::string(kPrefix) + "/" + http::url_encode(name) + "/build";
  auto stream =
      http::Client(endpoint->url).open(api_request(*endpoint, "POST", target, body.dump()));
  if (!stream) return stream.error();
  if ((*stream)->status() != 200) {
    auto rest = (*stream)->read_all();
    http::Response response{(*stream)->status(), (*stream)->headers(), rest ? *rest : ""};
    return Error{describe_failure(response)};
  }
  std::cerr << "building " << name << "\n";
  return follow_build(**stream);
}

void add_build(CLI::App& parent, Commands& commands) {
  auto options = std::make_shared<BuildOptions>();
  auto* app = parent.add_subcommand("build", "Build a template (e.g. base) and show its progress");
  app->add_option("target", options->target, "Template spec name (base, code-interpreter-v1)");
  app->add_option("-f,--file", options->file, "A Sandboxfile to build");
  app->add_option("--name", options->name, "Name of the template to build");
  app->add_flag("--no-cache", options->no_cache, "Rebuild every step, ignoring the cache");
  app->add_flag("--no-network", options->no_network, "Refuse network access to build steps");
  commands.push_back({app, [options] { return run_build(*options); }});
}

}  // namespace

void add_template(CLI::App& root, Commands& commands) {
  auto* group = root.add_subcommand("template", "Build, list, inspect and remove templates");
  group->require_subcommand(1);
  add_build(*group, commands);

  auto as_json = std::make_shared<bool>(false);
  auto* list = group->add_subcommand("list", "List templates (name, size, created, source)");
  list->add_flag("--json", *as_json, "Print the raw JSON array");
  commands.push_back({list, [as_json] { return run_list(*as_json); }});

  auto name = std::make_shared<std::string>();
  auto* inspect = group->add_subcommand("inspect", "Show one template as JSON");
  inspect->add_option("name", *name, "Template name")->required();
  commands.push_back({inspect, [name] { return run_inspect(*name); }});

  auto remove = std::make_shared<RemoveOptions>();
  auto* rm = group->add_subcommand("rm", "Remove a stored template");
  rm->add_option("name", remove->name, "Template name")->required();
  rm->add_flag("--force", remove->force, "Remove it even while sandboxes use it");
  commands.push_back({rm, [remove] { return run_remove(*remove); }});
}

}  // namespace abx::cli
