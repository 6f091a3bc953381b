// network show|update: a sandbox's egress policy (E2B's network settings).
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"

namespace abx::cli {
namespace {

struct UpdateOptions {
  std::string id;
  NetworkFlags network;
};

Result<int> run_show(const std::string& id) {
  auto sandbox = call_api("GET", "/sandboxes/" + id);
  if (!sandbox) return sandbox.error();
  const json out = {{"allowInternetAccess", sandbox->value("allowInternetAccess", true)},
                    {"network", sandbox->value("network", json::object())}};
  std::cout << out.dump(2) << "\n";
  return 0;
}

// E2B's update replaces every egress field: what is not given here is cleared.
Result<int> run_update(const UpdateOptions& options) {
  const NetworkFlags& flags = options.network;
  json body = network_settings(flags);
  body["allow_internet_access"] = !flags.no_internet;
  if (auto done = call_api("PUT", "/sandboxes/" + options.id + "/network", body.dump()); !done)
    return done.error();
  return run_show(options.id);
}

}  // namespace

std::string network_summary(const json& sandbox) {
  const json network = sandbox.value("network", json::object());
  const size_t allowed = network.value("allowOut", json::array()).size();
  const json denied = network.value("denyOut", json::array());
  const bool deny_all = !sandbox.value("allowInternetAccess", true) ||
                        std::find(denied.begin(), denied.end(), "0.0.0.0/0") != denied.end();
  std::string out;
  if (deny_all && allowed == 0) {
    out = "none";
  } else if (allowed == 0 && denied.empty()) {
    out = "internet";
  } else {
    if (allowed > 0) out = "allow " + std::to_string(allowed);
    if (deny_all || !denied.empty())
      out += (out.empty() ? "" : ", ") +
             (deny_all ? std::string("deny all") : "deny " + std::to_string(denied.size()));
  }
  if (network.contains("rules")) out += ", rules";
  if (network.contains("egressProxy")) out += ", via proxy";
  return out;
}

// HOST:NAME=VALUE; "" when it is one, else why not.
std::string header_rule_problem(const std::string& text) {
  const size_t colon = text.find(':');
  const size_t equals = colon == std::string::npos ? colon : text.find('=', colon);
  if (colon == 0 || colon == std::string::npos || equals == std::string::npos ||
      equals == colon + 1)
    return "--header: HOST:NAME=VALUE, e.g. api.openai.com:Authorization='Bearer "
           "abx-secret:OPENAI_KEY', not '" +
           text + "'";
  return {};
}

json network_settings(const NetworkFlags& flags) {
  json network = json::object();
  if (!flags.allow_out.empty()) network["allowOut"] = flags.allow_out;
  if (!flags.deny_out.empty()) network["denyOut"] = flags.deny_out;
  json headers_by_host = json::object();
  for (const std::string& rule : flags.headers) {
    const size_t colon = rule.find(':');
    const size_t equals = rule.find('=', colon);
    headers_by_host[rule.substr(0, colon)][rule.substr(colon + 1, equals - colon - 1)] =
        rule.substr(equals + 1);
  }
  if (!headers_by_host.empty()) {
    json rules = json::object();
    for (const auto& [host, headers] : headers_by_host.items())
      rules[host] = json::array({{{"transform", {{"headers", headers}}}}});
    network["rules"] = std::move(rules);
  }
  return network;
}

void add_network_flags(CLI::App& app, NetworkFlags& flags) {
  app.add_flag("--no-internet", flags.no_internet,
               "No egress at all (allow_internet_access=false)");
  app.add_option(
      "--allow-out", flags.allow_out,
      "Allow egress to an IP, CIDR, host or *.domain (repeatable; wins over --deny-out)");
  app.add_option("--deny-out", flags.deny_out,
                 "Deny egress to an IP, CIDR, host or *.domain (repeatable; 0.0.0.0/0: all)");
  app.add_option("--header", flags.headers,
                 "HOST:NAME=VALUE: the egress proxy sets header NAME on requests to HOST (or "
                 "*.domain); a VALUE with abx-secret:SECRET is that stored secret (repeatable)")
      ->check(value_check(header_rule_problem, "HOST:NAME=VALUE"));
}

void add_network(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand("network", "Show or replace a sandbox's egress policy");
  app->require_subcommand(1);
  auto show_id = std::make_shared<std::string>();
  auto* show = app->add_subcommand("show", "Print a sandbox's network settings as JSON");
  show->add_option("id", *show_id, "Sandbox id")->required();
  commands.push_back({show, [show_id] { return run_show(*show_id); }});

  auto options = std::make_shared<UpdateOptions>();
  auto* update = app->add_subcommand(
      "update", "Replace a sandbox's egress policy; live connections it forbids are cut");
  update->add_option("id", options->id, "Sandbox id")->required();
  add_network_flags(*update, options->network);
  commands.push_back({update, [options] { return run_update(*options); }});
}

}  // namespace abx::cli
