#include "daemon/secret_store.h"

#include <cctype>

namespace abx::daemon {
namespace {

constexpr const char* kKind = "secret";
constexpr size_t kMaxName = 64, kMaxValue = 8192;

// Stored under "<team>\n<name>": neither may hold a newline.
std::string key(const std::string& team, const std::string& name) { return team + '\n' + name; }

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxName) return false;
  if (std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

Result<std::unique_ptr<SecretStore>> SecretStore::open(Store& store) {
  auto records = store.load_records(kKind);
  if (!records) return records.error();
  std::unique_ptr<SecretStore> secrets(new SecretStore(store));
  for (const auto& record : *records) {
    const auto nl = record.name.find('\n');
    if (nl == std::string::npos || !record.data.contains("value") ||
        !record.data["value"].is_string())
      continue;
    secrets->values_[record.name.substr(0, nl)][record.name.substr(nl + 1)] =
        record.data["value"].get<std::string>();
  }
  return secrets;
}

Status SecretStore::set(const std::string& team, const std::string& name,
                        const std::string& value) {
  if (!valid_name(name))
    return Error::with_message("secret name '" + name +
                                   "': use letters, digits and '_' (at most 64, not starting "
                                   "with a digit), e.g. OPENAI_KEY",
                               kErrBadInput);
  if (value.empty() || value.size() > kMaxValue || value.find_first_of("\r\n") != std::string::npos)
    return Error::with_message(
        "secret value: one line of 1 to 8192 bytes (it is sent as an HTTP header value)",
        kErrBadInput);
  std::lock_guard lock(mutex_);
  if (Status s = store_.put_record(kKind, key(team, name), {{"value", value}}); !s) return s;
  values_[team][name] = value;
  return {};
}

Status SecretStore::remove(const std::string& team, const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = values_.find(team);
  if (it == values_.end() || it->second.erase(name) == 0)
    return Error::with_message("no secret named '" + name + "'", ENOENT);
  return store_.remove_record(kKind, key(team, name));
}

std::vector<std::string> SecretStore::names(const std::string& team) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  if (auto it = values_.find(team); it != values_.end())
    for (const auto& [name, value] : it->second) out.push_back(name);
  return out;
}

std::optional<std::string> SecretStore::get(const std::string& team,
                                            const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = values_.find(team);
  if (it == values_.end()) return std::nullopt;
  auto value = it->second.find(name);
  if (value == it->second.end()) return std::nullopt;
  return value->second;
}

}  // namespace abx::daemon
