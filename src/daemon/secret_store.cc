#include "daemon/secret_store.h"

#include <algorithm>
#include <cctype>

#include "egress/http_message.h"
#include "egress/http_text.h"

namespace abx::daemon {
namespace {

constexpr const char* kKind = "secret";
constexpr size_t kMaxName = 64, kMaxValue = 8192, kMaxHosts = 16, kMaxHeaders = 16;
constexpr const char* kDefaultHeader = "Authorization";

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

Status check_headers(std::vector<std::string>* headers) {
  if (headers->empty()) headers->push_back(kDefaultHeader);
  if (headers->size() > kMaxHeaders)
    return Error::with_message("secret headers: at most 16", kErrBadInput);
  for (const std::string& header : *headers) {
    if (!egress::is_header_name(header) || header.size() > 256)
      return Error::with_message("secret headers: '" + header + "' is not an HTTP header name",
                                 kErrBadInput);
    if (egress::forbidden_rule_header(header))
      return Error::with_message("secret headers: a rule may not set the header " + header,
                                 kErrBadInput);
  }
  return {};
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool names(const std::vector<std::string>& headers, const std::string& header) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const std::string& h) { return egress::iequals(h, header); });
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
      if (host.is_string()) secret.places.hosts.push_back(host.get<std::string>());
    // Stored before secrets had headers: Authorization only.
    for (const auto& header : record.data.value("headers", nlohmann::json::array()))
      if (header.is_string()) secret.places.headers.push_back(header.get<std::string>());
    if (secret.places.headers.empty()) secret.places.headers.push_back(kDefaultHeader);
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
  if (auto s = normalize_hosts(&secret.places.hosts); !s) return s;
  if (auto s = check_headers(&secret.places.headers); !s) return s;
  std::lock_guard lock(mutex_);
  const nlohmann::json data = {
      {"value", value}, {"hosts", secret.places.hosts}, {"headers", secret.places.headers}};
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

std::map<std::string, SecretPlaces> SecretStore::list(const std::string& team) const {
  std::lock_guard lock(mutex_);
  std::map<std::string, SecretPlaces> out;
  if (auto it = secrets_.find(team); it != secrets_.end())
    for (const auto& [name, secret] : it->second) out[name] = secret.places;
  return out;
}

std::optional<std::string> SecretStore::get(const std::string& team, const std::string& name,
                                            const std::string& host,
                                            const std::string& header) const {
  std::lock_guard lock(mutex_);
  auto it = secrets_.find(team);
  if (it == secrets_.end()) return std::nullopt;
  auto secret = it->second.find(name);
  if (secret == it->second.end() || !names(secret->second.places.headers, header))
    return std::nullopt;
  for (const std::string& pattern : secret->second.places.hosts)
    if (egress::host_matches(pattern, host)) return secret->second.value;
  return std::nullopt;
}

Status SecretStore::check_rules(const std::string& team,
                                const std::vector<egress::HostRule>& rules) const {
  std::lock_guard lock(mutex_);
  const auto team_secrets = secrets_.find(team);
  if (team_secrets == secrets_.end()) return {};
  for (const egress::HostRule& rule : rules)
    for (const egress::Header& header : rule.headers) {
      const auto at = header.value.find(egress::kSecretPrefix);
      if (at == std::string::npos) continue;
      const std::string name = header.value.substr(at + egress::kSecretPrefix.size());
      const auto secret = team_secrets->second.find(name);
      if (secret == team_secrets->second.end()) continue;
      const std::vector<std::string>& allowed = secret->second.places.headers;
      if (!names(allowed, header.name))
        return Error::with_message(
            "network.rules." + rule.host + ": the secret " + name + " may only be sent in " +
                joined(allowed) + ", not in " + header.name +
                " (its owner names the headers: abx secrets set " + name + " --header H)",
            kErrBadInput);
    }
  return {};
}

}  // namespace abx::daemon
