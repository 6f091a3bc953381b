// The building half of the template store: Debian specs (mmdebstrap),
// Sandboxfiles (spec dirs in the repo and uploaded contexts) and image imports.
#include <fcntl.h>

#include <cstdint>
#include <optional>
#include <sstream>

#include "common/fd_io.h"
#include "common/sha256.h"
#include "common/unique_fd.h"
#include "runtime/layer_copy.h"
#include "templates/build_context.h"
#include "templates/catalog.h"
#include "templates/debian_build.h"
#include "templates/image_archive.h"
#include "templates/layer.h"
#include "templates/sandboxfile.h"
#include "templates/sandboxfile_build.h"
#include "templates/spec.h"
#include "templates/store_common.h"
#include "templates/templates.h"
#include "templates/tree_ops.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;
using store::BuildLog;
using store::check_buildable_name;
using store::kBuildingPrefix;
using store::kHost;
using store::mib_text;
using store::take_build_lock;
using store::valid_name;

constexpr const char* kDebianImagePrefix = "debian:";
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A Debian root made from nothing but a suite: `FROM debian:bookworm`.
DebianSpec plain_debian(const std::string& suite) {
  DebianSpec spec;
  spec.name = "debian-" + suite;
  spec.suite = suite;
  spec.variant = "minbase";
  spec.mirror = "http://deb.debian.org/debian";
  spec.hash = sha256_hex("debian\n" + suite + "\nminbase\n" + spec.mirror).substr(0, 16);
  return spec;
}

// Errors name the image as the user gave it, not the daemon's upload copy.
Error name_image(Error error, const fs::path& image, const std::string& shown_as) {
  const std::string internal = image.string();
  for (size_t at; (at = error.detail.find(internal)) != std::string::npos;)
    error.detail.replace(at, internal.size(), shown_as);
  return error;
}

// A context with a commands.py (the server SDK's user commands) that a COPY put into the
// template: unless the Sandboxfile (or its FROM) names a start command, the template starts
// the in-sandbox server with those commands, and is ready once its port answers.
void start_commands_server(const sandboxfile::Sandboxfile& file, const fs::path& context_dir,
                           TemplateMeta& meta) {
  constexpr const char* kCommandsFile = "commands.py";
  std::error_code ec;
  // symlink_status: the context is the caller's, and a commands.py symlink followed here
  // (as root, on the host) would tell them whether any host path is a file.
  if (!meta.start_cmd.empty() ||
      !fs::is_regular_file(fs::symlink_status(context_dir / kCommandsFile, ec)))
    return;
  const std::optional<std::string> path = sandboxfile::copied_to(file, kCommandsFile);
  if (!path) return;
  meta.start_cmd = sandboxfile::exec_line({"python3", "-m", "agent_sandbox.server", "--port",
                                           std::to_string(kServerPort), "--commands", *path});
  meta.ready_cmd = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", " +
                   std::to_string(kServerPort) + "), 1).close()'";
}

}  // namespace

// The layer holding the root filesystem `spec` describes, extracted from
// mmdebstrap's (cached) tar unless it is already in the layer store.
Result<std::string> TemplateStore::debian_layer(const DebianSpec& spec, bool no_cache,
                                                const BuildProgressFn& log,
                                                const BuildProgressFn& progress) {
  const std::string id = "deb-" + spec.name + "-" + spec.hash;
  if (!no_cache && layers_.has(id)) {
    progress("step: " + spec.name + " layer is up to date (spec " + spec.hash + ")");
    return id;
  }
  auto tar = debian_rootfs_tar(spec, no_cache, log, progress);
  if (!tar) return tar.error();
  auto staging = layers_.begin(id);
  if (!staging) return staging.error();
  const fs::path rootfs = *staging / "rootfs";
  if (auto st = tree::make_dir(rootfs, 0755); !st) return st.error();
  progress("step: extracting " + tar->string());
  const IdShift shift{runtime_.host_uid(0), runtime_.host_gid(0)};
  auto stats = apply_layer(*tar, fs::canonical(rootfs), shift, [&](const LayerStats& s) {
    progress("extracted: " + std::to_string(s.entries) + " files, " + mib_text(s.bytes));
  });
  if (!stats) return stats.error();
  if (auto st = layers_.commit(id, rootfs, *staging); !st) return st.error();
  return id;
}

