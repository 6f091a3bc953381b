// Templates to and from registries: push exports a template's layers as an
// OCI image layout that skopeo sends; pull has skopeo fetch an image into a
// private dir and imports it as any image upload is. export_image gives the
// same layout as a tar, for another daemon's import.
#include "common/dir_tar.h"
#include "templates/oci_export.h"
#include "templates/store_common.h"
#include "templates/templates.h"
#include "templates/tree_ops.h"

namespace abx::templates {

using namespace store;

Status TemplateStore::export_layout(const std::string& name, const fs::path& layout,
                                    const BuildProgressFn& progress) {
  if (name == kHost)
    return Error{"export host", EINVAL,
                 "host is a view of this machine's dirs, not an image; use a built template"};
  auto id = resolve(name);
  if (!id) return id.error();
  if (!fs::exists(dir_ / *id / "meta.json"))
    return Error{"export " + name, ENOENT,
                 "template '" + name + "' is not built yet; run `abx template build " + name + "`"};
  // Held while the layers are read, so a removal cannot take them meanwhile.
  auto lock = take_build_lock(dir_);
  if (!lock) return lock.error();
  auto meta = read_meta(dir_ / *id);
  if (!meta) return meta.error();
  std::vector<fs::path> layers;  // lowest first; meta lists the topmost first
  for (auto it = meta->layers.rbegin(); it != meta->layers.rend(); ++it)
    layers.push_back(layers_.path(*it));
  if (layers.empty()) layers.push_back(dir_ / *id / "rootfs");
  const ExportConfig config{meta->env,        meta->workdir,   meta->user,
                            meta->created_ms, meta->start_cmd, meta->ready_cmd};
  const IdShift shift{runtime_.host_uid(0), runtime_.host_gid(0)};
  if (auto st = tree::make_dir(layout, 0700); !st) return st.error();
  progress("step: exporting " + name + " as an OCI image");
  return write_oci_layout(layers, config, shift, layout, progress);
}

Status TemplateStore::check_registry(const registry::Reference& ref) const {
  return registry_denied_ ? registry::check_host(ref, registry_denied_) : Status{};
}

Result<TemplateInfo> TemplateStore::push(const std::string& name, const registry::Access& access,
                                         const BuildProgressFn& progress) {
  if (auto st = check_registry(access.ref); !st) return st.error();
  auto private_dir = upload_dir();
  if (!private_dir) return private_dir.error();
  const fs::path layout = private_dir->path / "image";
  if (auto st = export_layout(name, layout, progress); !st) return st.error();
  progress("step: pushing to " + access.ref.text());
  if (auto st = registry::push(layout, access, private_dir->path, progress); !st) return st.error();
  return inspect(name);
}

Result<fs::path> TemplateStore::export_image(const std::string& name, const fs::path& into,
                                             const BuildProgressFn& progress) {
  const fs::path layout = into / "image";
  if (auto st = export_layout(name, layout, progress); !st) return st.error();
  const fs::path tar = into / "image.tar";
  if (auto st = write_dir_tar(layout, {}, tar); !st) return st.error();
  if (auto st = tree::remove_tree(layout); !st) return st.error();  // the tar holds it all
  return tar;
}

Result<TemplateInfo> TemplateStore::pull(const std::string& name, const registry::Access& access,
                                         const std::string& owner,
                                         const BuildProgressFn& progress) {
  if (auto st = check_buildable_name(name); !st) return st.error();
  if (auto st = check_registry(access.ref); !st) return st.error();
  auto private_dir = upload_dir();
  if (!private_dir) return private_dir.error();
  const fs::path layout = private_dir->path / "image";
  progress("step: pulling " + access.ref.text());
  if (auto st = registry::pull(access, layout, private_dir->path, progress); !st) return st.error();
  return import_image(name, layout, access.ref.text(), owner, progress);
}

Result<TemplateMeta> TemplateStore::pull_layer(const registry::Access& access,
                                               const BuildProgressFn& progress) {
  if (auto st = check_registry(access.ref); !st) return st.error();
  auto private_dir = upload_dir();
  if (!private_dir) return private_dir.error();
  const fs::path layout = private_dir->path / "image";
  progress("step: pulling " + access.ref.text());
  if (auto st = registry::pull(access, layout, private_dir->path, progress); !st) return st.error();
  return import_layer(layout, access.ref.text(), progress);
}

}  // namespace abx::templates
