// abx template build|import|list|inspect|rm (push|pull|search: cmd_registry.cc): templates through
// the daemon's own API (/abx/v1/templates).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/registry_auth.h"
#include "cli/server_template.h"
#include "cli/terminal.h"
#include "cli/text.h"
#include "common/dir_tar.h"
#include "common/fd_io.h"
#include "common/unique_fd.h"

namespace abx::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "/abx/v1/templates";

constexpr const char* kUploadedSandboxfile = ".abx-sandboxfile";
constexpr size_t kUploadChunk = 256 * 1024;

struct BuildOptions {
  std::string target;  // a spec name (base) or a build context dir
  std::string file;    // a Sandboxfile (its dir is the context when no target is given)
  std::string name;
  std::vector<std::string> build_args;  // NAME=VALUE
  bool no_cache = false;
  bool no_network = false;
  bool insecure_registry = false;  // FROM may pull over plain HTTP
  uint32_t step_timeout = 0;       // 0: the daemon's default
};

struct ImportOptions {
  std::string image;  // OCI layout dir, oci-archive or docker-save tar
  std::string name;
};

struct RemoveOptions {
  std::string name;
  bool force = false;
};

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::string created_text(const json& info) {
  const int64_t ms = info.value("createdMs", int64_t{0});
  return ms ? format_local_time(ms / 1000) : "-";
}

Result<int> run_list(bool as_json) {
  auto listed = call_api("GET", kPrefix);
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
  auto info = call_api("GET", std::string(kPrefix) + "/" + http::url_encode(name));
  if (!info) return info.error();
  std::cout << info->dump(2) << "\n";
  return 0;
}

Result<int> run_remove(const RemoveOptions& options) {
  const std::string target = std::string(kPrefix) + "/" + http::url_encode(options.name) +
                             (options.force ? "?force=true" : "");
  auto removed = call_api("DELETE", target);
  if (!removed) return removed.error();
  std::cout << "removed " << options.name << "\n";
  const size_t running = removed->is_object() ? removed->value("runningSandboxes", size_t{0}) : 0;
  if (running > 0)
    std::cerr << running << " running sandbox" << (running == 1 ? "" : "es") << " still use "
              << options.name << ": its layers stay on disk until the last of them ends\n";
  return 0;
}

// One NDJSON line of the build stream: progress goes to stderr, the outcome
// decides the exit code.
std::optional<Result<int>> show_build_line(const std::string& line, const char* verb,
                                           std::ostream& out) {
  const json event = json::parse(line, nullptr, false);
  if (!event.is_object()) return std::nullopt;
  if (event.contains("progress")) {
    // Build steps print what the template's code prints: keep its escapes
    // off the user's terminal.
    const std::string progress = event["progress"].get<std::string>();
    std::cerr << "  "
              << (terminal::is_tty(STDERR_FILENO) ? sanitize_for_terminal(progress) : progress)
              << "\n";
    return std::nullopt;
  }
  if (event.contains("error")) {
    const std::string said = verb;
    const std::string action = said == "imported" ? "import"
                               : said == "pushed" ? "push"
                               : said == "pulled" ? "pull"
                                                  : "build";
    return Result<int>(
        Error{"template " + action + " failed: " + event["error"].value("message", "")});
  }
  const json& done = event["done"];
  out << verb << " " << done.value("name", "") << " (" << mib(done.value("sizeBytes", uint64_t{0}))
      << ")\n";
  return Result<int>(0);
}

Result<int> follow_build(http::ResponseStream& stream, const char* verb, std::ostream& out) {
  std::string pending;
  while (!stream.done()) {
    auto piece = stream.read_some();
    if (!piece) return piece.error();
    pending += *piece;
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      if (auto outcome = show_build_line(line, verb, out)) return std::move(*outcome);
    }
  }
  return Error{"the daemon ended the build stream without a result; see its log"};
}

// Sends `request` (with `body` streamed when given) and follows the NDJSON
// progress stream to its outcome.
Result<int> open_and_follow(const Endpoint& endpoint, const http::Request& request,
                            const http::BodySource* body, const char* verb = "built",
                            std::ostream& out = std::cout) {
  auto stream = http::Client(endpoint.url).open(request, body);
  if (!stream) return stream.error();
  if ((*stream)->status() != 200) {
    auto rest = (*stream)->read_all();
    http::Response response{(*stream)->status(), (*stream)->headers(), rest ? *rest : ""};
    return Error{describe_failure(response)};
  }
  return follow_build(**stream, verb, out);
}

