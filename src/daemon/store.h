// The state store: one SQLite (WAL) row per live sandbox, so a restarted
// daemon can adopt every sandbox again.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/sandbox_row.h"

struct sqlite3;

namespace abx::daemon {

class Store {
 public:
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& db_path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  Status put(const SandboxRow& row);  // insert or replace
  Status remove(const std::string& id);
  Result<std::vector<SandboxRow>> load_all();

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  Status exec(const std::string& sql);

  sqlite3* db_;
  std::mutex mutex_;
};

}  // namespace abx::daemon
