#include "mcp/file_entries.h"

namespace abx::mcp {
namespace {

using nlohmann::json;

std::string type_name(const std::string& proto_type) {
  if (proto_type == "FILE_TYPE_DIRECTORY") return "directory";
  if (proto_type == "FILE_TYPE_SYMLINK") return "symlink";
  if (proto_type == "FILE_TYPE_FILE") return "file";
  return "other";
}

// proto3 JSON carries int64 as a string.
long long size_of(const json& entry) {
  const auto it = entry.find("size");
  if (it == entry.end()) return 0;
  if (it->is_number_integer()) return it->get<long long>();
  return it->is_string() ? std::stoll(it->get<std::string>()) : 0;
}

}  // namespace

json entry_summary(const json& entry_info) {
  return {{"name", entry_info.value("name", "")},
          {"path", entry_info.value("path", "")},
          {"type", type_name(entry_info.value("type", ""))},
          {"size", size_of(entry_info)}};
}

std::string entry_line(const json& summary) {
  const std::string type = summary.value("type", "other");
  const char marker = type == "directory" ? 'd' : type == "symlink" ? 'l' : '-';
  return std::string(1, marker) + " " + std::to_string(summary.value("size", 0LL)) + "\t" +
         summary.value("path", "");
}

Status require_file(const e2b::SandboxPlane& plane, const std::string& path) {
  auto stat = plane.rpc("filesystem.Filesystem/Stat", {{"path", path}});
  if (!stat) {
    return Error{"cannot read " + path + " in sandbox " + plane.id() + ": " +
                 stat.error().message() + "; file_list shows what exists"};
  }
  const std::string type = type_name(stat->value("entry", json::object()).value("type", ""));
  if (type == "directory") return Error{path + " is a directory; use file_list to see inside"};
  return {};
}

}  // namespace abx::mcp
