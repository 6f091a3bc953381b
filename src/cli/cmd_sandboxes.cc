// create, info, set-timeout and kill: the sandbox lifecycle on the control plane.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <tuple>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/create.h"
#include "cli/error_hints.h"
#include "cli/flag_checks.h"
#include "cli/terminal.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

// --cpus, --memory and --disk as the daemon's cpuCount, memoryMB, diskSizeMB.
Status add_resources(const CreateOptions& options, json& request) {
  if (options.cpus > 0) request["cpuCount"] = options.cpus;
  for (auto [text, field, flag] : {std::tuple{&options.memory, "memoryMB", "--memory"},
                                   std::tuple{&options.disk, "diskSizeMB", "--disk"}}) {
    if (text->empty()) continue;
    auto mib = parse_mib(*text, flag);
    if (!mib) return mib.error();
    request[field] = *mib;
  }
  return {};
}

// E2B's sandbox info has metadata and times; the create answer has not:
// they come from a look-up (a second round trip, for --json only).
json with_details(const ControlPlane& control, json sandbox) {
  auto details = control.get_sandbox(sandbox.value("sandboxID", ""));
  if (!details) return sandbox;
  for (const auto& [key, value] : details->items())
    if (!sandbox.contains(key)) sandbox[key] = value;
  return sandbox;
}

}  // namespace

// --volume NAME:/path, E2B's volumeMounts [{name, path}].
Result<json> volume_mounts(const std::vector<std::string>& flags) {
  json out = json::array();
  for (const auto& flag : flags) {
    const size_t colon = flag.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == flag.size() ||
        flag[colon + 1] != '/')
      return Error::with_message("--volume " + flag + ": expected NAME:/path", EINVAL);
    out.push_back({{"name", flag.substr(0, colon)}, {"path", flag.substr(colon + 1)}});
  }
  return out;
}

Result<json> create_sandbox(const Endpoint& endpoint, const CreateOptions& options) {
  auto env = parse_key_values(options.env, "--env");
  if (!env) return env.error();
  auto metadata = parse_key_values(options.metadata, "--metadata");
  if (!metadata) return metadata.error();
  json request = {{"templateID", options.snapshot.empty() ? options.template_id : options.snapshot},
                  {"timeout", options.timeout},
                  {"envVars", *env},
                  {"metadata", *metadata},
                  {"secure", true},
                  {"waitForBuild", false},
                  {"allow_internet_access", !options.network.no_internet}};
  if (json network = network_settings(options.network); !network.empty())
    request["network"] = std::move(network);
  if (Status s = add_resources(options, request); !s) return s.error();
  if (!options.volumes.empty()) {
    auto mounts = volume_mounts(options.volumes);
    if (!mounts) return mounts.error();
    request["volumeMounts"] = std::move(*mounts);
  }
  auto sandbox = ControlPlane(endpoint).create_sandbox(request);
  // First use of a template with a spec: build it here, with its progress shown.
  if (!sandbox && sandbox.error().message().find(kNotBuiltYet) != std::string::npos) {
    if (auto built = build_first(endpoint, options.template_id); !built) return built.error();
    sandbox = ControlPlane(endpoint).create_sandbox(request);
  }
  return sandbox;
}

void add_resource_flags(CLI::App& app, CreateOptions& options) {
  app.add_option("--cpus", options.cpus, "CPUs it may use (default 1)")->check(CLI::Range(1, 1024));
  app.add_option("--memory", options.memory,
                 "Memory limit, e.g. 512m, 2g (MiB without a unit; default 512m)")
      ->check(size_value());
  app.add_option("--disk", options.disk,
                 "Disk limit of its writable layer, e.g. 2g (MiB without a unit; default 1g)")
      ->check(size_value());
  app.add_option("--volume", options.volumes,
                 "Mount your volume NAME read-write at /path: NAME:/path (repeatable; abx volume "
                 "create NAME makes one)");
  add_network_flags(app, options.network);
}

