// abx registry login|logout, and abx template push|pull|search: templates
// through OCI registries. As Docker does, the CLI keeps the credentials (in
// Docker's config.json format, <config dir>/registry-auth.json, mode 0600) and
// sends the daemon only those for the registry a request names.
#include <termios.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/registry_auth.h"
#include "common/base64.h"

namespace abx::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTemplatesApi = "/abx/v1/templates";

struct LoginOptions {
  std::string registry;
  std::string username;
  std::string password;
  std::string token;
  bool password_stdin = false;
};

struct RegistryTransfer {
  std::string name;
  std::string ref;
  bool insecure = false;
};

// "https://host:5000/" or "host:5000" → "host:5000": the key of the auths map.
std::string registry_host(std::string text) {
  for (const char* scheme : {"https://", "http://"})
    if (text.starts_with(scheme)) text.erase(0, std::string(scheme).size());
  if (const size_t slash = text.find('/'); slash != std::string::npos) text.resize(slash);
  return text;
}

std::string ref_host(const std::string& ref) { return ref.substr(0, ref.find('/')); }

// A line from the terminal without echoing it (a password).
std::string read_hidden(const std::string& prompt) {
  std::cerr << prompt << std::flush;
  termios saved{};
  const bool tty = ::tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  }
  std::string line;
  std::getline(std::cin, line);
  if (tty) {
    ::tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    std::cerr << "\n";
  }
  return line;
}

std::string read_stdin_secret() {
  std::string all((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  while (!all.empty() && (all.back() == '\n' || all.back() == '\r')) all.pop_back();
  return all;
}

Result<int> run_login(LoginOptions options) {
  const std::string host = registry_host(options.registry);
  if (host.empty()) return Error{"give the registry: abx registry login HOST[:PORT]"};
  json entry;
  if (!options.token.empty()) {
    if (!options.password.empty() || options.password_stdin)
      return Error{"give either --token or a password, not both"};
    entry = {{"identitytoken", options.token}};
  } else {
    if (!options.password.empty() && options.password_stdin)
      return Error{"give either --password or --password-stdin, not both"};
    if (options.username.empty()) {
      std::cerr << "Username: " << std::flush;
      std::getline(std::cin, options.username);
    }
    if (options.password_stdin)
      options.password = read_stdin_secret();
    else if (options.password.empty())
      options.password = read_hidden("Password: ");
    if (options.username.empty() || options.password.empty())
      return Error{"a username and a password (or --token) are needed"};
    if (options.username.find(':') != std::string::npos)
      return Error{"a username cannot contain ':'"};
    entry = {{"auth", base64::encode(options.username + ":" + options.password)}};
  }
  auto auths = registry_auth::load();
  if (!auths) return auths.error();
  (*auths)["auths"][host] = entry;
  if (auto st = registry_auth::save(*auths); !st) return st.error();
  std::cout << "credentials for " << host << " saved in " << registry_auth::path().string() << "\n";
  return 0;
}

Result<int> run_logout(const std::string& registry) {
  const std::string host = registry_host(registry);
  auto auths = registry_auth::load();
  if (!auths) return auths.error();
  if (!(*auths)["auths"].contains(host)) {
    std::cout << "no credentials for " << host << "\n";
    return 0;
  }
  (*auths)["auths"].erase(host);
  if (auto st = registry_auth::save(*auths); !st) return st.error();
  std::cout << "removed the credentials for " << host << "\n";
  return 0;
}

Result<int> run_transfer(const RegistryTransfer& options, const char* action, const char* verb) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const json body = {{"ref", options.ref}, {"insecure", options.insecure}};
  const std::string target =
      std::string(kTemplatesApi) + "/" + http::url_encode(options.name) + "/" + action;
  http::Request request = api_request(*endpoint, "POST", target, body.dump());
  auto credentials = registry_auth::entry_for(ref_host(options.ref));
  if (!credentials) return credentials.error();
  if (!credentials->empty())
    request.headers.emplace_back("X-Registry-Auth", base64::encode(*credentials));
  std::cerr << action << " " << options.name << (std::string(action) == "push" ? " to " : " from ")
            << options.ref << "\n";
  return follow_template_job(*endpoint, request, verb);
}

// The template's name when --name is not given: the repo's last part, without its tag.
std::string default_name(const std::string& ref) {
  std::string name = ref.substr(ref.rfind('/') + 1);
  name = name.substr(0, name.find('@'));
  return name.substr(0, name.find(':'));
}

Error login_needed(const std::string& host, const std::string& what) {
  return Error{"registry " + host + " refused " + what + "; run `abx registry login " + host + "`"};
}

// The OCI bearer-token flow for `challenge`: a token from its realm, bought with the saved
// entry (an identity token as an OAuth2 refresh token, else user and password as basic
// auth, else anonymously).
Result<std::string> bearer_token(const registry_auth::BearerChallenge& challenge,
                                 const std::string& host, const json& entry) {
  auto realm = http::Url::parse(challenge.realm);
  if (!realm)
    return Error{"registry " + host + " sends clients to " + challenge.realm +
                 " for a token, which the CLI cannot reach: " + realm.error().message()};
  const std::string scope = challenge.scope.empty() ? "registry:catalog:*" : challenge.scope;
  const std::string params =
      "service=" + http::url_encode(challenge.service) + "&scope=" + http::url_encode(scope);
  const std::string path = realm->prefix.empty() ? "/" : "";
  http::Request request{"GET", path + "?" + params, {}, {}};
  if (entry.contains("identitytoken")) {
    request = {"POST",
               path,
               {{"Content-Type", "application/x-www-form-urlencoded"}},
               params + "&grant_type=refresh_token&client_id=abx&refresh_token=" +
                   http::url_encode(entry["identitytoken"].get<std::string>())};
  } else if (entry.contains("auth")) {
    request.headers.emplace_back("Authorization", "Basic " + entry["auth"].get<std::string>());
  }
  auto response = http::Client(*realm).send(request);
  if (!response) return response.error();
  if (response->status == 401 || response->status == 403)
    return login_needed(host, "the token for its catalog");
  const json doc = json::parse(response->body, nullptr, false);
  for (const char* field : {"token", "access_token"})
    if (response->status == 200 && doc.is_object() && doc.contains(field) &&
        doc[field].is_string() && !doc[field].get<std::string>().empty())
      return doc[field].get<std::string>();
  return Error{"registry " + host + "'s token service answered " +
               std::to_string(response->status) + " without a token"};
}

// GET /v2/_catalog over verified TLS (plain HTTP with --insecure), with basic auth or a
// bearer token, whichever the registry asks for.
Result<int> run_search(const std::string& registry, const std::string& term, bool insecure) {
  const std::string host = registry_host(registry);
  auto url = http::Url::parse((insecure ? "http://" : "https://") + host);
  if (!url) return url.error();
  http::Request request{"GET", "/v2/_catalog?n=1000", {}, {}};
  auto credentials = registry_auth::entry_for(host);
  if (!credentials) return credentials.error();
  json entry = json::object();
  if (!credentials->empty()) entry = json::parse(*credentials, nullptr, false);
  if (entry.contains("auth"))
    request.headers.emplace_back("Authorization", "Basic " + entry["auth"].get<std::string>());
  auto response = http::Client(*url).send(request);
  if (!response) return response.error();
  const auto challenge =
      registry_auth::parse_bearer_challenge(response->header("WWW-Authenticate"));
  if (response->status == 401 && challenge) {
    auto token = bearer_token(*challenge, host, entry);
    if (!token) return token.error();
    request.headers = {{"Authorization", "Bearer " + *token}};
    response = http::Client(*url).send(request);
    if (!response) return response.error();
  }
  if (response->status == 401 || response->status == 403) return login_needed(host, "the catalog");
  if (response->status == 404 || response->status == 405)
    return Error{"registry " + host + " does not offer the catalog API (/v2/_catalog)"};
  if (response->status != 200)
    return Error{"registry " + host + " answered " + std::to_string(response->status) +
                 " to /v2/_catalog"};
  const json doc = json::parse(response->body, nullptr, false);
  if (!doc.is_object() || !doc.contains("repositories") || !doc["repositories"].is_array())
    return Error{"registry " + host + " sent a catalog that is not {\"repositories\": [...]}"};
  for (const auto& repo : doc["repositories"]) {
    if (!repo.is_string()) continue;
    const std::string name = repo.get<std::string>();
    if (term.empty() || name.find(term) != std::string::npos)
      std::cout << host << "/" << name << "\n";
  }
  return 0;
}

}  // namespace

