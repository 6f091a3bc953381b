// Specs of the templates built from Debian packages (templates/<name>/spec.toml
// in the repo): what mmdebstrap installs, and the hash that keys the cache.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::templates {

namespace fs = std::filesystem;

struct DebianSpec {
  std::string name;  // the template it builds, e.g. "base"
  std::string suite = "bookworm";
  std::string variant = "minbase";
  std::string mirror;
  std::vector<std::string> packages;
  std::vector<fs::path> customize_hooks;  // executables run by mmdebstrap with the root as $1
  std::string hash;                       // hex digest of everything above (files included)
  // `allow_setid = true`: set-id programs work in its sandboxes (no
  // no_new_privs; RootfsSpec::allow_setid). Only a checked-in spec.toml can
  // say so; templates built FROM it inherit it, imported images never have it.
  // Part of the hash too: it is in spec.toml's text.
  bool allow_setid = false;
};

// The dir holding the specs: $ABX_TEMPLATE_SPECS, else templates/ beside the
// source tree the binary was built in, else <prefix>/share/abx/templates.
Result<fs::path> spec_root();

// Whether `name` has a spec (so it can be built on demand).
bool has_spec(const std::string& name);

// The spec dir of a template built from templates/<name>/Sandboxfile (a
// layer over another template) rather than from a spec.toml.
std::optional<fs::path> sandboxfile_spec(const std::string& name);

// Reads templates/<name>/spec.toml, following `extends` (packages and hooks
// of the parent come first).
Result<DebianSpec> load_spec(const std::string& name);

}  // namespace abx::templates
