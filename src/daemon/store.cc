#include "daemon/store.h"

#include <sqlite3.h>

namespace abx::daemon {
namespace {

Error sqlite_error(sqlite3* db, const std::string& step) {
  return Error{step, EIO, db ? sqlite3_errmsg(db) : "out of memory"};
}

// Finalizes a prepared statement on every path out.
struct Statement {
  sqlite3_stmt* stmt = nullptr;
  ~Statement() { sqlite3_finalize(stmt); }
};

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& db_path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(db_path.c_str(), &db) != SQLITE_OK) {
    Error error = sqlite_error(db, "open state db " + db_path.string());
    sqlite3_close(db);
    return error;
  }
  std::unique_ptr<Store> store(new Store(db));
  sqlite3_busy_timeout(db, 5000);
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
                          "CREATE TABLE IF NOT EXISTS sandboxes (id TEXT PRIMARY KEY, "
                          "end_at_ms INTEGER NOT NULL, data TEXT NOT NULL)"}) {
    if (Status s = store->exec(sql); !s) return s.error();
  }
  return store;
}

Store::~Store() { sqlite3_close(db_); }

Status Store::exec(const std::string& sql) {
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return sqlite_error(db_, "state db: " + sql);
  }
  return {};
}

Status Store::put(const SandboxRow& row) {
  std::lock_guard lock(mutex_);
  Statement st;
  const char* sql = "INSERT OR REPLACE INTO sandboxes (id, end_at_ms, data) VALUES (?, ?, ?)";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.stmt, nullptr) != SQLITE_OK) {
    return sqlite_error(db_, "state db: prepare insert");
  }
  const std::string data = row_to_json(row).dump();
  sqlite3_bind_text(st.stmt, 1, row.id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st.stmt, 2, row.end_at_ms);
  sqlite3_bind_text(st.stmt, 3, data.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.stmt) != SQLITE_DONE) return sqlite_error(db_, "state db: save " + row.id);
  return {};
}

Status Store::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  Statement st;
  if (sqlite3_prepare_v2(db_, "DELETE FROM sandboxes WHERE id = ?", -1, &st.stmt, nullptr) !=
      SQLITE_OK) {
    return sqlite_error(db_, "state db: prepare delete");
  }
  sqlite3_bind_text(st.stmt, 1, id.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.stmt) != SQLITE_DONE) return sqlite_error(db_, "state db: delete " + id);
  return {};
}

Result<std::vector<SandboxRow>> Store::load_all() {
  std::lock_guard lock(mutex_);
  Statement st;
  if (sqlite3_prepare_v2(db_, "SELECT data FROM sandboxes", -1, &st.stmt, nullptr) != SQLITE_OK) {
    return sqlite_error(db_, "state db: prepare select");
  }
  std::vector<SandboxRow> rows;
  int rc;
  while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st.stmt, 0));
    auto json = nlohmann::json::parse(text ? text : "", nullptr, false);
    auto row = row_from_json(json);
    if (!row) return row.error();
    rows.push_back(std::move(row.value()));
  }
  if (rc != SQLITE_DONE) return sqlite_error(db_, "state db: load");
  return rows;
}

}  // namespace abx::daemon
