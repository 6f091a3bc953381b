// Template names → root filesystems for the runtime; building, listing and
// removing stored templates.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "runtime/runtime.h"
#include "templates/catalog.h"
#include "templates/layer_store.h"
#include "templates/registry.h"
#include "templates/spec.h"

namespace abx::templates {

namespace fs = std::filesystem;

struct TemplateInfo {
  std::string name;      // e.g. "host"
  std::string resolved;  // the template a name resolves to (an alias names its target)
  std::string source;    // human text: "read-only views of the host's system directories"
  bool built = true;     // false: built from its spec on first use (or `abx template build`)
  uint64_t size_bytes = 0;
  int64_t created_ms = 0;                  // unix ms; 0 when unknown
  std::map<std::string, std::string> env;  // defaults for processes (from an image's config)
  std::string workdir;
  std::string user;
  size_t layers = 0;  // overlay layers it is made of (shared with templates built FROM it)
  std::string owner;  // the team that built or imported it; "" for one built on first use
  // Set-id programs (sudo) work in its sandboxes (TemplateMeta::allow_setid).
  bool allow_setid = false;
  std::string start_cmd;  // TemplateMeta::start_cmd
  std::string ready_cmd;
};

// What a template asks of the processes started in it (an image's config, a
// Sandboxfile's ENV, WORKDIR and USER); empty fields ask nothing.
struct ProcessDefaults {
  std::map<std::string, std::string> env;
  std::string workdir;
  std::string user;
  std::string start_cmd;  // run in the background when a sandbox is created (TemplateMeta)
  std::string ready_cmd;  // the create waits until it exits 0
};

// Progress lines of a build ("step: ...", "packages: ...", "extracted: ...").
using BuildProgressFn = std::function<void(const std::string& line)>;

struct BuildOptions {
  bool no_cache = false;  // rebuild the rootfs even if the cache holds this spec
  std::string owner;      // the team asking (recorded in meta.json)
};

// The port the in-sandbox server (agent_sandbox.server) listens on.
inline constexpr uint16_t kServerPort = 9000;

inline constexpr uint32_t kDefaultStepTimeoutS = 30 * 60;
inline constexpr uint32_t kMaxStepTimeoutS = 24 * 60 * 60;

// A template built from a Sandboxfile (a Dockerfile subset; see sandboxfile.h).
struct SandboxfileRequest {
  std::string name;
  fs::path context_dir;     // COPY/ADD sources, and FROM image archives, are taken from here
  std::string sandboxfile;  // the file's text
  std::map<std::string, std::string> build_args;
  bool no_cache = false;  // run every step, even those whose layer exists
  bool network = true;    // RUN steps get a network (NAT out, never the host); false: loopback
  std::string owner;      // the team asking (recorded in meta.json)
  uint32_t step_timeout_s = kDefaultStepTimeoutS;  // a RUN running longer fails the build
  // For a FROM naming a registry image: the caller's credentials entry per
  // registry host (registry::Access), and whether plain HTTP is allowed.
  std::map<std::string, std::string> registry_credentials;
  bool registry_insecure = false;
  // Told each step's index in the parsed Sandboxfile as it starts (see
  // StepStartedFn in sandboxfile_build.h): who reports a failure by step.
  std::function<void(size_t index)> step_started;
};

// A private dir for one upload (a build context, an image); removed with
// this object, or by the next daemon start if the daemon dies first.
struct UploadDir {
  fs::path path;
  explicit UploadDir(fs::path p) : path(std::move(p)) {}
  UploadDir(UploadDir&& other) noexcept : path(std::exchange(other.path, {})) {}
  UploadDir(const UploadDir&) = delete;
  UploadDir& operator=(const UploadDir&) = delete;
  UploadDir& operator=(UploadDir&&) = delete;
  ~UploadDir();
};

// A template made of a sandbox snapshot's layers over the layers of the
// template that sandbox was made from (`abx snapshot to-template`).
struct SnapshotTemplateRequest {
  std::string name;
  std::string owner;
  std::string origin;  // for `template list`: "snapshot snap… of sandbox …"
  // The snapshot's layers, topmost first: each its id in the daemon's
  // snapshot store and its dir there (the daemon's copy of a sandbox's
  // writable layer, runtime/layer_copy).
  std::vector<std::pair<std::string, fs::path>> snapshot_layers;
  std::vector<fs::path> template_layers;  // this store's layer dirs, topmost first
  ProcessDefaults defaults;
  bool allow_setid = false;  // as the template under it had
};

class TemplateStore {
 public:
  // `runtime` tells which host ids sandbox root and `user` map to, so template
  // files get owners the sandbox can use. It must outlive the store. Removes
  // what an interrupted build left behind.
  // Runs build steps in sandboxes of `runtime`; `templates_dir` holds the
  // templates and their layers and may be shared by several daemons.
  // `registry_denied`: the addresses a registry may not resolve to (see
  // registry::check_host); none denied when empty.
  TemplateStore(std::filesystem::path templates_dir, runtime::Runtime& runtime,
                std::function<bool(uint32_t)> registry_denied = {});
  // Resolve a name ("base", "host", "code-interpreter-v1") and make sure its
  // files exist, building them on first use. Fills `defaults` when given.
  Result<runtime::RootfsSpec> rootfs(const std::string& name, ProcessDefaults* defaults = nullptr);
  // The canonical template id a name resolves to, or an error naming the known templates.
  Result<std::string> resolve(const std::string& name) const;
  // Whether sandboxes of `id` (a resolved name) start without building first.
  bool is_built(const std::string& id) const;
  std::vector<TemplateInfo> list() const;
  Result<TemplateInfo> inspect(const std::string& name) const;