void add_registry(CLI::App& root, Commands& commands) {
  auto* group = root.add_subcommand("registry", "Log in to and out of OCI image registries");
  group->require_subcommand(1);

  auto login = std::make_shared<LoginOptions>();
  auto* in = group->add_subcommand("login", "Save credentials for a registry (mode 0600)");
  in->add_option("registry", login->registry, "HOST[:PORT] of the registry")->required();
  in->add_option("-u,--username", login->username, "User name (asked when not given)");
  in->add_option("-p,--password", login->password, "Password (asked when not given)");
  in->add_flag("--password-stdin", login->password_stdin, "Read the password from stdin");
  in->add_option("--token", login->token, "An identity token instead of user and password");
  commands.push_back({in, [login] { return run_login(*login); }});

  auto host = std::make_shared<std::string>();
  auto* out = group->add_subcommand("logout", "Forget the credentials for a registry");
  out->add_option("registry", *host, "HOST[:PORT] of the registry")->required();
  commands.push_back({out, [host] { return run_logout(*host); }});
}

void add_template_registry(CLI::App& group, Commands& commands) {
  auto push = std::make_shared<RegistryTransfer>();
  auto* ps = group.add_subcommand("push", "Send a template to an OCI registry as an image");
  ps->add_option("name", push->name, "Template name")->required();
  ps->add_option("ref", push->ref, "HOST[:PORT]/REPO[:TAG]")->required();
  ps->add_flag("--insecure", push->insecure, "Allow plain HTTP and unverified TLS");
  commands.push_back({ps, [push] { return run_transfer(*push, "push", "pushed"); }});

  auto pull = std::make_shared<RegistryTransfer>();
  auto* pl = group.add_subcommand("pull", "Make a template from an image in an OCI registry");
  pl->add_option("ref", pull->ref, "HOST[:PORT]/REPO[:TAG]")->required();
  pl->add_option("--name", pull->name, "Name of the new template (default: the repo's name)");
  pl->add_flag("--insecure", pull->insecure, "Allow plain HTTP and unverified TLS");
  commands.push_back({pl, [pull] {
                        RegistryTransfer options = *pull;
                        if (options.name.empty()) options.name = default_name(options.ref);
                        return run_transfer(options, "pull", "pulled");
                      }});

  auto search = std::make_shared<RegistryTransfer>();
  auto* sr = group.add_subcommand("search", "List a registry's repositories (its catalog API)");
  sr->add_option("registry", search->ref, "HOST[:PORT]")->required();
  sr->add_option("term", search->name, "Show only repositories whose name contains this");
  sr->add_flag("--insecure", search->insecure, "Plain HTTP instead of verified TLS");
  commands.push_back(
      {sr, [search] { return run_search(search->ref, search->name, search->insecure); }});
}

}  // namespace abx::cli
