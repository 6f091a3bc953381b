// Each abx subcommand registers its parser node and the code that runs when
// the user picked it; cli.cc parses once and runs the chosen one.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "common/e2b_api.h"
#include "common/error.h"

namespace abx::cli {

struct Command {
  CLI::App* app;
  std::function<Result<int>()> run;  // the exit code, or the error to print
};
using Commands = std::vector<Command>;

void add_create(CLI::App& root, Commands& commands);
void add_list(CLI::App& root, Commands& commands);
void add_info(CLI::App& root, Commands& commands);    // info ID
void add_ps(CLI::App& root, Commands& commands);      // ps ID: the sandbox's processes
void add_diff(CLI::App& root, Commands& commands);    // diff ID: what it changed
void add_events(CLI::App& root, Commands& commands);  // events ID: its flight record
void add_logs(CLI::App& root, Commands& commands);    // logs ID [--follow]
void add_stats(CLI::App& root, Commands& commands);   // stats|metrics ID [--watch]
void add_shell(CLI::App& root, Commands& commands);   // shell|connect ID
void add_help(CLI::App& root, Commands& commands);    // help [CMD...]
void add_kill(CLI::App& root, Commands& commands);
void add_set_timeout(CLI::App& root, Commands& commands);  // set-timeout ID SECONDS
void add_pause(CLI::App& root, Commands& commands);        // pause ID, resume ID
void add_stop(CLI::App& root, Commands& commands);         // stop ID [--pause|--kill]
void add_volume(CLI::App& root, Commands& commands);       // volume create|list|rm
void add_snapshot(CLI::App& root, Commands& commands);     // snapshot create|list|rm|to-template
void add_fork(CLI::App& root, Commands& commands);         // fork ID [-n N]
void add_exec(CLI::App& root, Commands& commands);
// run [TEMPLATE] -- CMD; `args`: the raw arguments (where `--` was), kept by main.
void add_run(CLI::App& root, Commands& commands, const std::vector<std::string>& args);
void add_transfers(CLI::App& root, Commands& commands);  // upload, download
void add_config(CLI::App& root, Commands& commands);
void add_daemon(CLI::App& root, Commands& commands);  // daemon start|stop|status
void add_serve(CLI::App& root, Commands& commands, const std::vector<std::string>& args);
void add_mcp(CLI::App& root, Commands& commands);       // mcp serve|install|uninstall
void add_template(CLI::App& root, Commands& commands);  // template build|list|inspect|rm
void add_registry(CLI::App& root, Commands& commands);  // registry login|logout
// template push|pull|search, under `template_group`.
void add_template_registry(CLI::App& template_group, Commands& commands);
// Sends `request` and follows its NDJSON progress stream (template build,
// import, push, pull) to the outcome: "<verb> NAME (size)".
Result<int> follow_template_job(const e2b::Endpoint& endpoint, const http::Request& request,
                                const char* verb);

// Builds template `name` from its spec with a progress display, the outcome
// line on stderr (a first `abx create --template base`, whose stdout is the id).
Status build_first(const e2b::Endpoint& endpoint, const std::string& name);

// What the daemon says when a create would have to build its template first.
inline constexpr const char* kNotBuiltYet = "is not built yet";
void add_env(CLI::App& root, Commands& commands);        // env e2b
void add_keys(CLI::App& root, Commands& commands);       // keys create|list|revoke
void add_quota(CLI::App& root, Commands& commands);      // quota [set]
void add_usage(CLI::App& root, Commands& commands);      // usage
void add_network(CLI::App& root, Commands& commands);    // network show|update
void add_secrets(CLI::App& root, Commands& commands);    // secrets set|list|rm
void add_version(CLI::App& root, Commands& commands);    // version (client and daemon)
void add_dashboard(CLI::App& root, Commands& commands);  // dashboard [--no-open]
// completion bash|zsh|fish: a script made from `root`'s command tree.
void add_completion(CLI::App& root, Commands& commands);

// --no-internet, --allow-out, --deny-out, --header: on create (and run) and
// on network update.
struct NetworkFlags {
  bool no_internet = false;
  std::vector<std::string> allow_out;
  std::vector<std::string> deny_out;
  std::vector<std::string> headers;  // HOST:NAME=VALUE
};
void add_network_flags(CLI::App& app, NetworkFlags& flags);
// The create or network update body's `network` (E2B's shape: allowOut,
// denyOut, rules of headers by host); empty when no flag asked for any.
nlohmann::json network_settings(const NetworkFlags& flags);
// A sandbox's egress policy in a few words ("internet", "none", "allow 2, deny all").
std::string network_summary(const nlohmann::json& sandbox);
// A sandbox's metadata as "k=v, k2=v2".
std::string metadata_text(const nlohmann::json& metadata);

// `abx exec -it ID` with no command: a login shell (bash, else sh) in a
// terminal, as `user` ("" = the template's user).
Result<int> run_shell(const std::string& id, const std::string& user);

}  // namespace abx::cli
