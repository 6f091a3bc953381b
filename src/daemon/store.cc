#include "daemon/store.h"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <cerrno>
#include <initializer_list>
#include <string_view>

namespace abx::daemon {
namespace {

// Forward migrations: kMigrations[i] takes the schema from version i to i + 1.
// Append only; never edit a step that has shipped.
constexpr std::string_view kMigrations[] = {
    // 1: one row per sandbox, the row itself as JSON. Daemons from before
    // versioning left user_version at 0 with this table already there.
    "CREATE TABLE IF NOT EXISTS sandboxes (id TEXT PRIMARY KEY, "
    "end_at_ms INTEGER NOT NULL, data TEXT NOT NULL)",
    // 2: the owning team as a column, so rows can be selected per team.
    // Rows from before teams belong to the default team.
    "ALTER TABLE sandboxes ADD COLUMN owner TEXT NOT NULL DEFAULT 'default';"
    "UPDATE sandboxes SET owner = json_extract(data, '$.owner') "
    "WHERE json_valid(data) AND json_type(data, '$.owner') = 'text';"
    "CREATE INDEX IF NOT EXISTS sandboxes_owner ON sandboxes (owner)",
    // 3: small named JSON records of a kind: hashed API keys, team quotas,
    // usage per team and day.
    "CREATE TABLE IF NOT EXISTS records (kind TEXT NOT NULL, name TEXT NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (kind, name))",
};
constexpr int kLatestVersion = static_cast<int>(std::size(kMigrations));

// A full disk keeps its errno (507 for a client) and says which disk: the
// data dir's, not the sandbox's.
Error sqlite_error(sqlite3* db, const std::string& step) {
  if (db == nullptr) return Error{step, ENOMEM, "out of memory"};
  const int os_errno = sqlite3_system_errno(db);
  if (sqlite3_errcode(db) == SQLITE_FULL || os_errno == ENOSPC || os_errno == EDQUOT) {
    return Error{
        step, os_errno == EDQUOT ? EDQUOT : ENOSPC,
        std::string("the daemon's data dir is out of disk space (") + sqlite3_errmsg(db) + ")"};
  }
  return Error{step, EIO, sqlite3_errmsg(db)};
}

// Finalizes a prepared statement on every path out.
struct Statement {
  sqlite3_stmt* stmt = nullptr;
  ~Statement() { sqlite3_finalize(stmt); }
};

// Prepares `sql` into `st` and binds `texts` to its parameters, in order.
Status prepare(sqlite3* db, Statement& st, const char* sql,
               std::initializer_list<std::string_view> texts) {
  if (sqlite3_prepare_v2(db, sql, -1, &st.stmt, nullptr) != SQLITE_OK) {
    return sqlite_error(db, std::string("state db: prepare ") + sql);
  }
  int index = 1;
  for (std::string_view text : texts) {
    sqlite3_bind_text(st.stmt, index++, text.data(), static_cast<int>(text.size()),
                      SQLITE_TRANSIENT);
  }
  return {};
}

// Runs a statement that returns no rows.
Status run(sqlite3* db, Statement& st, const std::string& step) {
  if (sqlite3_step(st.stmt) != SQLITE_DONE) return sqlite_error(db, "state db: " + step);
  return {};
}

std::string column_text(sqlite3_stmt* stmt, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return text ? text : "";
}

}  // namespace

int Store::schema_version() { return kLatestVersion; }

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& db_path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    Error error = sqlite_error(db, "open state db " + db_path.string());
    sqlite3_close(db);
    return error;
  }
  std::unique_ptr<Store> store(new Store(db));
  sqlite3_busy_timeout(db, 5000);
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"}) {
    if (Status s = store->exec(sql); !s) return s.error();
  }
  if (Status s = store->migrate(db_path); !s) return s.error();
  return store;
}

Store::~Store() { sqlite3_close(db_); }

Status Store::exec(const std::string& sql) {
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return sqlite_error(db_, "state db: " + sql);
  }
  return {};
}

Result<int> Store::user_version() {
  Statement st;
  if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &st.stmt, nullptr) != SQLITE_OK ||
      sqlite3_step(st.stmt) != SQLITE_ROW) {
    return sqlite_error(db_, "state db: read user_version");
  }
  return sqlite3_column_int(st.stmt, 0);
}