// A tar file removed when this goes out of scope.
struct TempTar {
  fs::path path;
  TempTar() {
    std::string tmpl = (fs::temp_directory_path() / "abx-upload-XXXXXX").string();
    const int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd >= 0) ::close(fd);
    path = tmpl;
  }
  ~TempTar() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

Result<int> upload_and_follow(const Endpoint& endpoint, const std::string& target,
                              const fs::path& tar, const char* verb,
                              const std::string& registries = {}) {
  UniqueFd fd(::open(tar.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open " + tar.string());
  const http::BodySource source = http::fd_body(fd.get(), tar.string(), kUploadChunk);
  http::Request request = api_request(endpoint, "POST", target);
  request.headers.emplace_back("Content-Type", "application/x-tar");
  if (!registries.empty()) request.headers.emplace_back("X-Registry-Config", registries);
  return open_and_follow(endpoint, request, &source, verb);
}

Result<int> upload_and_follow(const std::string& target, const fs::path& tar,
                              const char* verb = "built", const std::string& registries = {}) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  return upload_and_follow(*endpoint, target, tar, verb, registries);
}

struct DeployOptions {
  std::string name;
  std::string to;       // the other daemon's API URL
  std::string api_key;  // a key of that daemon
  std::string as;       // the name there (default: the same)
};

// The local daemon's export of `name` (an OCI layout tar) into `tar`.
Status download_export(const Endpoint& endpoint, const std::string& name, const fs::path& tar) {
  const std::string target = std::string(kPrefix) + "/" + http::url_encode(name) + "/export";
  auto stream = http::Client(endpoint.url).open(api_request(endpoint, "GET", target));
  if (!stream) return stream.error();
  if ((*stream)->status() != 200) {
    auto rest = (*stream)->read_all();
    http::Response response{(*stream)->status(), (*stream)->headers(), rest ? *rest : ""};
    return Error{describe_failure(response)};
  }
  UniqueFd fd(::open(tar.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open " + tar.string());
  while (!(*stream)->done()) {
    auto piece = (*stream)->read_some();
    if (!piece) return piece.error();
    if (auto st = write_all(fd.get(), *piece, "write", tar.string()); !st) return st;
  }
  return {};
}

// Before a template is exported for it: the other daemon answers and takes the key.
Status check_remote_key(const Endpoint& remote) {
  auto response =
      http::Client(remote.url).send(api_request(remote, "GET", kPrefix), std::chrono::seconds(30));
  if (!response)
    return Error{"no abx daemon answers at " + remote.url.str() + ": " +
                 response.error().message()};
  if (response->status == 401 || response->status == 403)
    return Error{"the daemon at " + remote.url.str() +
                 " refused the key; give one of its keys with --api-key"};
  if (response->status != 200) return Error{describe_failure(*response)};
  return {};
}

// Copies a local template to another daemon: this daemon exports it as an OCI
// image layout, that one imports it (as `abx template import` would).
Result<int> run_deploy(const DeployOptions& options) {
  auto url = http::Url::parse(options.to);
  if (!url) return Error{"--to " + options.to + ": " + url.error().message()};
  std::string key = options.api_key;
  if (key.empty()) {
    const char* env = std::getenv("ABX_DEPLOY_API_KEY");
    key = env ? env : "";
  }
  if (key.empty())
    return Error{"give a key of the daemon at " + options.to +
                 ": --api-key KEY (or ABX_DEPLOY_API_KEY)"};
  const Endpoint remote{*url, key};
  if (auto st = check_remote_key(remote); !st) return st.error();
  auto local = resolve_endpoint();
  if (!local) return local.error();
  TempTar tar;
  std::cerr << "exporting " << options.name << "\n";
  if (auto st = download_export(*local, options.name, tar.path); !st) return st.error();
  const std::string as = options.as.empty() ? options.name : options.as;
  const std::string target =
      std::string(kPrefix) + "/" + http::url_encode(as) + "/import?origin=" +
      http::url_encode("deployed from " + local->url.str() + " (" + options.name + ")");
  std::cerr << "deploying " << options.name << " to " << url->str() << " as " << as << "\n";
  return upload_and_follow(remote, target, tar.path, "deployed");
}

// The outcome line goes to `out`: stdout for `abx template build`, stderr
// when a create builds first (its stdout is the sandbox id).
Result<int> build_spec(const Endpoint& endpoint, const std::string& name, bool no_cache,
                       std::ostream& out = std::cout) {
  const json body = {{"noCache", no_cache}};
  const std::string target = std::string(kPrefix) + "/" + http::url_encode(name) + "/build";
  std::cerr << "building " << name << "\n";
  return open_and_follow(endpoint, api_request(endpoint, "POST", target, body.dump()), nullptr,
                         "built", out);
}

bool is_context_build(const BuildOptions& options) {
  std::error_code ec;
  return !options.file.empty() || options.target == "." ||
         options.target.find('/') != std::string::npos || fs::is_directory(options.target, ec);
}

Result<std::string> read_text_file(const fs::path& path) {
  auto text = read_file(path);
  if (!text) return Error{"cannot read " + path.string()};
  return text;
}

Result<json> build_args_json(const std::vector<std::string>& args) {
  json out = json::object();
  for (const auto& arg : args) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) return Error{"--build-arg " + arg + ": use NAME=VALUE"};
    out[arg.substr(0, eq)] = arg.substr(eq + 1);
  }
  return out;
}

Result<int> run_context_build(const BuildOptions& options) {
  if (options.name.empty()) return Error{"name the template: abx template build DIR --name NAME"};
  const fs::path context = options.target.empty() ? fs::path(options.file).parent_path().empty()
                                                        ? fs::path(".")
                                                        : fs::path(options.file).parent_path()
                                                  : fs::path(options.target);
  std::error_code ec;
  if (!fs::is_directory(context, ec))
    return Error{context.string() + " is not a directory; give the build context dir"};
  std::vector<TarExtra> extras;
  std::string file_in_tar = "Sandboxfile";
  std::string recipe;  // its text, to find the registries its FROM lines name
  if (!options.file.empty()) {
    auto text = read_text_file(options.file);
    if (!text) return text.error();
    recipe = *text;
    extras.push_back({kUploadedSandboxfile, std::move(*text)});
    file_in_tar = kUploadedSandboxfile;
  } else if (is_commands_only_context(context)) {
    extras = server_template_extras(kUploadedSandboxfile);
    file_in_tar = kUploadedSandboxfile;
    std::cerr << "no Sandboxfile: base + the in-sandbox server + commands.py on port 9000\n";
  } else if (!fs::exists(context / "Sandboxfile", ec) && !fs::exists(context / "Dockerfile", ec)) {
    return Error{"no Sandboxfile, Dockerfile or commands.py in " + context.string() +
                 "; give a Sandboxfile with -f"};
  } else {
    auto text = read_file(fs::exists(context / "Sandboxfile", ec) ? context / "Sandboxfile"
                                                                  : context / "Dockerfile");
    if (text) recipe = std::move(*text);
  }
  auto registries = registry_auth::config_header_for(recipe);
  if (!registries) return registries.error();
  auto args = build_args_json(options.build_args);
  if (!args) return args.error();
  TempTar tar;
  if (auto st = write_dir_tar(context, extras, tar.path); !st) return st.error();
  std::string target = std::string(kPrefix) + "/" + http::url_encode(options.name) +
                       "/build?file=" + http::url_encode(file_in_tar) +
                       "&buildArgs=" + http::url_encode(args->dump());
  if (options.no_cache) target += "&noCache=true";
  if (options.no_network) target += "&network=false";
  if (options.step_timeout) target += "&stepTimeout=" + std::to_string(options.step_timeout);
  if (options.insecure_registry) target += "&insecureRegistry=true";
  std::cerr << "building " << options.name << " from " << context.string() << "\n";
  return upload_and_follow(target, tar.path, "built", *registries);
}

Result<int> run_build(const BuildOptions& options) {
  if (is_context_build(options)) return run_context_build(options);
  const std::string name = options.name.empty() ? options.target : options.name;
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  return build_spec(*endpoint, name, options.no_cache);
}

Result<int> run_import(const ImportOptions& options) {
  std::error_code ec;
  const fs::path image = fs::absolute(options.image, ec);
  if (!fs::exists(image, ec))
    return Error{options.image + " does not exist; give an OCI layout dir or an image tar"};
  TempTar packed;
  fs::path tar = image;
  if (fs::is_directory(image, ec)) {
    if (auto st = write_dir_tar(image, {}, packed.path); !st) return st.error();
    tar = packed.path;
  }
  const std::string target = std::string(kPrefix) + "/" + http::url_encode(options.name) +
                             "/import?origin=" + http::url_encode(image.string());
  std::cerr << "importing " << image.string() << " as " << options.name << "\n";
  return upload_and_follow(target, tar, "imported");
}

void add_build(CLI::App& parent, Commands& commands) {
  auto options = std::make_shared<BuildOptions>();
  auto* app = parent.add_subcommand("build", "Build a template (e.g. base) and show its progress");
  app->add_option("target", options->target,
                  "A build context dir with a Sandboxfile, or a spec name (base, "
                  "code-interpreter-v1)");
  app->add_option("-f,--file", options->file, "The Sandboxfile (default: <dir>/Sandboxfile)");
  app->add_option("--name", options->name, "Name of the template to build");
  app->add_option("--build-arg", options->build_args, "NAME=VALUE for an ARG (repeatable)")
      ->check(key_value());
  app->add_flag("--no-cache", options->no_cache, "Rebuild every step, ignoring the cache");
  app->add_flag("--no-network", options->no_network, "Refuse network access to build steps");
  app->add_flag("--insecure-registry", options->insecure_registry,
                "Let FROM pull from a registry over plain HTTP or unverified TLS");
  app->add_option("--step-timeout", options->step_timeout,
                  "Seconds one RUN step may take (default 1800)")
      ->check(CLI::Range(1, 86400));
  commands.push_back({app, [options] { return run_build(*options); }});
}

void add_deploy(CLI::App& parent, Commands& commands) {
  auto options = std::make_shared<DeployOptions>();
  auto* app = parent.add_subcommand(
      "deploy", "Copy a template to another abx daemon through its template API");
  app->add_option("name", options->name, "Local template name")->required();
  app->add_option("--to", options->to, "The other daemon's API URL (http[s]://HOST:PORT)")
      ->required()
      ->check(value_check(
          [](const std::string& text) {
            auto url = http::Url::parse(text);
            return url ? std::string() : url.error().message();
          },
          "URL"));
  app->add_option("--api-key", options->api_key,
                  "A key of that daemon (default: $ABX_DEPLOY_API_KEY)");
  app->add_option("--as", options->as, "Name there (default: the same)");
  commands.push_back({app, [options] { return run_deploy(*options); }});
}

void add_import(CLI::App& parent, Commands& commands) {
  auto options = std::make_shared<ImportOptions>();
  auto* app = parent.add_subcommand(
      "import", "Make a template from an OCI image layout dir or a docker-save tar");
  app->add_option("image", options->image, "OCI layout dir, oci-archive or docker-save tar")
      ->required();
  app->add_option("--name", options->name, "Name of the new template")->required();
  commands.push_back({app, [options] { return run_import(*options); }});
}

}  // namespace

