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
using store::valid_name;

bool builtin_id(const std::string& id) {
  return id == kHost || id == kBase || id == kCodeInterpreter;
}

}  // namespace

bool TemplateStore::is_builtin(const std::string& name) const {
  if (builtin_id(name)) return true;
  auto id = resolve(name);  // an alias resolves to its target
  return id && builtin_id(*id);
}

std::optional<std::string> TemplateStore::owner_of(const std::string& name) const {
  if (!valid_name(name)) return std::nullopt;
  auto meta = read_meta(dir_ / name);
  if (!meta) return std::nullopt;
  return meta->owner.empty() ? std::string(kUnownedTeam) : meta->owner;
}

bool TemplateStore::visible_to(const std::string& name, const std::string& team) const {
  if (builtin_id(name)) return true;
  if (auto owner = owner_of(name)) return *owner == team || is_builtin(name);
  // Not stored: a spec of the catalog (built on first use, for everyone) or unknown.
  return valid_name(name) && has_spec(name);
}

Error TemplateStore::unknown_for(const std::string& name, const std::string& team) const {
  std::string names;
  for (const auto& info : list()) {
    if (visible_to(info.name, team)) names += (names.empty() ? "" : ", ") + info.name;
  }
  return store::unknown_template(name, names);
}

}  // namespace abx::templates