// Runs each missing step in its own transaction, with the version bump, so
// an interrupted upgrade resumes at the step that did not finish.
Status Store::migrate(const std::filesystem::path& db_path) {
  auto version = user_version();
  if (!version) return version.error();
  if (*version > kLatestVersion) {
    return Error::with_message("state db " + db_path.string() + " has schema version " +
                               std::to_string(*version) + " but this abx knows only up to " +
                               std::to_string(kLatestVersion) +
                               ": run the newer abx that wrote it");
  }
  for (int step = *version; step < kLatestVersion; ++step) {
    const std::string sql = "BEGIN IMMEDIATE;" + std::string(kMigrations[step]) +
                            ";PRAGMA user_version = " + std::to_string(step + 1) + ";COMMIT";
    if (Status s = exec(sql); !s) {
      const std::string why = sqlite3_errmsg(db_);
      (void)exec("ROLLBACK");
      return Error::with_message("migrate state db " + db_path.string() + " to schema version " +
                                 std::to_string(step + 1) + ": " + why);
    }
    if (step > 0) spdlog::info("state db: migrated to schema version {}", step + 1);
  }
  return {};
}

Status Store::put(const SandboxRow& row) {
  std::lock_guard lock(mutex_);
  Statement st;
  const char* sql =
      "INSERT OR REPLACE INTO sandboxes (id, end_at_ms, data, owner) VALUES (?, ?, ?, ?)";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.stmt, nullptr) != SQLITE_OK) {
    return sqlite_error(db_, "state db: prepare insert");
  }
  const std::string data = row_to_json(row).dump();
  sqlite3_bind_text(st.stmt, 1, row.id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st.stmt, 2, row.end_at_ms);
  sqlite3_bind_text(st.stmt, 3, data.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.stmt, 4, row.owner.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.stmt) != SQLITE_DONE) return sqlite_error(db_, "state db: save " + row.id);
  return {};
}

Status Store::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  Statement st;
  if (Status s = prepare(db_, st, "DELETE FROM sandboxes WHERE id = ?", {id}); !s) return s;
  return run(db_, st, "delete " + id);
}

Result<std::vector<SandboxRow>> Store::load_all() {
  std::lock_guard lock(mutex_);
  Statement st;
  if (sqlite3_prepare_v2(db_, "SELECT id, data FROM sandboxes", -1, &st.stmt, nullptr) !=
      SQLITE_OK) {
    return sqlite_error(db_, "state db: prepare select");
  }
  std::vector<SandboxRow> rows;
  int rc;
  while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW) {
    const std::string id = column_text(st.stmt, 0);
    auto json = nlohmann::json::parse(column_text(st.stmt, 1), nullptr, false);
    auto row = row_from_json(json);
    if (!row) {
      spdlog::warn("state db: skipping sandbox {}: its stored row does not decode ({})", id,
                   row.error().message());
      continue;
    }
    rows.push_back(std::move(row.value()));
  }
  if (rc != SQLITE_DONE) return sqlite_error(db_, "state db: load");
  return rows;
}

Status Store::put_record(const std::string& kind, const std::string& name,
                         const nlohmann::json& data) {
  std::lock_guard lock(mutex_);
  Statement st;
  const char* sql = "INSERT OR REPLACE INTO records (kind, name, data) VALUES (?, ?, ?)";
  if (Status s = prepare(db_, st, sql, {kind, name, data.dump()}); !s) return s;
  return run(db_, st, "save " + kind + " " + name);
}

Status Store::remove_record(const std::string& kind, const std::string& name) {
  std::lock_guard lock(mutex_);
  Statement st;
  const char* sql = "DELETE FROM records WHERE kind = ? AND name = ?";
  if (Status s = prepare(db_, st, sql, {kind, name}); !s) return s;
  return run(db_, st, "delete " + kind + " " + name);
}

Result<std::vector<Store::Record>> Store::load_records(const std::string& kind) {
  std::lock_guard lock(mutex_);
  Statement st;
  const char* sql = "SELECT name, data FROM records WHERE kind = ? ORDER BY name";
  if (Status s = prepare(db_, st, sql, {kind}); !s) return s.error();
  std::vector<Record> out;
  int rc;
  while ((rc = sqlite3_step(st.stmt)) == SQLITE_ROW) {
    auto data = nlohmann::json::parse(column_text(st.stmt, 1), nullptr, false);
    if (data.is_discarded()) {
      spdlog::warn("state db: skipping {} {}: not JSON", kind, column_text(st.stmt, 0));
      continue;
    }
    out.push_back(Record{column_text(st.stmt, 0), std::move(data)});
  }
  if (rc != SQLITE_DONE) return sqlite_error(db_, "state db: load " + kind);
  return out;
}

}  // namespace abx::daemon
