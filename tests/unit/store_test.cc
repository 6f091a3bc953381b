// The state store's schema versioning: old dbs are migrated in place, a db
// from a newer abx is refused, and a row that does not decode is skipped.
#include "daemon/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "abx-store-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path db_path() const { return dir_ / "abx.db"; }

  // Runs SQL on the db file directly, as an older (or newer) abx would have.
  void raw_sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    const std::string message = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << message;
  }

  std::string raw_text(const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    if (sqlite3_open(db_path().c_str(), &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      out = text ? text : "";
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
  }

  // Today's (version 1) schema, left at user_version 0 by unversioned daemons.
  void make_unversioned_db() {
    raw_sql(
        "CREATE TABLE sandboxes (id TEXT PRIMARY KEY, end_at_ms INTEGER NOT NULL, "
        "data TEXT NOT NULL)");
  }

  void insert_raw_row(const std::string& id, const std::string& data) {
    std::string quoted;
    for (char c : data) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    raw_sql("INSERT INTO sandboxes (id, end_at_ms, data) VALUES ('" + id + "', 0, '" + quoted +
            "')");
  }

  fs::path dir_;
};

SandboxRow sample_row(const std::string& id, const std::string& owner) {
  SandboxRow row;
  row.id = id;
  row.template_id = "base";
  row.alias = "base";
  row.owner = owner;
  row.end_at_ms = 42;
  row.record.id = id;
  row.record.init_pid = 1234;
  row.record.state_dir = "/tmp/state/" + id;
  return row;
}

TEST_F(StoreTest, FreshDbIsAtTheLatestVersionAndRoundTripsRows) {
  {
    auto store = Store::open(db_path());
    ASSERT_TRUE(store) << store.error().message();
    ASSERT_TRUE((*store)->put(sample_row("sb1", "team-a")));
    auto rows = (*store)->load_all();
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].id, "sb1");
    EXPECT_EQ((*rows)[0].owner, "team-a");
  }
  EXPECT_EQ(raw_text("PRAGMA user_version"), std::to_string(Store::schema_version()));
  EXPECT_EQ(raw_text("SELECT owner FROM sandboxes WHERE id = 'sb1'"), "team-a");
}

TEST_F(StoreTest, UnversionedDbIsMigratedAndKeepsItsRows) {
  make_unversioned_db();
  auto legacy = row_to_json(sample_row("old1", "ignored"));
  legacy.erase("owner");  // rows from before teams
  insert_raw_row("old1", legacy.dump());
  insert_raw_row("old2", row_to_json(sample_row("old2", "team-b")).dump());

  auto store = Store::open(db_path());
  ASSERT_TRUE(store) << store.error().message();
  auto rows = (*store)->load_all();
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 2u);
  store->reset();

  EXPECT_EQ(raw_text("PRAGMA user_version"), std::to_string(Store::schema_version()));
  EXPECT_EQ(raw_text("SELECT owner FROM sandboxes WHERE id = 'old1'"), "default");
  EXPECT_EQ(raw_text("SELECT owner FROM sandboxes WHERE id = 'old2'"), "team-b");
}

TEST_F(StoreTest, VersionOneDbWithABadRowIsMigrated) {
  make_unversioned_db();
  raw_sql("PRAGMA user_version = 1");
  insert_raw_row("broken", "{not json");
  auto store = Store::open(db_path());
  ASSERT_TRUE(store) << store.error().message();
  EXPECT_EQ(raw_text("SELECT owner FROM sandboxes WHERE id = 'broken'"), "default");
}

TEST_F(StoreTest, RowsThatDoNotDecodeAreSkippedNotFatal) {
  {
    auto store = Store::open(db_path());
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->put(sample_row("good1", "default")));
    ASSERT_TRUE((*store)->put(sample_row("good2", "default")));
  }
  insert_raw_row("garbage", "{not json");
  auto missing_fields = row_to_json(sample_row("partial", "default"));
  missing_fields.erase("record");
  insert_raw_row("partial", missing_fields.dump());

  auto store = Store::open(db_path());
  ASSERT_TRUE(store);
  auto rows = (*store)->load_all();
  ASSERT_TRUE(rows) << rows.error().message();
  ASSERT_EQ(rows->size(), 2u);
  for (const auto& row : *rows) EXPECT_TRUE(row.id == "good1" || row.id == "good2") << row.id;
}

TEST_F(StoreTest, DbFromANewerAbxIsRefused) {
  make_unversioned_db();
  const int newer = Store::schema_version() + 1;
  raw_sql("PRAGMA user_version = " + std::to_string(newer));
  auto store = Store::open(db_path());
  ASSERT_FALSE(store);
  const std::string message = store.error().message();
  EXPECT_NE(message.find("schema version " + std::to_string(newer)), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(raw_text("PRAGMA user_version"), std::to_string(newer));  // left untouched
}

}  // namespace
}  // namespace abx::daemon
