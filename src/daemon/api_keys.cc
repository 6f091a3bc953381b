#include "daemon/api_keys.h"

#include <spdlog/spdlog.h>

#include <regex>
#include <sstream>

#include "common/clock.h"
#include "common/fd_io.h"
#include "common/ids.h"
#include "common/sha256.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kKind = "api_key";
constexpr size_t kMaxNameLength = 100;

ApiKeyRecord record_for(const std::string& key, std::string team, bool admin, std::string name,
                        int64_t created_ms) {
  const std::string hash = sha256_hex(key);
  return ApiKeyRecord{
      "key-" + hash.substr(0, 12), hash, std::move(team), admin, std::move(name), created_ms};
}

json to_json(const ApiKeyRecord& record) {
  return {{"hash", record.hash},
          {"team", record.team},
          {"admin", record.admin},
          {"name", record.name},
          {"createdMs", record.created_ms}};
}

std::optional<ApiKeyRecord> from_json(const std::string& id, const json& data) {
  if (!data.is_object() || !data.contains("hash") || !data["hash"].is_string()) return std::nullopt;
  ApiKeyRecord record;
  record.id = id;
  record.hash = data["hash"];
  record.team = data.value("team", std::string(kDefaultTeam));
  record.admin = data.value("admin", false);
  record.name = data.value("name", std::string());
  record.created_ms = data.value("createdMs", int64_t{0});
  return record;
}

// A label an admin's terminal prints as is: no C0/C1 controls, DEL, line or
// paragraph separators, or bidi overrides that would disguise other text.
bool is_printable_label(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f) return false;
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    const auto third = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0;
    if (byte == 0xc2 && next >= 0x80 && next <= 0x9f) return false;  // C1 controls
    if (byte == 0xe2 && next == 0x80 && third >= 0xa8 && third <= 0xae) return false;
    if (byte == 0xe2 && next == 0x81 && third >= 0xa6 && third <= 0xa9) return false;
  }
  return true;
}

}  // namespace

Status check_team_name(const std::string& team) {
  static const std::regex kTeam("[a-z0-9][a-z0-9_-]{0,62}");
  if (std::regex_match(team, kTeam)) return {};
  return Error::with_message(
      "team: '" + team + "' is not a team name; use 1-63 of a-z, 0-9, '_' and '-'", kErrBadInput);
}

Result<std::shared_ptr<ApiKeys>> ApiKeys::open(Store& store, const std::string& primary,
                                               const fs::path& legacy_file) {
  std::shared_ptr<ApiKeys> keys(new ApiKeys(store));
  auto stored = store.load_records(kKind);
  if (!stored) return stored.error();
  for (const auto& [id, data] : *stored) {
    if (auto record = from_json(id, data)) keys->by_hash_[record->hash] = std::move(*record);
  }
  if (!keys->by_hash_.empty()) return keys;
  if (Status s = keys->add(record_for(primary, kDefaultTeam, true, "default", unix_ms_now())); !s)
    return s.error();
  if (Status s = keys->import_legacy(legacy_file); !s) return s.error();
  return keys;
}

// `abx keys create` of older versions appended "<key> <created unix s> <name>"
// lines to a plaintext file; they become hashed default-team keys.
Status ApiKeys::import_legacy(const fs::path& legacy_file) {
  auto text = read_file(legacy_file);
  if (!text) return text.error().errnum == ENOENT ? Status{} : Status{text.error()};
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string key, name;
    int64_t created_unix = 0;
    if (!(fields >> key >> created_unix)) continue;
    std::getline(fields >> std::ws, name);
    if (Status s = add(record_for(key, kDefaultTeam, false, name, created_unix * 1000)); !s)
      return s;
  }
  std::error_code ec;
  fs::remove(legacy_file, ec);
  spdlog::info("api keys: imported the keys of {} (now stored hashed) and removed it",
               legacy_file.string());
  return {};
}

Status ApiKeys::add(const ApiKeyRecord& record) {
  if (Status s = store_.put_record(kKind, record.id, to_json(record)); !s) return s;
  std::lock_guard lock(mutex_);
  by_hash_[record.hash] = record;
  return {};
}

std::optional<Caller> ApiKeys::caller_for(const std::string& key) const {
  if (key.empty()) return std::nullopt;
  const std::string hash = sha256_hex(key);
  std::lock_guard lock(mutex_);
  const auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return Caller{Caller::Kind::api_key, it->second.id, it->second.team, it->second.admin, {}};
}

std::optional<Caller> ApiKeys::caller_for_id(const std::string& key_id) const {
  std::lock_guard lock(mutex_);
  for (const auto& [hash, record] : by_hash_) {
    if (record.id == key_id)
      return Caller{Caller::Kind::api_key, record.id, record.team, record.admin, {}};
  }
  return std::nullopt;
}

Result<NewApiKey> ApiKeys::create(const std::string& team, bool admin, const std::string& name) {
  if (Status s = check_team_name(team); !s) return s.error();
  if (name.size() > kMaxNameLength || !is_printable_label(name)) {
    return Error::with_message(
        "name: at most 100 printable characters (no control or text-direction characters)",
        kErrBadInput);
  }
  NewApiKey made;
  made.key = ids::api_key();
  made.record = record_for(made.key, team, admin, name, unix_ms_now());
  if (Status s = add(made.record); !s) return s.error();
  spdlog::info("api keys: {} made for team {}{}", made.record.id, team, admin ? " (admin)" : "");
  return made;
}

std::vector<ApiKeyRecord> ApiKeys::list() const {
  std::lock_guard lock(mutex_);
  std::vector<ApiKeyRecord> out;
  for (const auto& [hash, record] : by_hash_) out.push_back(record);
  std::sort(out.begin(), out.end(), [](const ApiKeyRecord& a, const ApiKeyRecord& b) {
    return std::tie(a.created_ms, a.id) < std::tie(b.created_ms, b.id);
  });
  return out;
}

Status ApiKeys::revoke(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(by_hash_.begin(), by_hash_.end(),
                         [&](const auto& entry) { return entry.second.id == id; });
  if (it == by_hash_.end()) return Error::with_message("key " + id + " not found", ENOENT);
  const auto admins = std::count_if(by_hash_.begin(), by_hash_.end(),
                                    [](const auto& entry) { return entry.second.admin; });
  if (it->second.admin && admins == 1) {
    return Error::with_message(
        "key " + id + " is the last admin key; make another with `abx keys create --admin` first",
        EBUSY);
  }
  if (Status s = store_.remove_record(kKind, id); !s) return s;
  by_hash_.erase(it);
  spdlog::info("api keys: {} revoked", id);
  return {};
}

}  // namespace abx::daemon
