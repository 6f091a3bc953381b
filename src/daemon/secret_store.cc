#include "daemon/secret_store.h"

#include <algorithm>
#include <cctype>

#include "egress/policy.h"

namespace abx::daemon {
namespace {

constexpr const char* kKind = "secret";
constexpr size_t kMaxName = 64, kMaxValue = 8192, kMaxHosts = 16;

// Stored under "<team>\n<name>": neither may hold a newline.
std::string key(const std::string& team, const std::string& name) { return team + '\n' + name; }

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxName) return false;
  if (std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

Status normalize_hosts(std::vector<std::string>* hosts) {
  if (hosts->empty() || hosts->size() > kMaxHosts)
    return Error::with_message(
        "secret hosts: name 1 to 16 hosts it may be sent to (e.g. "
        "\"api.openai.com\", \"*.example.com\")",
        kErrBadInput);
  for (std::string& host : *hosts) {
    std::transform(host.begin(), host.end(), host.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!egress::valid_host_pattern(host))
      return Error::with_message(
          "secret hosts: '" + host + "' is not a host name or *.wildcard (e.g. api.openai.com)",
          kErrBadInput);
  }
  return {};
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
    Secret secret{record.data["value"].get<std::string>(), {}};
    // Stored before secrets had hosts: kept, but sent nowhere until set again.
    for (const auto& host : record.data.value("hosts", nlohmann::json::array()))
      if (host.is_string()) secret.hosts.push_back(host.get<std::string>());
    secrets->secrets_[record.name.substr(0, nl)][record.name.substr(nl + 1)] = std::move(secret);
  }
  return secrets;
}

Status SecretStore::set(const std::string& team, const std::string& name, Secret secret) {
  if (!valid_name(name))
    return Error::with_message("secret name '" + name +
                                   "': use letters, digits and '_' (at most 64, not starting "
                                   "with a digit), e.g. OPENAI_KEY",
                               kErrBadInput);
  const std::string& value = secret.value;
  if (value.empty() || value.size() > kMaxValue || value.find_first_of("\r\n") != std::string::npos)
    return Error::with_message(
        "secret value: one line of 1 to 8192 bytes (it is sent as an HTTP header value)",
        kErrBadInput);
  if (auto s = normalize_hosts(&secret.hosts); !s) return s;
  std::lock_guard lock(mutex_);
  const nlohmann::json data = {{"value", value}, {"hosts", secret.hosts}};
  if (Status s = store_.put_record(kKind, key(team, name), data); !s) return s;
  secrets_[team][name] = std::move(secret);
  return {};
}

Status SecretStore::remove(const std::string& team, const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = secrets_.find(team);
  if (it == secrets_.end() || it->second.erase(name) == 0)
    return Error::with_message("no secret named '" + name + "'", ENOENT);
  return store_.remove_record(kKind, key(team, name));
}

std::map<std::string, std::vector<std::string>> SecretStore::list(const std::string& team) const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::vector<std::string>> out;
  if (auto it = secrets_.find(team); it != secrets_.end())
    for (const auto& [name, secret] : it->second) out[name] = secret.hosts;
  return out;
}

std::optional<std::string> SecretStore::get(const std::string& team, const std::string& name,
                                            const std::string& host) const {
  std::lock_guard lock(mutex_);
  auto it = secrets_.find(team);
  if (it == secrets_.end()) return std::nullopt;
  auto secret = it->second.find(name);
  if (secret == it->second.end()) return std::nullopt;
  for (const std::string& pattern : secret->second.hosts)
    if (egress::host_matches(pattern, host)) return secret->second.value;
  return std::nullopt;
}

}  // namespace abx::daemon
