// volume create|list|rm: the team's volumes (E2B's /volumes), mounted with
// `abx create --volume NAME:/path`.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"
#include "common/http_client.h"

namespace abx::cli {
namespace {

struct ListOptions {
  bool json = false;
  bool quiet = false;
};

// The id of the team's volume `name` (the API takes ids).
Result<std::string> volume_id(const std::string& name) {
  auto listed = call_api("GET", "/volumes");
  if (!listed) return listed.error();
  for (const auto& volume : *listed)
    if (volume.value("name", "") == name) return volume.value("volumeID", "");
  return Error{"volume " + name + " not found (see `abx volume list`)"};
}

Result<int> run_list(const ListOptions& options) {
  auto listed = call_api("GET", "/volumes");
  if (!listed) return listed.error();
  if (options.quiet) {
    for (const auto& volume : *listed) std::cout << volume.value("name", "") << "\n";
    return 0;
  }
  json detailed = json::array();
  for (const auto& volume : *listed) {
    auto one = call_api("GET", "/volumes/" + http::url_encode(volume.value("volumeID", "")));
    detailed.push_back(one ? *one : volume);
  }
  if (options.json) {
    for (auto& volume : detailed) volume.erase("token");
    std::cout << detailed.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "ID", "USED", "QUOTA", "MOUNTED BY"}};
  for (const auto& volume : detailed) {
    std::vector<std::string> by;
    for (const auto& id : volume.value("mountedBy", json::array()))
      if (id.is_string()) by.push_back(id.get<std::string>());
    const uint64_t quota = volume.value("quotaBytes", uint64_t{0});
    // hard: the kernel stops writes at the image's size; soft: the daemon counts.
    const std::string limit = volume.value("storage", "") == "image" ? " hard" : " soft";
    rows.push_back({volume.value("name", ""), volume.value("volumeID", ""),
                    format_bytes(volume.value("usedBytes", uint64_t{0})),
                    (quota ? format_bytes(quota) : "none") + limit,
                    by.empty() ? "-" : comma_join(by)});
  }
  std::cout << format_table(rows);
  return 0;
}

Result<int> run_rm(const std::vector<std::string>& names) {
  int exit_code = 0;
  for (const auto& name : names) {
    auto id = volume_id(name);
    auto removed =
        id ? call_api("DELETE", "/volumes/" + http::url_encode(*id)) : Result<json>(id.error());
    if (!removed) {
      std::cerr << "abx: " << removed.error().message() << "\n";
      exit_code = 1;
      continue;
    }
    std::cout << "removed " << name << "\n";
  }
  return exit_code;
}

}  // namespace

void add_volume(CLI::App& root, Commands& commands) {
  auto* group = root.add_subcommand(
      "volume", "Your team's volumes: persistent directories sandboxes mount (E2B's volumes)");
  group->require_subcommand(1);

  auto name = std::make_shared<std::string>();
  auto* create = group->add_subcommand("create", "Make a volume; prints its id");
  create->add_option("name", *name, "Its name: letters, digits, '.', '_', '-'")->required();
  commands.push_back({create, [name]() -> Result<int> {
                        const json body = {{"name", *name}};
                        auto made = call_api("POST", "/volumes", body.dump());
                        if (!made) return made.error();
                        std::cout << made->value("volumeID", "") << "\n";
                        return 0;
                      }});

  auto options = std::make_shared<ListOptions>();
  auto* list = group->add_subcommand("list", "List your volumes (alias: ls)");
  list->alias("ls");
  list->add_flag("--json", options->json, "Print the raw JSON array");
  list->add_flag("-q,--quiet", options->quiet, "Print the names only");
  commands.push_back({list, [options] { return run_list(*options); }});

  auto names = std::make_shared<std::vector<std::string>>();
  auto* rm = group->add_subcommand(
      "rm", "Remove volumes and their files (refused while a sandbox mounts one)");
  rm->add_option("names", *names, "Volume names")->required();
  commands.push_back({rm, [names] { return run_rm(*names); }});
}

}  // namespace abx::cli