  // Tenancy. The catalog's built-ins (base, host, code-interpreter-v1, any
  // other name with a spec in the spec dir, and names that resolve to them)
  // belong to every team; any other template to the team that built or
  // imported it.
  bool is_builtin(const std::string& name) const;
  // Whether `team` may see and use template `name`: a built-in for every
  // team, a stored template for its owner's team only ("default" owns one made
  // before owners existed). False for an unknown name too, so a foreign
  // template takes the unknown one's path.
  bool visible_to(const std::string& name, const std::string& team) const;
  // The team owning stored template `name`; nothing when none is stored under
  // that name (a built-in not built yet, an unknown name).
  std::optional<std::string> owner_of(const std::string& name) const;
  // What resolve() answers for an unknown name, listing only what `team` sees:
  // the answer for a foreign template too.
  Error unknown_for(const std::string& name, const std::string& team) const;
  // Names are per team. A stored template's id is its name for a built-in,
  // for the default team's and for one stored before names were per team
  // (its owner keeps it); any other team's is `name@team`. Two teams may use
  // one name, and neither can learn that the other does.
  // The id under which `team` builds, imports or replaces template `name`;
  // an error when `name` cannot be a template name.
  Result<std::string> id_for(const std::string& team, const std::string& name) const;
  // The template id `name` means to `team`: its own template of that name, a
  // built-in, or the id itself; else unknown_for's error.
  Result<std::string> resolve_for(const std::string& team, const std::string& name) const;
  // The name users gave template `id`.
  static std::string name_of_id(const std::string& id);
  // What inspect() and remove() answer for an unknown name.
  static Error no_such_template(const std::string& name);
  static Error no_stored_template(const std::string& name);
  // What a build or import under a name another team owns is refused with.
  static Error name_taken(const std::string& name);

  // Builds `name` from its spec (templates/<name>/spec.toml). A build already
  // running for any template is waited for first; the template is listed only
  // once it is complete. The log is kept at log_path(name).
  Result<TemplateInfo> build(const std::string& name, const BuildOptions& options,
                             const BuildProgressFn& progress);
  // Builds `request.name` from a Sandboxfile: each step is a cached layer.
  Result<TemplateInfo> build_sandboxfile(const SandboxfileRequest& request,
                                         const BuildProgressFn& progress);
  // Makes template `name` from an OCI image layout (dir or tar) or a `docker
  // save` tar; `origin` says where it came from, for `template list`.
  Result<TemplateInfo> import_image(const std::string& name, const fs::path& image,
                                    const std::string& origin, const std::string& owner,
                                    const BuildProgressFn& progress);
  Result<UploadDir> upload_dir();
  // Makes template `request.name` of a snapshot: each snapshot layer is
  // copied once into a layer of this store (a later template of the same
  // snapshot shares it), the template's own layers are shared as they are.
  Result<TemplateInfo> from_snapshot(const SnapshotTemplateRequest& request,
                                     const BuildProgressFn& progress);
  // Sends stored template `name` to a registry as an OCI image: its layers
  // bottom-up, its env, workdir and user in the image config.
  Result<TemplateInfo> push(const std::string& name, const registry::Access& access,
                            const BuildProgressFn& progress);
  // Template `name` as a tar of an OCI image layout (what push sends), in
  // `into` (a private dir, see upload_dir); `abx template deploy` copies it to
  // another daemon's import.
  Result<fs::path> export_image(const std::string& name, const fs::path& into,
                                const BuildProgressFn& progress);
  // Makes template `name` from a registry's image (as import_image does).
  Result<TemplateInfo> pull(const std::string& name, const registry::Access& access,
                            const std::string& owner, const BuildProgressFn& progress);
  // Removes a stored template and the layers no other template uses. One
  // that live sandboxes use (`in_use`) is retired instead: it no longer
  // resolves or lists, but its layers stay until release_retired() finds no
  // sandbox of it left.
  Status remove(const std::string& name, bool in_use);
  // Deletes the retired templates none of `template_ids_in_use` (the live
  // sandboxes' template ids) names any more, and the layers only they used.
  // Cheap when nothing is retired; skipped (for a later call) while a build runs.
  void release_retired(const std::set<std::string>& template_ids_in_use);
  std::filesystem::path log_path(const std::string& name) const;

 private:
  // Lists `meta` (whose layers are committed) as a template, stamping its
  // creation time and size; replaces a template of that name unless another
  // team owns it. Called with the build lock held.
  Result<TemplateInfo> publish(TemplateMeta meta);
  Result<std::string> debian_layer(const DebianSpec& spec, bool no_cache,
                                   const BuildProgressFn& log, const BuildProgressFn& progress);
  Result<TemplateInfo> build_from_spec_dir(const std::string& name, const fs::path& dir,
                                           const BuildOptions& options,
                                           const BuildProgressFn& progress);
  Result<TemplateMeta> import_layer(const fs::path& image, const std::string& shown_as,
                                    const BuildProgressFn& progress);
  // Removes the layers no stored or retired template names.
  void collect_layer_garbage();
  // Writes template `name` as an OCI image layout into `layout` (made here).
  Status export_layout(const std::string& name, const fs::path& layout,
                       const BuildProgressFn& progress);
  // A FROM's registry image, pulled and unpacked into one layer.
  Result<TemplateMeta> pull_layer(const registry::Access& access, const BuildProgressFn& progress);
  Result<TemplateMeta> from_image(const std::string& image, const SandboxfileRequest& request,
                                  const BuildProgressFn& progress);

  // Before skopeo dials `ref`: refused where registry_denied_ says.
  Status check_registry(const registry::Reference& ref) const;

  std::filesystem::path dir_;
  runtime::Runtime& runtime_;
  LayerStore layers_;
  std::function<bool(uint32_t)> registry_denied_;
};

}  // namespace abx::templates