namespace {

Result<int> run_create(const CreateOptions& options) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto sandbox = create_sandbox(*endpoint, options);
  if (!sandbox) return sandbox.error();
  if (options.json) {
    std::cout << with_details(ControlPlane(*endpoint), *sandbox).dump(2) << "\n";
  } else {
    std::cout << sandbox->value("sandboxID", "") << "\n";
  }
  return 0;
}

// One "NAME  value" line per field a person looks for; --json has the rest.
std::vector<std::vector<std::string>> info_rows(const json& sandbox) {
  const json network = sandbox.value("network", json::object());
  std::vector<std::vector<std::string>> rows = {
      {"ID", sandbox.value("sandboxID", "")},
      {"TEMPLATE", sandbox.value("alias", "").empty() ? sandbox.value("templateID", "")
                                                      : sandbox.value("alias", "")},
      {"STATE", sandbox.value("state", "")},
      {"STARTED", rfc3339_to_local(sandbox.value("startedAt", ""))},
      {"ENDS", ends_text(sandbox)},
      {"RESOURCES", std::to_string(sandbox.value("cpuCount", 0)) + " CPU, " +
                        std::to_string(sandbox.value("memoryMB", 0)) + " MiB memory, " +
                        std::to_string(sandbox.value("diskSizeMB", 0)) + " MiB disk"},
      {"METADATA", metadata_text(sandbox.value("metadata", json::object()))},
      {"NETWORK", network_summary(sandbox)}};
  for (const char* field : {"allowOut", "denyOut"})
    if (network.contains(field))
      rows.push_back(
          {std::string("  ") + field, comma_join(network[field].get<std::vector<std::string>>())});
  if (network.contains("rules")) {
    std::vector<std::string> hosts;
    for (const auto& [host, _] : network["rules"].items()) hosts.push_back(host);
    rows.push_back({"  rules", comma_join(hosts)});
  }
  if (network.contains("egressProxy"))
    rows.push_back({"  egressProxy", network["egressProxy"].value("address", "")});
  return rows;
}

// `abx info` without an id: the daemon, and whether pause can free memory.
Result<int> run_daemon_info(bool as_json) {
  auto info = call_api("GET", "/abx/v1/info");
  if (!info) return info.error();
  if (as_json) {
    std::cout << info->dump(2) << "\n";
    return 0;
  }
  const json& checkpoint = (*info)["checkpoint"];
  const std::string checkpoints =
      checkpoint.value("available", false)
          ? "available"
          : "unavailable: " + checkpoint.value("reason", std::string()) + " (pause keeps memory)";
  std::cout << format_table({{"daemon", info->value("version", std::string()) + " (commit " +
                                            info->value("commit", std::string()) + ")"},
                             {"checkpoints", checkpoints}});
  return 0;
}

Result<int> run_info(const std::string& id, bool as_json) {
  if (id.empty()) return run_daemon_info(as_json);
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto sandbox = ControlPlane(*endpoint).get_sandbox(id);
  if (!sandbox) return sandbox.error();
  if (as_json) {
    std::cout << sandbox->dump(2) << "\n";
    return 0;
  }
  std::cout << format_table(info_rows(*sandbox));
  return 0;
}

struct KillOptions {
  std::vector<std::string> ids;
  bool all = false;
  bool yes = false;
  std::vector<std::string> metadata;  // with --all: only those with every K=V
};

Result<std::vector<std::string>> kill_targets(const ControlPlane& control,
                                              const KillOptions& options) {
  if (!options.all) return options.ids;
  auto query = metadata_query(options.metadata);
  if (!query) return query.error();
  auto sandboxes = control.list_sandboxes(*query);
  if (!sandboxes) return sandboxes.error();
  std::vector<std::string> ids;
  for (const auto& sandbox : *sandboxes) ids.push_back(sandbox.value("sandboxID", ""));
  return ids;
}

