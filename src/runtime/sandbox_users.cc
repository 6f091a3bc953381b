#include "runtime/sandbox_users.h"

#include <unistd.h>

#include <charconv>
#include <optional>
#include <sstream>
#include <vector>

#include "runtime/sandbox_fs.h"

namespace abx::runtime {
namespace {

constexpr size_t kMaxAccountFile = 4 << 20;

std::string read_small_file(const Sandbox& sb, const std::string& path) {
  auto fd = sandbox_fs::open_read_as(sb, path, 0, 0);  // as sandbox root, inside
  if (!fd) return {};
  std::string text;
  char buffer[8192];
  ssize_t n;
  while (text.size() < kMaxAccountFile && (n = ::read(fd->get(), buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<size_t>(n));
  return text;
}

std::optional<uint32_t> number(const std::string& text) {
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// The colon-separated fields of the line whose field `key_index` is `key`.
std::vector<std::string> find_entry(const std::string& file, const std::string& key,
                                    size_t key_index) {
  std::istringstream lines(file);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string field; std::getline(parts, field, ':');) fields.push_back(field);
    if (fields.size() > key_index && fields[key_index] == key) return fields;
  }
  return {};
}

Result<uint32_t> lookup_group(const Sandbox& sb, const std::string& group) {
  if (auto gid = number(group)) return *gid;
  const auto entry = find_entry(read_small_file(sb, "/etc/group"), group, 0);
  if (entry.size() > 2)
    if (auto gid = number(entry[2])) return *gid;
  return Error{"user", ENOENT, "no group '" + group + "' in the sandbox's /etc/group"};
}

}  // namespace

Result<SandboxUserIds> lookup_user(const Sandbox& sb, const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string user = spec.substr(0, colon);
  const std::string passwd = read_small_file(sb, "/etc/passwd");
  SandboxUserIds ids;
  std::vector<std::string> entry;
  if (auto uid = number(user)) {
    ids.uid = *uid;
    ids.name = user;
    entry = find_entry(passwd, user, 2);
  } else {
    entry = find_entry(passwd, user, 0);
    if (entry.size() < 3)
      return Error{
          "user", ENOENT,
          "no user '" + user + "' in the sandbox's /etc/passwd; use a uid or add the user"};
    ids.uid = number(entry[2]).value_or(0);
  }
  if (entry.size() > 5) {
    ids.name = entry[0];
    ids.gid = number(entry[3]).value_or(0);
    ids.home = entry[5].empty() ? "/" : entry[5];
  }
  if (colon != std::string::npos) {
    auto gid = lookup_group(sb, spec.substr(colon + 1));
    if (!gid) return gid.error();
    ids.gid = *gid;
  }
  return ids;
}

}  // namespace abx::runtime
