#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "common/ids.h"
#include "common/sha256.h"
#include "common/unique_fd.h"
#include "templates/catalog.h"
#include "templates/debian_build.h"
#include "templates/host_template.h"
#include "templates/image_archive.h"
#include "templates/layer.h"
#include "templates/sandboxfile.h"
#include "templates/sandboxfile_build.h"
#include "templates/spec.h"
#include "templates/templates.h"
#include "templates/tree_ops.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHost = "host";
constexpr const char* kBase = "base";
constexpr const char* kCodeInterpreter = "code-interpreter-v1";
constexpr const char* kBuildingPrefix = ".building-";
constexpr const char* kTrashPrefix = ".trash-";
constexpr const char* kDebianImagePrefix = "debian:";
constexpr size_t kMaxNameLength = 63;
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Serialises builds between threads; the flock below does the same between
// processes sharing a templates dir.
std::mutex build_mutex;

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    const bool ok = std::islower(static_cast<unsigned char>(c)) ||
                    std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

Status check_buildable_name(const std::string& name) {
  if (valid_name(name) && name != kHost) return {};
  return Error{"template build", EINVAL,
               "'" + name + "' cannot be a template name: use [a-z0-9._-] (host is built in)"};
}

Result<UniqueFd> lock_builds(const fs::path& templates_dir, bool wait) {
  const fs::path lock_path = templates_dir / ".build.lock";
  UniqueFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("template lock", lock_path.string());
  if (::flock(fd.get(), LOCK_EX | (wait ? 0 : LOCK_NB)) != 0)
    return Error::from_errno("template lock", lock_path.string());
  return fd;
}

Status ensure_templates_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"mkdir", ec.value(), dir.string()};
  if (::chmod(dir.c_str(), 0755) != 0) return Error::from_errno("chmod", dir.string());
  return {};
}

// Holds both locks for the length of one build or removal.
struct BuildLock {
  std::unique_lock<std::mutex> threads{build_mutex};
  UniqueFd file;
};

Result<std::unique_ptr<BuildLock>> take_build_lock(const fs::path& templates_dir) {
  auto lock = std::make_unique<BuildLock>();
  if (auto st = ensure_templates_dir(templates_dir); !st) return st.error();
  auto file = lock_builds(templates_dir, true);
  if (!file) return file.error();
  lock->file = std::move(*file);
  return lock;
}

host::Owners owners_from(const runtime::Runtime& runtime) {
  return {runtime.host_uid(0), runtime.host_gid(0), runtime.host_uid(1000), runtime.host_gid(1000)};
}

// Builds next to the final dir and renames it into place, so a template dir
// that exists is complete; a build interrupted by a crash leaves only the
// temp dir, which the next daemon start removes.
Status build_host_once(const fs::path& templates_dir, const runtime::Runtime& runtime) {
  const fs::path ready = templates_dir / kHost;
  if (fs::is_directory(ready)) return {};
  auto lock = take_build_lock(templates_dir);
  if (!lock) return lock.error();
  if (fs::is_directory(ready)) return {};
  const fs::path building = templates_dir / (std::string(kBuildingPrefix) + kHost);
  if (auto st = tree::remove_tree(building); !st) return st;
  if (auto st = host::build(building, owners_from(runtime)); !st) {
    (void)tree::remove_tree(building);
    return st;
  }
  if (::rename(building.c_str(), ready.c_str()) != 0) {
    return Error::from_errno("template rename", ready.string());
  }
  return {};
}

TemplateInfo info_from(const TemplateMeta& meta) {
  TemplateInfo info;
  info.name = meta.name;
  info.resolved = meta.name;
  info.source = meta.source;
  info.size_bytes = meta.size_bytes;
  info.created_ms = meta.created_ms;
  info.env = meta.env;
  info.workdir = meta.workdir;
  info.user = meta.user;
  info.layers = meta.layers.size();
  return info;
}

TemplateInfo host_info() {
  return {kHost, kHost, "read-only views of the host's system directories"};
}

