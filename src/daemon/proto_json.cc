#include "daemon/proto_json.h"

#include "common/base64.h"
#include "common/json_text.h"
#include "common/process_events.h"
#include "daemon/codec.h"

namespace abx::daemon::proto_json {

using nlohmann::json;
using runtime::sandbox_fs::FileType;

std::string start_event(int pid) {
  return json_text::dump(json{{"event", {{"start", {{"pid", pid}}}}}});
}

std::string data_event(std::string_view stream_name, std::string_view bytes) {
  return e2b::data_event(stream_name, bytes);
}

std::string end_event(const runtime::ExitInfo& exit, const std::string& error) {
  json end = json::object();
  if (exit.exit_code != 0) end["exitCode"] = exit.exit_code;
  if (exit.exited) end["exited"] = true;
  if (!exit.status.empty()) end["status"] = exit.status;
  if (!error.empty()) end["error"] = error;
  return json_text::dump(json{{"event", {{"end", end}}}});
}

std::string keepalive_event() { return R"({"event":{"keepalive":{}}})"; }

std::string permissions_string(FileType type, uint32_t mode) {
  std::string out;
  out.push_back(type == FileType::kDirectory ? 'd' : type == FileType::kSymlink ? 'L' : '-');
  static constexpr char kBits[] = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i) out.push_back((mode & (0400u >> i)) ? kBits[i] : '-');
  return out;
}

// A symlink is reported as envd reports it: the type and permission bits of
// what it points at, its own ("Lrwxrwxrwx") in `permissions`.
json entry_info(const runtime::sandbox_fs::EntryInfo& entry) {
  static constexpr const char* kTypes[] = {"FILE_TYPE_FILE", "FILE_TYPE_DIRECTORY",
                                           "FILE_TYPE_SYMLINK", "FILE_TYPE_UNSPECIFIED"};
  const bool link = entry.type == FileType::kSymlink;
  const FileType type = link ? entry.target_type : entry.type;
  const uint32_t mode = link ? entry.target_mode : entry.mode;
  json out = {{"name", entry.name}, {"path", entry.path}};
  if (type != FileType::kOther) out["type"] = kTypes[static_cast<int>(type)];
  if (entry.size != 0) out["size"] = std::to_string(entry.size);
  if (mode != 0) out["mode"] = mode;
  out["permissions"] = permissions_string(entry.type, link ? 0777 : entry.mode);
  if (!entry.owner.empty()) out["owner"] = entry.owner;
  if (!entry.group.empty()) out["group"] = entry.group;
  out["modifiedTime"] = codec::rfc3339(entry.mtime_sec, entry.mtime_nsec, true);
  if (link) out["symlinkTarget"] = entry.symlink_target;
  if (!entry.metadata.empty()) out["metadata"] = entry.metadata;
  return out;
}

std::string error_body(const std::string& code, const std::string& message) {
  return json_text::dump(json{{"code", code}, {"message", message}});
}

const json* field(const json& object, const char* camel, const char* snake) {
  if (!object.is_object()) return nullptr;
  for (const char* name : {camel, snake}) {
    const auto it = object.find(name);
    if (it != object.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

}  // namespace abx::daemon::proto_json
