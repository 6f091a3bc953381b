// Which team may see a template: built-ins are everyone's, any other
// template its owner's. The daemon's routes and creates ask here, so a
// foreign template and an unknown one get the same answer.
#include "templates/spec.h"
#include "templates/store_common.h"
#include "templates/templates.h"

namespace abx::templates {
namespace {

using store::kBase;
using store::kCodeInterpreter;
using store::kHost;
using store::kUnownedTeam;
using store::valid_id;
using store::valid_name;

bool builtin_id(const std::string& id) {
  return id == kHost || id == kBase || id == kCodeInterpreter;
}

}  // namespace

// The shipped catalog's specs are base and code-interpreter-v1; a spec dir
// an operator adds (ABX_TEMPLATE_SPECS) is theirs too, so it counts alike.
bool TemplateStore::is_builtin(const std::string& name) const {
  if (builtin_id(name) || (valid_name(name) && has_spec(name))) return true;
  auto id = resolve(name);  // an alias resolves to its target
  return id && builtin_id(*id);
}

std::optional<std::string> TemplateStore::owner_of(const std::string& name) const {
  if (!valid_id(name)) return std::nullopt;
  auto meta = read_meta(dir_ / name);
  if (!meta) return std::nullopt;
  return meta->owner.empty() ? std::string(kUnownedTeam) : meta->owner;
}

bool TemplateStore::visible_to(const std::string& name, const std::string& team) const {
  if (builtin_id(name)) return true;  // the common case, without a lookup
  if (auto owner = owner_of(name); owner && *owner == team) return true;
  return is_builtin(name);
}

Error TemplateStore::unknown_for(const std::string& name, const std::string& team) const {
  std::string names;
  for (const auto& info : list()) {
    if (visible_to(info.name, team)) names += (names.empty() ? "" : ", ") + name_of_id(info.name);
  }
  return store::unknown_template(name, names);
}

Result<std::string> TemplateStore::id_for(const std::string& team, const std::string& name) const {
  if (!valid_name(name) || name == kHost) return store::unbuildable_name(name);
  if (is_builtin(name)) return name;  // an admin's to replace (the daemon checks)
  const std::string scoped = name + "@" + team;
  if (fs::exists(dir_ / scoped / "meta.json")) return scoped;
  const auto owner = owner_of(name);
  return (owner ? *owner == team : team == kUnownedTeam) ? name : scoped;
}

Result<std::string> TemplateStore::resolve_for(const std::string& team,
                                               const std::string& name) const {
  const auto at = name.rfind('@');
  if (at != std::string::npos) {
    if (name.substr(at + 1) == team && valid_id(name) && is_built(name)) return name;
  } else if (valid_name(name)) {
    const std::string scoped = name + "@" + team;
    if (fs::exists(dir_ / scoped / "meta.json")) return scoped;
    if (visible_to(name, team)) return resolve(name);
  }
  return unknown_for(name, team);
}

std::string TemplateStore::name_of_id(const std::string& id) { return id.substr(0, id.rfind('@')); }

}  // namespace abx::templates
