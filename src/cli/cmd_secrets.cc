// secrets set|list|rm: values the egress proxy puts into requests for
// network.rules headers written "abx-secret:NAME"; a sandbox never sees them.
#include <iostream>
#include <iterator>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

// The value comes on stdin (never argv, which other users can read in ps);
// one trailing newline, as `echo` adds, is not part of it.
struct SetOptions {
  std::string name;
  std::vector<std::string> hosts;
  std::vector<std::string> headers;  // none: Authorization only (the daemon's default)
};

Result<int> run_set(const SetOptions& options) {
  const std::string& name = options.name;
  std::string value{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (!value.empty() && value.back() == '\n') value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
  if (value.empty()) return Error{"no value on stdin: e.g. `abx secrets set " + name + " < file`"};
  json body = {{"value", value}, {"hosts", options.hosts}};
  if (!options.headers.empty()) body["headers"] = options.headers;
  if (auto done = call_api("PUT", "/abx/v1/secrets/" + name, body.dump()); !done)
    return done.error();
  const std::string headers =
      options.headers.empty() ? "Authorization" : comma_join(options.headers);
  std::cout << "stored " << name << " for " << comma_join(options.hosts) << " in " << headers
            << "; use it as a header value \"abx-secret:" << name << "\" in network.rules\n";
  return 0;
}

Result<int> run_list() {
  auto listed = call_api("GET", "/abx/v1/secrets");
  if (!listed) return listed.error();
  std::vector<std::vector<std::string>> rows = {{"NAME", "SENT ONLY TO", "IN HEADERS"}};
  const json hosts = listed->value("hosts", json::object());
  const json headers = listed->value("headers", json::object());
  const auto strings = [](const json& list) {
    std::vector<std::string> out;
    for (const auto& item : list)
      if (item.is_string()) out.push_back(item.get<std::string>());
    return out;
  };
  for (const auto& entry : listed->value("secrets", json::array())) {
    const std::string name = entry.get<std::string>();
    const std::vector<std::string> to = strings(hosts.value(name, json::array()));
    const std::vector<std::string> in = strings(headers.value(name, json::array()));
    rows.push_back({name, to.empty() ? "(nowhere: set it again with --host)" : comma_join(to),
                    in.empty() ? "Authorization" : comma_join(in)});
  }
  std::cout << format_table(rows);
  return 0;
}

Result<int> run_remove(const std::string& name) {
  if (auto done = call_api("DELETE", "/abx/v1/secrets/" + name); !done) return done.error();
  std::cout << "removed " << name << "\n";
  return 0;
}

}  // namespace

void add_secrets(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand(
      "secrets", "Secrets the egress proxy sends in headers; sandboxes never see them");
  app->require_subcommand(1);
  auto set_options = std::make_shared<SetOptions>();
  auto* set = app->add_subcommand("set", "Store a secret read from stdin");
  set->add_option("name", set_options->name, "Secret name, e.g. OPENAI_KEY")->required();
  set->add_option("--host", set_options->hosts,
                  "A host (or *.domain) the secret may be sent to; repeatable; it is sent "
                  "nowhere else")
      ->required();
  set->add_option("--header", set_options->headers,
                  "A header the secret may be sent in; repeatable; default Authorization only "
                  "(a rule that puts it in another header is refused)");
  commands.push_back({set, [set_options] { return run_set(*set_options); }});
  auto* list = app->add_subcommand("list", "List the names of your team's secrets");
  commands.push_back({list, [] { return run_list(); }});
  auto rm_name = std::make_shared<std::string>();
  auto* rm = app->add_subcommand("rm", "Remove a secret");
  rm->add_option("name", *rm_name, "Secret name")->required();
  commands.push_back({rm, [rm_name] { return run_remove(*rm_name); }});
}

}  // namespace abx::cli