// A template that has a spec but is not built yet: it is built on first use.
TemplateInfo unbuilt_info(const std::string& name) {
  TemplateInfo info{name, name,
                    "Debian packages (templates/" + name + "); built on first use or by " +
                        "`abx template build " + name + "`"};
  info.built = false;
  return info;
}

// Moves `dir` aside, then deletes it: a template dir is either complete or gone.
Status discard(const fs::path& dir) {
  const fs::path trash = dir.parent_path() / (kTrashPrefix + dir.filename().string());
  if (auto st = tree::remove_tree(trash); !st) return st;
  if (::rename(dir.c_str(), trash.c_str()) != 0 && errno != ENOENT) {
    return Error::from_errno("template rename", dir.string());
  }
  return tree::remove_tree(trash);
}

void sweep_interrupted(const fs::path& templates_dir, const LayerStore& layers) {
  std::error_code ec;
  if (!fs::is_directory(templates_dir, ec)) return;
  auto lock = lock_builds(templates_dir, false);
  if (!lock) return;  // another process is building: its temp dirs are live
  for (fs::directory_iterator it(templates_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(kBuildingPrefix) || name.starts_with(kTrashPrefix)) {
      (void)tree::remove_tree(it->path());
    }
  }
  layers.sweep_staging();
}

class LogFile {
 public:
  explicit LogFile(const fs::path& path) : out_(path, std::ios::trunc) {}
  void line(const std::string& text) { out_ << text << '\n' << std::flush; }

 private:
  std::ofstream out_;
};

std::string mib_text(uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

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

uint64_t layers_disk_usage(const LayerStore& layers, const std::vector<std::string>& ids) {
  uint64_t total = 0;
  for (const auto& id : ids) total += disk_usage(layers.path(id));
  return total;
}

}  // namespace

// A template ready to be published: its meta, with the layers it names
// already committed to the layer store.
struct TemplateStore::Staged {
  TemplateMeta meta;
};

TemplateStore::TemplateStore(std::filesystem::path templates_dir, runtime::Runtime& runtime)
    : dir_(std::move(templates_dir)), runtime_(runtime), layers_(dir_) {
  sweep_interrupted(dir_, layers_);
}

Result<runtime::RootfsSpec> TemplateStore::rootfs(const std::string& name) {
  auto id = resolve(name);
  if (!id) return id.error();
  if (*id == kHost) {
    if (auto st = build_host_once(dir_, runtime_); !st) return st.error();
    return host::rootfs_spec(dir_ / kHost);
  }
  if (!fs::exists(dir_ / *id / "meta.json")) {
    auto built = build(*id, {}, [](const std::string&) {});
    if (!built) return built.error();
  }
  auto meta = read_meta(dir_ / *id);
  if (!meta) return meta.error();
  runtime::RootfsSpec spec;
  for (const auto& layer : meta->layers) spec.lower_layers.push_back(layers_.path(layer));
  if (spec.lower_layers.empty()) spec.lower_layers = {dir_ / *id / "rootfs"};
  return spec;
}

Result<std::string> TemplateStore::resolve(const std::string& name) const {
  if (name == kHost) return std::string(kHost);
  if (valid_name(name) && (fs::exists(dir_ / name / "meta.json") || has_spec(name))) return name;
  std::string names;
  for (const auto& info : list()) names += (names.empty() ? "" : ", ") + info.name;
  return Error{"template", ENOENT, "unknown template '" + name + "'; known: " + names};
}

bool TemplateStore::is_built(const std::string& id) const {
  return id == kHost || fs::exists(dir_ / id / "meta.json");
}

std::vector<TemplateInfo> TemplateStore::list() const {
  std::vector<TemplateInfo> out;
  for (const char* name : {kBase, kCodeInterpreter}) {
    auto info = inspect(name);
    if (info) out.push_back(*info);
  }
  out.push_back(host_info());
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kBase || name == kCodeInterpreter || !valid_name(name)) continue;
    if (auto meta = read_meta(it->path())) out.push_back(info_from(*meta));
  }
  return out;
}