Result<int> follow_template_job(const Endpoint& endpoint, const http::Request& request,
                                const char* verb) {
  return open_and_follow(endpoint, request, nullptr, verb);
}

Status build_first(const Endpoint& endpoint, const std::string& name) {
  std::cerr << "template " << name
            << " is not built yet; building it once (later creates reuse it)\n";
  auto built = build_spec(endpoint, name, false, std::cerr);
  if (!built) return built.error();
  return {};
}

void add_template(CLI::App& root, Commands& commands) {
  auto* group =
      root.add_subcommand("template", "Build, import, list, inspect and remove templates");
  group->require_subcommand(1);
  add_build(*group, commands);
  add_import(*group, commands);
  add_deploy(*group, commands);
  add_template_registry(*group, commands);

  auto as_json = std::make_shared<bool>(false);
  auto* list = group->add_subcommand("list", "List templates (name, size, created, source)");
  list->add_flag("--json", *as_json, "Print the raw JSON array");
  commands.push_back({list, [as_json] { return run_list(*as_json); }});
  // docker's word for them, at the top.
  auto* images =
      group->get_parent()->add_subcommand("images", "List templates (as abx template list)");
  images->add_flag("--json", *as_json, "Print the raw JSON array");
  commands.push_back({images, [as_json] { return run_list(*as_json); }});

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