Result<int> run_kill(const KillOptions& options) {
  if (options.all == !options.ids.empty()) {
    return Error{"name the sandboxes to kill or pass --all (not both)"};
  }
  // Named ids from a script go ahead, as docker rm and e2b's kill do; every
  // sandbox at once is asked for, or needs --yes where nobody can answer.
  if (!options.yes && options.all && !terminal::is_tty(STDIN_FILENO)) {
    return Error{"refusing to kill every sandbox without confirmation; pass --yes"};
  }
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const ControlPlane control(*endpoint);
  auto ids = kill_targets(control, options);
  if (!ids) return ids.error();
  // One question for --all (not one per sandbox), one per id named.
  if (!options.yes && options.all && !ids->empty() &&
      !terminal::confirm("kill all " + std::to_string(ids->size()) + " sandboxes" +
                         (options.metadata.empty() ? "" : " with that metadata") + "?"))
    return 0;
  int exit_code = 0;
  for (const auto& id : *ids) {
    const bool ask = !options.yes && !options.all && terminal::is_tty(STDIN_FILENO);
    if (ask && !terminal::confirm("kill sandbox " + id + "?")) continue;
    if (auto st = control.kill_sandbox(id); !st) {
      std::cerr << "abx: " << with_hint(st.error().message()) << "\n";
      exit_code = 1;
      continue;
    }
    std::cout << "killed " << id << "\n";
  }
  return exit_code;
}

}  // namespace

void add_create(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<CreateOptions>();
  auto* app = root.add_subcommand("create", "Create a sandbox and print its id");
  auto* template_flag = app->add_option("--template", options->template_id, "Template name or id")
                            ->capture_default_str();
  // `abx create base`, as `e2b sandbox create base` and `docker run IMAGE` take it.
  auto* template_arg =
      app->add_option("template", options->template_id, "Template name or id (as --template)")
          ->excludes(template_flag);
  app->add_option("--snapshot", options->snapshot,
                  "Start from a snapshot's files (`abx snapshot list`) instead of a template")
      ->excludes(template_flag)
      ->excludes(template_arg);
  app->add_option("--timeout", options->timeout, "Seconds until the sandbox is killed")
      ->check(sandbox_timeout_seconds())
      ->capture_default_str();
  app->add_option("--env", options->env, "Environment variable K=V for every command")
      ->check(key_value());
  app->add_option("--metadata", options->metadata, "Metadata K=V")->check(key_value());
  add_resource_flags(*app, *options);
  app->add_flag("--json", options->json,
                "Print the whole sandbox as JSON (with metadata, startedAt, endAt)");
  commands.push_back({app, [options] { return run_create(*options); }});
}

void add_info(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto* app = root.add_subcommand(
      "info",
      "Show a sandbox: template, times, resources, network (alias: inspect); without an id, "
      "the daemon and whether it can checkpoint");
  app->alias("inspect");
  app->add_option("id", *id, "Sandbox id (none: the daemon)");
  app->add_flag("--json", *as_json, "Print the whole sandbox as JSON");
  commands.push_back({app, [id, as_json] { return run_info(*id, *as_json); }});
}

void add_set_timeout(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto seconds = std::make_shared<int>(0);
  auto* app = root.add_subcommand(
      "set-timeout",
      "Give a sandbox SECONDS more from now (E2B's set_timeout): abx set-timeout ID S");
  app->add_option("id", *id, "Sandbox id")->required();
  app->add_option("seconds", *seconds, "Seconds from now until the sandbox is killed")
      ->required()
      ->check(sandbox_timeout_seconds());
  commands.push_back({app, [id, seconds]() -> Result<int> {
                        auto endpoint = resolve_endpoint();
                        if (!endpoint) return endpoint.error();
                        if (auto st = ControlPlane(*endpoint).set_timeout(*id, *seconds); !st)
                          return st.error();
                        return 0;
                      }});
}

void add_kill(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<KillOptions>();
  auto* app = root.add_subcommand("kill", "Kill sandboxes (alias: rm)");
  app->alias("rm");
  app->add_option("ids", options->ids, "Sandbox ids");
  auto* all = app->add_flag("--all", options->all, "Kill every sandbox");
  app->add_option("--metadata", options->metadata,
                  "With --all: only the sandboxes whose metadata has K=V (repeatable: every pair)")
      ->check(key_value())
      ->needs(all);
  app->add_flag("-y,-f,--yes,--force", options->yes, "Do not ask for confirmation");
  commands.push_back({app, [options] { return run_kill(*options); }});
}

}  // namespace abx::cli