Result<TemplateInfo> TemplateStore::inspect(const std::string& name) const {
  if (name == kHost) return host_info();
  if (valid_name(name)) {
    if (auto meta = read_meta(dir_ / name)) return info_from(*meta);
    if (has_spec(name)) return unbuilt_info(name);
  }
  return Error{"template", ENOENT, "no template named '" + name + "'; see `abx template list`"};
}

std::filesystem::path TemplateStore::log_path(const std::string& name) const {
  return dir_ / (name + ".log");
}

Result<TemplateInfo> TemplateStore::publish(const Staged& staged) {
  const std::string& name = staged.meta.name;
  // A rebuilt layer may have replaced one that pooled sandboxes still use.
  runtime_.drain_pool();
  const fs::path building = dir_ / (kBuildingPrefix + name);
  auto made = [&]() -> Status {
    if (auto st = tree::remove_tree(building); !st) return st;
    if (auto st = tree::make_dir(building, 0755); !st) return st;
    if (auto st = write_meta(building, staged.meta); !st) return st;
    if (auto st = discard(dir_ / name); !st) return st;
    if (::rename(building.c_str(), (dir_ / name).c_str()) != 0)
      return Error::from_errno("template rename", (dir_ / name).string());
    return {};
  }();
  if (!made) {
    (void)tree::remove_tree(building);
    return made.error();
  }
  return inspect(name);
}

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
  LogFile log(log_path(name));
  const auto both = [&](const std::string& line) {
    log.line(line);
    progress(line);
  };
  both("step: building " + name + " (spec " + spec->hash + ", log " + log_path(name).string() +
       ")");
  auto layer = debian_layer(
      *spec, options.no_cache, [&](const std::string& l) { log.line(l); }, both);
  if (!layer) {
    log.line("failed: " + layer.error().message());
    return layer.error();
  }
  Staged staged;
  staged.meta.name = name;
  staged.meta.source = "mmdebstrap " + spec->suite + " (templates/" + name + ")";
  staged.meta.created_ms = unix_ms_now();
  staged.meta.spec_hash = spec->hash;
  staged.meta.layers = {*layer};
  staged.meta.size_bytes = layers_disk_usage(layers_, staged.meta.layers);
  auto info = publish(staged);
  if (!info) {
    log.line("failed: " + info.error().message());
    return info.error();
  }
  both("done: " + name + ", " + mib_text(info->size_bytes));
  return info;
}

// A template whose spec is a Sandboxfile in the repo (code-interpreter-v1:
// base plus the interpreter's packages, as a layer over base's).
Result<TemplateInfo> TemplateStore::build_from_spec_dir(const std::string& name,
                                                        const fs::path& dir,
                                                        const BuildOptions& options,
                                                        const BuildProgressFn& progress) {
  std::ifstream in(dir / "Sandboxfile");
  std::stringstream text;
  text << in.rdbuf();
  SandboxfileRequest request;
  request.name = name;
  request.context_dir = dir;
  request.sandboxfile = text.str();
  request.no_cache = options.no_cache;
  return build_sandboxfile(request, progress);
}

