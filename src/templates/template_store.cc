// The lookup half of the template store: names, listing, the host template,
// publishing and removing; builds are in template_builds.cc.
#include <set>

#include "common/clock.h"
#include "common/ids.h"
#include "templates/catalog.h"
#include "templates/host_template.h"
#include "templates/spec.h"
#include "templates/store_common.h"
#include "templates/templates.h"
#include "templates/tree_ops.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;
using store::ensure_templates_dir;
using store::kBuildingPrefix;
using store::kHost;
using store::lock_builds;
using store::take_build_lock;
using store::try_build_lock;
using store::unknown_template;
using store::valid_id;

using store::kBase;
using store::kCodeInterpreter;
constexpr const char* kTrashPrefix = ".trash-";
// Templates removed while sandboxes still run on them: hidden from names and
// lists, their meta.json keeps their layers referenced until released.
constexpr const char* kRetiredDir = ".retired";

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
  info.owner = meta.owner;
  info.layers = meta.layers.size();
  info.allow_setid = meta.allow_setid;
  info.start_cmd = meta.start_cmd;
  info.ready_cmd = meta.ready_cmd;
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

// Moves template dir `name` into the retired area under a unique name, so a
// template of the same name may be built again meanwhile.
Status retire(const fs::path& templates_dir, const std::string& name) {
  const fs::path retired = templates_dir / kRetiredDir;
  std::error_code ec;
  if (!fs::is_directory(retired, ec)) {
    if (auto st = tree::make_dir(retired, 0700); !st) return st;
  }
  const fs::path to = retired / (name + "-" + ids::random_hex(8));
  if (::rename((templates_dir / name).c_str(), to.c_str()) != 0)
    return Error::from_errno("template rename", to.string());
  return {};
}

// The layers named by the meta.json of every dir directly under `dir`.
void add_layers_named_under(const fs::path& dir, std::set<std::string>& referenced) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto meta = read_meta(it->path()))
      referenced.insert(meta->layers.begin(), meta->layers.end());
  }
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

}  // namespace

TemplateStore::TemplateStore(std::filesystem::path templates_dir, runtime::Runtime& runtime,
                             std::function<bool(uint32_t)> registry_denied)
    : dir_(std::move(templates_dir)),
      runtime_(runtime),
      layers_(dir_),
      registry_denied_(std::move(registry_denied)) {
  sweep_interrupted(dir_, layers_);
}

Result<runtime::RootfsSpec> TemplateStore::rootfs(const std::string& name,
                                                  ProcessDefaults* defaults) {
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
  if (defaults)
    *defaults = {meta->env, meta->workdir, meta->user, meta->start_cmd, meta->ready_cmd};
  runtime::RootfsSpec spec;
  for (const auto& layer : meta->layers) spec.lower_layers.push_back(layers_.path(layer));
  if (spec.lower_layers.empty()) spec.lower_layers = {dir_ / *id / "rootfs"};
  spec.allow_setid = meta->allow_setid;
  return spec;
}

Result<std::string> TemplateStore::resolve(const std::string& name) const {
  if (name == kHost) return std::string(kHost);
  if (valid_id(name) && (fs::exists(dir_ / name / "meta.json") || has_spec(name))) return name;
  std::string names;
  for (const auto& info : list()) names += (names.empty() ? "" : ", ") + info.name;
  return unknown_template(name, names);
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
    if (name == kBase || name == kCodeInterpreter || !valid_id(name)) continue;
    if (auto meta = read_meta(it->path())) out.push_back(info_from(*meta));
  }
  return out;
}

Result<TemplateInfo> TemplateStore::inspect(const std::string& name) const {
  if (name == kHost) return host_info();
  if (valid_id(name)) {
    if (auto meta = read_meta(dir_ / name)) return info_from(*meta);
    if (has_spec(name)) return unbuilt_info(name);
  }
  return no_such_template(name);
}

Error TemplateStore::no_such_template(const std::string& name) {
  return Error{"template", ENOENT, "no template named '" + name + "'; see `abx template list`"};
}

Error TemplateStore::no_stored_template(const std::string& name) {
  return Error::with_message(
      "template '" + name + "' not found: `abx template list` shows the templates there are",
      ENOENT);
}

Error TemplateStore::name_taken(const std::string& name) {
  return Error::with_message("template name '" + name + "' is in use, choose another", EEXIST);
}

std::filesystem::path TemplateStore::log_path(const std::string& name) const {
  return dir_ / (name + ".log");
}

Result<TemplateInfo> TemplateStore::publish(TemplateMeta meta) {
  const std::string& name = meta.name;
  // The daemon builds under the caller's own id (id_for), so this guards only
  // against a caller of the store that did not.
  const std::string team = meta.owner.empty() ? store::kUnownedTeam : meta.owner;
  if (!visible_to(name, team) && owner_of(name)) return name_taken(name);
  meta.created_ms = unix_ms_now();
  meta.size_bytes = 0;
  for (const auto& layer : meta.layers) meta.size_bytes += disk_usage(layers_.path(layer));
  // A rebuilt layer may have replaced one that pooled sandboxes still use.
  runtime_.drain_pool();
  const fs::path building = dir_ / (kBuildingPrefix + name);
  auto made = [&]() -> Status {
    if (auto st = tree::remove_tree(building); !st) return st;
    if (auto st = tree::make_dir(building, 0755); !st) return st;
    if (auto st = write_meta(building, meta); !st) return st;
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

UploadDir::~UploadDir() {
  if (!path.empty()) (void)tree::remove_tree(path);
}

Result<UploadDir> TemplateStore::upload_dir() {
  if (auto st = ensure_templates_dir(dir_); !st) return st.error();
  const fs::path path = dir_ / (std::string(kBuildingPrefix) + "upload-" + ids::random_hex(8));
  if (auto st = tree::make_dir(path, 0700); !st) return st.error();
  return UploadDir(path);
}

Status TemplateStore::remove(const std::string& name, bool in_use) {
  if (name == kHost) return Error{"template rm", EPERM, "host is built in and cannot be removed"};
  if (!valid_id(name) || !fs::exists(dir_ / name / "meta.json")) {
    return no_stored_template(name);
  }
  auto lock = take_build_lock(dir_);
  if (!lock) return lock.error();
  if (auto st = in_use ? retire(dir_, name) : discard(dir_ / name); !st) return st;
  runtime_.drain_pool();
  collect_layer_garbage();
  return {};
}

void TemplateStore::release_retired(const std::set<std::string>& template_ids_in_use) {
  const fs::path retired = dir_ / kRetiredDir;
  std::error_code ec;
  if (!fs::is_directory(retired, ec)) return;
  auto lock = try_build_lock(dir_);
  if (!lock) return;  // a build may be committing layers no meta.json names yet
  bool released = false;
  for (fs::directory_iterator it(retired, ec), end; !ec && it != end; it.increment(ec)) {
    auto meta = read_meta(it->path());
    if (meta && template_ids_in_use.count(meta->name)) continue;
    (void)tree::remove_tree(it->path());
    released = true;
  }
  if (released) collect_layer_garbage();
  if (fs::is_empty(retired, ec)) fs::remove(retired, ec);  // keeps the next call a single stat
}

void TemplateStore::collect_layer_garbage() {
  std::set<std::string> referenced;
  add_layers_named_under(dir_, referenced);
  add_layers_named_under(dir_ / kRetiredDir, referenced);
  layers_.collect_garbage(referenced);
}

}  // namespace abx::templates