Result<TemplateInfo> TemplateStore::build(const std::string& name, const BuildOptions& options,
                                          const BuildProgressFn& progress) {
  if (auto st = check_buildable_name(name); !st) return st.error();
  if (auto dir = sandboxfile_spec(name)) return build_from_spec_dir(name, *dir, options, progress);
  auto spec = load_spec(name);
  if (!spec) return spec.error();
  const bool existed = fs::exists(dir_ / name / "meta.json");
  auto lock = take_build_lock(dir_);
  if (!lock) return lock.error();
  // Another request built it while this one waited: that build is the answer.
  if (!existed && !options.no_cache && fs::exists(dir_ / name / "meta.json")) return inspect(name);
  BuildLog log(log_path(name), progress);
  log.step("step: building " + name + " (spec " + spec->hash + ", log " + log_path(name).string() +
           ")");
  auto layer = debian_layer(*spec, options.no_cache, log.details(), log.steps());
  if (!layer) return log.failed(layer.error());
  TemplateMeta meta;
  meta.name = name;
  meta.source = "mmdebstrap " + spec->suite + " (templates/" + name + ")";
  meta.spec_hash = spec->hash;
  meta.layers = {*layer};
  meta.owner = options.owner;
  meta.allow_setid = spec->allow_setid;
  auto info = publish(std::move(meta));
  if (!info) return log.failed(info.error());
  log.step("done: " + name + ", " + mib_text(info->size_bytes));
  return info;
}

// A template whose spec is a Sandboxfile in the repo (code-interpreter-v1:
// base plus the interpreter's packages, as a layer over base's).
Result<TemplateInfo> TemplateStore::build_from_spec_dir(const std::string& name,
                                                        const fs::path& dir,
                                                        const BuildOptions& options,
                                                        const BuildProgressFn& progress) {
  auto text = read_file(dir / "Sandboxfile");
  if (!text) return text.error();
  SandboxfileRequest request;
  request.name = name;
  request.context_dir = dir;
  request.sandboxfile = std::move(*text);
  request.owner = options.owner;
  request.no_cache = options.no_cache;
  return build_sandboxfile(request, progress);
}

// What a Sandboxfile's FROM names: a template (built first if it has a spec),
// `debian:<suite>`, a registry image (HOST/REPO[:TAG], registry.h's rule), or
// an image archive in the build context (prefix "./" where a dir name has a dot).
Result<TemplateMeta> TemplateStore::from_image(const std::string& image,
                                               const SandboxfileRequest& request,
                                               const BuildProgressFn& progress) {
  if (image == kHost)
    return Error{"FROM", EINVAL,
                 "FROM host is not possible: host is a view of this machine's dirs; use FROM base"};
  if (image.starts_with(kDebianImagePrefix)) {
    const DebianSpec spec = plain_debian(image.substr(std::string(kDebianImagePrefix).size()));
    auto layer = debian_layer(spec, false, progress, progress);
    if (!layer) return layer.error();
    TemplateMeta meta;
    meta.layers = {*layer};
    return meta;
  }
  if (registry::is_reference(image) && !image.ends_with(".tar")) {
    auto ref = registry::parse_reference(image);
    if (!ref) return ref.error();
    const auto creds = request.registry_credentials.find(ref->host);
    registry::Access access{*ref, creds == request.registry_credentials.end() ? "" : creds->second,
                            request.registry_insecure};
    return pull_layer(access, progress);
  }
  if (image.find('/') != std::string::npos || image.ends_with(".tar")) {
    // The name and any symlink in the context must stay inside it: never a host file.
    auto archive = build_context::file_inside(request.context_dir, image);
    if (!archive && archive.error().errnum == ENOENT)
      return Error{"FROM", ENOENT, "no image archive '" + image + "' in the build context"};
    if (!archive) return Error{"FROM", EPERM, archive.error().detail};
    return import_layer(*archive, image, progress);
  }
  // Another team's template is as unknown here as everywhere else.
  const std::string team = request.owner.empty() ? store::kUnownedTeam : request.owner;
  auto id = resolve_for(team, image);
  if (!id || !fs::exists(dir_ / *id / "meta.json"))
    return Error::with_message("unknown template '" + image +
                                   "' in FROM; use a template name, debian:<suite> or an "
                                   "image archive",
                               ENOENT);
  return read_meta(dir_ / *id);
}

