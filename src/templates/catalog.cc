#include "templates/catalog.h"

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "common/fd_io.h"
#include "common/file_replacement.h"

namespace abx::templates {
namespace {

constexpr const char* kMetaFile = "meta.json";

nlohmann::json to_json(const TemplateMeta& meta) {
  nlohmann::json json;
  json["name"] = meta.name;
  json["source"] = meta.source;
  json["created_ms"] = meta.created_ms;
  json["size_bytes"] = meta.size_bytes;
  json["spec_hash"] = meta.spec_hash;
  json["layers"] = meta.layers;
  json["env"] = meta.env;
  json["workdir"] = meta.workdir;
  json["user"] = meta.user;
  json["owner"] = meta.owner;
  json["allow_setid"] = meta.allow_setid;
  json["start_cmd"] = meta.start_cmd;
  json["ready_cmd"] = meta.ready_cmd;
  return json;
}

}  // namespace

Status write_meta(const fs::path& template_dir, const TemplateMeta& meta) {
  const fs::path path = template_dir / kMetaFile;
  return replace_file(path, to_json(meta).dump(2) + "\n");
}

Result<TemplateMeta> read_meta(const fs::path& template_dir) {
  const fs::path path = template_dir / kMetaFile;
  auto text = read_file(path);
  if (!text) return Error{"template", ENOENT, path.string()};
  try {
    const auto json = nlohmann::json::parse(*text);
    TemplateMeta meta;
    meta.name = json.value("name", "");
    meta.source = json.value("source", "");
    meta.created_ms = json.value("created_ms", int64_t{0});
    meta.size_bytes = json.value("size_bytes", uint64_t{0});
    meta.spec_hash = json.value("spec_hash", "");
    meta.layers = json.value("layers", std::vector<std::string>{});
    meta.env = json.value("env", std::map<std::string, std::string>{});
    meta.workdir = json.value("workdir", "");
    meta.user = json.value("user", "");
    meta.owner = json.value("owner", "");
    meta.allow_setid = json.value("allow_setid", false);
    meta.start_cmd = json.value("start_cmd", "");
    meta.ready_cmd = json.value("ready_cmd", "");
    return meta;
  } catch (const nlohmann::json::exception& e) {
    return Error{"template meta", EINVAL, path.string() + ": " + e.what()};
  }
}

uint64_t disk_usage(const fs::path& dir) {
  std::set<std::pair<dev_t, ino_t>> seen;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (st.st_nlink > 1 && !S_ISDIR(st.st_mode) && !seen.insert({st.st_dev, st.st_ino}).second)
      continue;
    total += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

}  // namespace abx::templates
