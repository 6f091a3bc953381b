// snapshot create|list|rm|to-template and fork: E2B's snapshots of a
// sandbox's files, and new sandboxes started on them.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/text.h"
#include "common/http_client.h"

namespace abx::cli {
namespace {

struct SnapshotListOptions {
  std::string sandbox_id;
  bool json = false;
  bool quiet = false;
};

std::string snapshot_names(const json& snapshot) {
  std::vector<std::string> names;
  for (const auto& name : snapshot.value("names", json::array()))
    if (name.is_string()) names.push_back(name.get<std::string>());
  return names.empty() ? "-" : comma_join(names);
}

Result<int> run_snapshot_list(const SnapshotListOptions& options) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto listed = ControlPlane(*endpoint).list_snapshots(options.sandbox_id);
  if (!listed) return listed.error();
  if (options.json) {
    std::cout << listed->dump(2) << "\n";
    return 0;
  }
  if (options.quiet) {
    for (const auto& snapshot : *listed) std::cout << snapshot.value("snapshotID", "") << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"SNAPSHOT", "NAME", "SANDBOX", "TEMPLATE", "SIZE", "CREATED"}};
  for (const auto& snapshot : *listed) {
    rows.push_back({snapshot.value("snapshotID", ""), snapshot_names(snapshot),
                    snapshot.value("sandboxID", ""), snapshot.value("templateID", ""),
                    format_bytes(snapshot.value("sizeBytes", uint64_t{0})),
                    rfc3339_to_local(snapshot.value("createdAt", ""))});
  }
  std::cout << format_table(rows);
  return 0;
}

Result<int> run_snapshot_rm(const std::vector<std::string>& ids) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const ControlPlane control(*endpoint);
  int exit_code = 0;
  for (const auto& id : ids) {
    auto removed = control.delete_snapshot(id);
    if (!removed || !*removed) {
      std::cerr << "abx: "
                << (removed ? "snapshot " + id + " not found (see `abx snapshot list`)"
                            : removed.error().message())
                << "\n";
      exit_code = 1;
      continue;
    }
    std::cout << "removed " << id << "\n";
  }
  return exit_code;
}

void add_snapshot_create(CLI::App& group, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  auto* app = group.add_subcommand(
      "create", "Snapshot a sandbox's files; it goes on running. Prints the snapshot id");
  app->add_option("id", *id, "Sandbox id")->required();
  app->add_option("--name", *name, "A name for the snapshot (shown by list)");
  commands.push_back({app, [id, name]() -> Result<int> {
                        auto endpoint = resolve_endpoint();
                        if (!endpoint) return endpoint.error();
                        auto made = ControlPlane(*endpoint).create_snapshot(*id, *name);
                        if (!made) return made.error();
                        std::cout << made->value("snapshotID", "") << "\n";
                        return 0;
                      }});
}

void add_snapshot_list(CLI::App& group, Commands& commands) {
  auto options = std::make_shared<SnapshotListOptions>();
  auto* app = group.add_subcommand("list", "List your snapshots (alias: ls)");
  app->alias("ls");
  app->add_option("--sandbox", options->sandbox_id, "Only the snapshots of this sandbox");
  app->add_flag("--json", options->json, "Print the raw JSON array");
  app->add_flag("-q,--quiet", options->quiet, "Print the snapshot ids only");
  commands.push_back({app, [options] { return run_snapshot_list(*options); }});
}

void add_snapshot_rm(CLI::App& group, Commands& commands) {
  auto ids = std::make_shared<std::vector<std::string>>();
  auto* app = group.add_subcommand("rm", "Remove snapshots and free their disk");
  app->add_option("ids", *ids, "Snapshot ids")->required();
  commands.push_back({app, [ids] { return run_snapshot_rm(*ids); }});
}

void add_snapshot_to_template(CLI::App& group, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  auto* app = group.add_subcommand(
      "to-template", "Make a template of a snapshot's files: abx snapshot to-template SNAP NAME");
  app->add_option("id", *id, "Snapshot id")->required();
  app->add_option("name", *name, "Name of the new template")->required();
  commands.push_back({app, [id, name]() -> Result<int> {
                        auto endpoint = resolve_endpoint();
                        if (!endpoint) return endpoint.error();
                        const json body = {{"snapshotID", *id}};
                        const std::string target =
                            "/abx/v1/templates/" + http::url_encode(*name) + "/snapshot";
                        return follow_template_job(
                            *endpoint, api_request(*endpoint, "POST", target, body.dump()), "made");
                      }});
}

// Prints each new sandbox's id (stdout) or why it failed (stderr); exit
// code 1 if any failed.
int print_forks(const json& forks) {
  int exit_code = 0;
  for (const auto& fork : forks) {
    if (fork.contains("sandbox")) {
      std::cout << fork["sandbox"].value("sandboxID", "") << "\n";
      continue;
    }
    std::cerr << "abx: a fork failed: "
              << fork.value("error", json::object()).value("message", "unknown error") << "\n";
    exit_code = 1;
  }
  return exit_code;
}

}  // namespace

void add_snapshot(CLI::App& root, Commands& commands) {
  auto* group = root.add_subcommand("snapshot", "Snapshots of sandboxes' files (E2B's snapshots)");
  group->require_subcommand(1);
  add_snapshot_create(*group, commands);
  add_snapshot_list(*group, commands);
  add_snapshot_rm(*group, commands);
  add_snapshot_to_template(*group, commands);
}

void add_fork(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto count = std::make_shared<int>(1);
  auto seconds = std::make_shared<int>(0);
  auto* app = root.add_subcommand(
      "fork", "Start sandboxes on a copy of a running sandbox's files; prints their ids");
  app->add_option("id", *id, "Sandbox id")->required();
  app->add_option("-n,--count", *count, "How many (1 to 20)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  app->add_option("--timeout", *seconds, "Seconds each lives (default: the daemon's)")
      ->check(sandbox_timeout_seconds());
  commands.push_back({app, [id, count, seconds]() -> Result<int> {
                        auto endpoint = resolve_endpoint();
                        if (!endpoint) return endpoint.error();
                        auto forks = ControlPlane(*endpoint).fork_sandbox(*id, *count, *seconds);
                        if (!forks) return forks.error();
                        return print_forks(*forks);
                      }});
}

}  // namespace abx::cli
