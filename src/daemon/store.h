// The state store: one SQLite (WAL) row per live sandbox, so a restarted
// daemon can adopt every sandbox again, and small records (keys, quotas,
// usage). The schema is versioned with
// `PRAGMA user_version` and upgraded in place by forward migrations.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/sandbox_row.h"

struct sqlite3;

namespace abx::daemon {

class Store {
 public:
  // The schema version this binary writes; a db at a newer one is refused
  // (an older abx must not rewrite rows it does not understand).
  static int schema_version();

  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& db_path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  Status put(const SandboxRow& row);  // insert or replace
  Status remove(const std::string& id);
  // Every row that decodes; one that does not is logged (naming its id) and
  // skipped, so one bad row never leaves the other sandboxes unmanaged.
  Result<std::vector<SandboxRow>> load_all();

  // Named JSON records of a kind ("api_key", "team_quota", "usage").
  struct Record {
    std::string name;
    nlohmann::json data;
  };
  Status put_record(const std::string& kind, const std::string& name, const nlohmann::json& data);
  Status remove_record(const std::string& kind, const std::string& name);
  // Sorted by name; a record that is not JSON is logged and skipped.
  Result<std::vector<Record>> load_records(const std::string& kind);

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  Status exec(const std::string& sql);
  Result<int> user_version();
  Status migrate(const std::filesystem::path& db_path);

  sqlite3* db_;
  std::mutex mutex_;
};

}  // namespace abx::daemon