// What a Sandboxfile's FROM names: a template (built first if it has a spec),
// `debian:<suite>`, or an image archive in the build context.
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
  const fs::path archive = request.context_dir / image;
  if (image.find('/') != std::string::npos || image.ends_with(".tar")) {
    std::error_code ec;
    if (!fs::exists(archive, ec))
      return Error{"FROM", ENOENT, "no image archive '" + image + "' in the build context"};
    return import_layer(archive, image, progress);
  }
  if (!valid_name(image) || (!fs::exists(dir_ / image / "meta.json") && !has_spec(image)))
    return Error{"FROM", ENOENT,
                 "unknown template '" + image +
                     "' in FROM; use a template name, debian:<suite> or an image archive"};
  return read_meta(dir_ / image);
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
  LogFile log(log_path(request.name));
  const auto both = [&](const std::string& line) {
    log.line(line);
    progress(line);
  };
  auto fail = [&](const Error& error) {
    log.line("failed: " + error.message());
    return error;
  };
  auto base = from_image(from, request, both);
  if (!base) return fail(base.error());
  // Again, now that FROM's env and workdir are known: `ENV PATH=/opt/bin:$PATH`
  // must extend the image's PATH.
  sandboxfile::BaseImage image{base->env, base->workdir.empty() ? "/" : base->workdir};
  image.env.try_emplace("PATH", kDefaultPath);
  file = sandboxfile::parse(request.sandboxfile, request.build_args, image);
  if (!file) return fail(file.error());
  const fs::path scratch = dir_ / (kBuildingPrefix + request.name + ".scratch");
  if (auto st = tree::remove_tree(scratch); !st) return fail(st.error());
  if (auto st = tree::make_dir(scratch, 0700); !st) return fail(st.error());
  StepDeps deps{runtime_,
                layers_,
                request.context_dir,
                scratch,
                request.network,
                request.no_cache,
                [&](const std::string& l) { log.line(l); },
                both};
  auto made = run_steps(*file, *base, deps);
  (void)tree::remove_tree(scratch);
  if (!made) return fail(made.error());
  Staged staged;
  staged.meta = *made;
  staged.meta.name = request.name;
  staged.meta.source =
      "Sandboxfile (FROM " + from + ", " + std::to_string(file->steps.size()) + " steps)";
  staged.meta.created_ms = unix_ms_now();
  staged.meta.size_bytes = layers_disk_usage(layers_, staged.meta.layers);
  auto info = publish(staged);
  if (!info) return fail(info.error());
  both("done: " + request.name + ", " + std::to_string(info->layers) + " layers, " +
       mib_text(info->size_bytes));
  return info;
}

// One layer holding the flattened image; its id is the archive's digest, so
// importing the same image twice stores it once.
Result<TemplateMeta> TemplateStore::import_layer(const fs::path& image, const std::string& shown_as,
                                                 const BuildProgressFn& progress) {
  std::error_code ec;
  const fs::path digest_source = fs::is_directory(image, ec) ? image / "index.json" : image;
  auto digest = sha256_file(digest_source);
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
  return meta;
}

Result<TemplateInfo> TemplateStore::import_image(const std::string& name, const fs::path& image,
                                                 const std::string& origin,
                                                 const BuildProgressFn& progress) {
  if (auto st = check_buildable_name(name); !st) return st.error();
  auto lock = take_build_lock(dir_);
  if (!lock) return lock.error();
  LogFile log(log_path(name));
  const auto both = [&](const std::string& line) {
    log.line(line);
    progress(line);
  };
  auto imported = import_layer(image, origin, both);
  if (!imported) {
    log.line("failed: " + imported.error().message());
    return imported.error();
  }
  Staged staged;
  staged.meta = *imported;
  staged.meta.name = name;
  staged.meta.source = "image " + origin;
  staged.meta.created_ms = unix_ms_now();
  staged.meta.size_bytes = layers_disk_usage(layers_, staged.meta.layers);
  auto info = publish(staged);
  if (info) both("done: " + name + ", " + mib_text(info->size_bytes));
  return info;
}

UploadDir::~UploadDir() {
  if (!path.empty()) (void)tree::remove_tree(path);
}

Result<UploadDir> TemplateStore::upload_dir() {
  if (auto st = ensure_templates_dir(dir_); !st) return st.error();
  const fs::path path = dir_ / (std::string(kBuildingPrefix) + "upload-" + ids::random_hex(8));
  if (auto st = tree::make_dir(path, 0700); !st) return st.error();
  return UploadDir(path);
}

Status TemplateStore::remove(const std::string& name) {
  if (name == kHost) return Error{"template rm", EPERM, "host is built in and cannot be removed"};
  if (!valid_name(name) || !fs::exists(dir_ / name / "meta.json")) {
    return Error{"template rm", ENOENT, "no stored template named '" + name + "'"};
  }
  auto lock = take_build_lock(dir_);
  if (!lock) return lock.error();
  if (auto st = discard(dir_ / name); !st) return st;
  runtime_.drain_pool();
  std::set<std::string> referenced;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto meta = read_meta(it->path()))
      referenced.insert(meta->layers.begin(), meta->layers.end());
  }
  layers_.collect_garbage(referenced);
  return {};
}

}  // namespace abx::templates
