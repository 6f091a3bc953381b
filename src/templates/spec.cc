#include "templates/spec.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/fd_io.h"

namespace abx::templates {
namespace {

constexpr int kMaxExtends = 4;

// FNV-1a: a stable cache key (not a security boundary: the cache is ours).
uint64_t fnv1a(const std::string& text, uint64_t hash = 1469598103934665603ULL) {
  for (const char raw : text) {
    const auto c = static_cast<unsigned char>(raw);
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string hex(uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

Result<std::string> read_spec_file(const fs::path& path) {
  auto text = read_file(path);
  if (!text) return Error{"template spec", ENOENT, path.string()};
  return text;
}

fs::path exe_dir() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).parent_path();
}

Status merge_file(const fs::path& spec_dir, DebianSpec& spec, int depth, std::string& digest_input);

Status merge_table(const fs::path& dir, const toml::table& table, DebianSpec& spec, int depth,
                   std::string& digest_input) {
  if (auto parent = table["extends"].value<std::string>()) {
    if (depth >= kMaxExtends) return Error{"template spec", ELOOP, dir.string() + ": extends loop"};
    if (auto st = merge_file(dir.parent_path() / *parent, spec, depth + 1, digest_input); !st)
      return st;
  }
  spec.suite = table["suite"].value_or(spec.suite);
  spec.variant = table["variant"].value_or(spec.variant);
  spec.mirror = table["mirror"].value_or(spec.mirror);
  if (const auto* node = table.get("allow_setid")) {
    const auto flag = node->value_exact<bool>();
    if (!flag)
      return Error{"template spec", EINVAL, dir.string() + ": allow_setid must be true or false"};
    spec.allow_setid = *flag;
  }
  if (const auto* packages = table["packages"].as_array()) {
    for (const auto& package : *packages) {
      if (auto name = package.value<std::string>()) spec.packages.push_back(*name);
    }
  }
  if (auto hook = table["customize"].value<std::string>()) {
    const fs::path hook_path = dir / *hook;
    auto text = read_spec_file(hook_path);
    if (!text) return text.error();
    digest_input += *text;
    spec.customize_hooks.push_back(hook_path);
  }
  return {};
}

Status merge_file(const fs::path& spec_dir, DebianSpec& spec, int depth,
                  std::string& digest_input) {
  const fs::path file = spec_dir / "spec.toml";
  auto text = read_spec_file(file);
  if (!text) return text.error();
  digest_input += *text;
  try {
    return merge_table(spec_dir, toml::parse(*text, file.string()), spec, depth, digest_input);
  } catch (const toml::parse_error& e) {
    return Error{"template spec", EINVAL, file.string() + ": " + std::string(e.description())};
  }
}

}  // namespace

Result<fs::path> spec_root() {
  if (const char* env = std::getenv("ABX_TEMPLATE_SPECS"); env && *env) return fs::path(env);
  const fs::path exe = exe_dir();
  for (const fs::path& candidate :
       {exe.parent_path() / "templates", exe.parent_path() / "share/abx/templates",
        fs::path("/usr/share/abx/templates")}) {
    std::error_code ec;
    if (fs::exists(candidate / "base/spec.toml", ec)) return candidate;
  }
  return Error{"template spec", ENOENT,
               "no templates/ spec dir found beside " + exe.string() +
                   "; set ABX_TEMPLATE_SPECS to the repo's templates/ dir"};
}

bool has_spec(const std::string& name) {
  auto root = spec_root();
  std::error_code ec;
  return root && (fs::exists(*root / name / "spec.toml", ec) || sandboxfile_spec(name));
}

std::optional<fs::path> sandboxfile_spec(const std::string& name) {
  auto root = spec_root();
  std::error_code ec;
  if (!root || !fs::exists(*root / name / "Sandboxfile", ec)) return std::nullopt;
  return *root / name;
}

Result<DebianSpec> load_spec(const std::string& name) {
  auto root = spec_root();
  if (!root) return root.error();
  DebianSpec spec;
  spec.name = name;
  std::string digest_input;
  if (auto st = merge_file(*root / name, spec, 0, digest_input); !st) return st.error();
  spec.hash = hex(fnv1a(digest_input));
  return spec;
}

}  // namespace abx::templates