Result<TemplateInfo> TemplateStore::build_sandboxfile(const SandboxfileRequest& request,
                                                      const BuildProgressFn& progress) {
  if (auto st = check_buildable_name(request.name); !st) return st.error();
  auto file = sandboxfile::parse(request.sandboxfile, request.build_args);
  if (!file) return file.error();
  for (const auto& warning : file->warnings) progress("warning: " + warning);
  const std::string from = file->steps.front().args.front();
  // Outside the lock: building a FROM template takes it too.
  if (valid_name(from) && has_spec(from) && !fs::exists(dir_ / from / "meta.json")) {
    progress("step: building " + from + " first (FROM " + from + ")");
    auto built = build(from, {}, progress);
    if (!built) return built.error();
  }
  auto lock = take_build_lock(dir_);
  if (!lock) return lock.error();
  BuildLog log(log_path(request.name), progress);
  auto base = from_image(from, request, log.steps());
  if (!base) return log.failed(base.error());
  // Again, now that FROM's env and workdir are known: `ENV PATH=/opt/bin:$PATH`
  // must extend the image's PATH.
  sandboxfile::BaseImage image{base->env, base->workdir.empty() ? "/" : base->workdir};
  image.env.try_emplace("PATH", kDefaultPath);
  file = sandboxfile::parse(request.sandboxfile, request.build_args, image);
  if (!file) return log.failed(file.error());
  const fs::path scratch = dir_ / (kBuildingPrefix + request.name + ".scratch");
  if (auto st = tree::remove_tree(scratch); !st) return log.failed(st.error());
  if (auto st = tree::make_dir(scratch, 0700); !st) return log.failed(st.error());
  StepDeps deps{runtime_,      layers_,         request.context_dir,
                scratch,       request.network, request.no_cache,
                log.details(), log.steps(),     std::chrono::seconds(request.step_timeout_s)};
  deps.step_started = request.step_started;
  auto made = run_steps(*file, *base, deps);
  (void)tree::remove_tree(scratch);
  if (!made) return log.failed(made.error());
  TemplateMeta meta = std::move(*made);
  start_commands_server(*file, request.context_dir, meta);
  meta.name = request.name;
  meta.owner = request.owner;
  meta.source = "Sandboxfile (FROM " + from + ", " + std::to_string(file->steps.size()) + " steps)";
  auto info = publish(std::move(meta));
  if (!info) return log.failed(info.error());
  log.step("done: " + request.name + ", " + std::to_string(info->layers) + " layers, " +
           mib_text(info->size_bytes));
  return info;
}

// One layer holding the flattened image; its id is the archive's digest, so
// importing the same image twice stores it once.
Result<TemplateMeta> TemplateStore::import_layer(const fs::path& image, const std::string& shown_as,
                                                 const BuildProgressFn& progress) {
  std::error_code ec;
  // A layout dir's index.json may be a symlink planted to a host file: never hash that.
  auto digest_source = fs::is_directory(image, ec) ? build_context::file_inside(image, "index.json")
                                                   : Result<fs::path>(image);
  if (!digest_source) return name_image(digest_source.error(), image, shown_as);
  auto digest = sha256_file(*digest_source);
  if (!digest) return digest.error();
  const std::string id = "img-" + digest->substr(0, 32);
  auto staging = layers_.begin(id);
  if (!staging) return staging.error();
  const fs::path rootfs = *staging / "rootfs";
  const fs::path scratch = *staging / "scratch";
  if (auto st = tree::make_dir(rootfs, 0755); !st) return st.error();
  if (auto st = tree::make_dir(scratch, 0700); !st) return st.error();
  progress("step: unpacking " + shown_as);
  const IdShift shift{runtime_.host_uid(0), runtime_.host_gid(0)};
  auto config =
      unpack_image(image, scratch, fs::canonical(rootfs), shift, [&](const LayerStats& s) {
        progress("extracted: " + std::to_string(s.entries) + " files, " + mib_text(s.bytes));
      });
  if (!config) {
    (void)tree::remove_tree(*staging);
    return name_image(config.error(), image, shown_as);
  }
  if (auto st = layers_.commit(id, rootfs, *staging); !st) return st.error();
  progress("step: " + std::to_string(config->layers) + " layers of a " + config->format +
           " unpacked");
  TemplateMeta meta;
  meta.layers = {id};
  meta.env = config->env;
  meta.workdir = config->workdir;
  meta.user = config->user;
  meta.start_cmd = config->start_cmd;
  meta.ready_cmd = config->ready_cmd;
  return meta;
}

Result<TemplateInfo> TemplateStore::import_image(const std::string& name, const fs::path& image,
                                                 const std::string& origin,
                                                 const std::string& owner,
                                                 const BuildProgressFn& progress) {
  if (auto st = check_buildable_name(name); !st) return st.error();
  auto lock = take_build_lock(dir_);
  if (!lock) return lock.error();
  BuildLog log(log_path(name), progress);
  auto imported = import_layer(image, origin, log.steps());
  if (!imported) return log.failed(imported.error());
  TemplateMeta meta = std::move(*imported);
  meta.name = name;
  meta.owner = owner;
  meta.source = "image " + origin;
  auto info = publish(std::move(meta));
  if (!info) return log.failed(info.error());
  log.step("done: " + name + ", " + mib_text(info->size_bytes));
  return info;
}

namespace {

// The id of a layer dir of this store (".layers/<id>"), or nothing: a path a
// snapshot record names is only trusted once it is one of ours.
std::optional<std::string> own_layer_id(const LayerStore& layers, const fs::path& dir) {
  const std::string id = dir.filename().string();
  if (id.empty() || id[0] == '.' || layers.path(id) != dir || !layers.has(id)) return std::nullopt;
  return id;
}

// Copies one snapshot layer into the store as layer `id` (with the same
// fd-relative, symlink-refusing walk that took it out of its sandbox: its
// files are still what a sandbox made).
Status copy_snapshot_layer(const LayerStore& layers, const std::string& id, const fs::path& from) {
  auto staging = layers.begin(id);
  if (!staging) return staging.error();
  const fs::path rootfs = *staging / "rootfs";
  auto copied = [&]() -> Status {
    if (auto st = tree::make_dir(rootfs, 0755); !st) return st;
    UniqueFd source(::open(from.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!source.valid()) return Error::from_errno("open snapshot layer", from.string());
    UniqueFd target(::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!target.valid()) return Error::from_errno("open layer", rootfs.string());
    runtime::layer_copy::Limits limits;
    limits.max_bytes = UINT64_MAX;  // the snapshot's size was bounded when it was taken
    if (auto done = runtime::layer_copy::copy(source.get(), target.get(), limits); !done)
      return done.error();
    return layers.commit(id, rootfs, *staging);
  }();
  if (!copied) (void)tree::remove_tree(*staging);
  return copied;
}

}  // namespace

Result<TemplateInfo> TemplateStore::from_snapshot(const SnapshotTemplateRequest& request,
                                                  const BuildProgressFn& progress) {
  if (auto st = check_buildable_name(request.name); !st) return st.error();
  auto lock = take_build_lock(dir_);
  if (!lock) return lock.error();
  BuildLog log(log_path(request.name), progress);
  TemplateMeta meta;
  for (const auto& [snapshot_layer, dir] : request.snapshot_layers) {
    const std::string id = "snap-" + snapshot_layer;
    if (!layers_.has(id)) {
      log.step("step: copying snapshot layer " + snapshot_layer);
      if (auto st = copy_snapshot_layer(layers_, id, dir); !st) return log.failed(st.error());
    }
    meta.layers.push_back(id);
  }
  for (const fs::path& dir : request.template_layers) {
    auto id = own_layer_id(layers_, dir);
    if (!id)
      return log.failed(Error::with_message(
          "the layers of the template the snapshot was made on are gone (it was rebuilt or "
          "removed since)",
          ENOENT));
    meta.layers.push_back(*id);
  }
  meta.name = request.name;
  meta.owner = request.owner;
  meta.source = request.origin;
  meta.env = request.defaults.env;
  meta.workdir = request.defaults.workdir;
  meta.user = request.defaults.user;
  meta.start_cmd = request.defaults.start_cmd;
  meta.ready_cmd = request.defaults.ready_cmd;
  meta.allow_setid = request.allow_setid;
  auto info = publish(std::move(meta));
  if (!info) return log.failed(info.error());
  log.step("done: " + request.name + ", " + std::to_string(info->layers) + " layers, " +
           mib_text(info->size_bytes));
  return info;
}

}  // namespace abx::templates
