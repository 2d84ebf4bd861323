// The results store (traces/results_store.hpp): a file only once a row is committed, rows round
// trip with their empty fields, a key written again replaces its row, and each bad store (newer
// schema, not a store, read-only, locked, not a regular file) is one line with the file as it was.
#include "strata/traces/results_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

namespace fs = std::filesystem;

class ResultsStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-store-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string bytes(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Runs `sql` on `file` through a connection of its own.
  static void exec(const std::string& file, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }

  fs::path dir_;
};

ResultRow row(const std::string& experiment, const std::string& fidelity, double time) {
  ResultRow r;
  r.key = ResultKey{experiment, "00000000000000aa", fidelity, 7};
  r.command = "explore";
  r.model = "gpt2-small";
  r.strategy = "dp=2,tp=1,pp=1";
  r.platform = "test-flat-4.xml";
  r.workers = 2;
  r.fits = true;
  r.iteration_time_s = time;
  r.mfu = 0.25;
  r.peak_memory_bytes = 1.5e9;
  r.spec = R"({"model":{"name":"gpt2-small"}})";
  r.strata_version = "0.0.0";
  return r;
}

TEST(ResultKeyTest, TextAndParseAreInverses) {
  const ResultKey k{"0123456789abcdef", "fedcba9876543210", "step", -3};
  EXPECT_EQ(k.text(), "0123456789abcdef/fedcba9876543210/step/-3");
  EXPECT_EQ(ResultKey::parse(k.text()), k);
  for (const char* bad : {"", "a/b/c", "a/b/c/d/e", "a/b/c/x", "a/b//1", "a/b/c/1x", "a/b/c/01"})
    EXPECT_FALSE(ResultKey::parse(bad).has_value()) << bad;
}

TEST_F(ResultsStoreTest, TheFileAppearsOnlyWithItsFirstRow) {
  ResultsStore store(path("r.db"));
  EXPECT_TRUE(store.keys().empty());
  store.check_writable();
  store.commit({});
  EXPECT_FALSE(fs::exists(path("r.db")));
  store.commit({row("e1", "analytical", 2.0)});
  EXPECT_TRUE(fs::exists(path("r.db")));
  EXPECT_EQ(store.keys(), std::set<std::string>{"e1/00000000000000aa/analytical/7"});
}

// What a writer killed inside its first commit leaves: a file of no schema (0 bytes once SQLite
// has rolled its journal back). A writer takes it as a new store; a reader still finds no store.
TEST_F(ResultsStoreTest, AFileWhoseFirstCommitNeverEndedIsANewStoreToAWriter) {
  std::ofstream(path("empty.db")).close();
  ASSERT_EQ(fs::file_size(path("empty.db")), 0u);
  EXPECT_NE(error_of([&] { ResultsStore(path("empty.db")).rows(); }).find("not a strata results store"),
            std::string::npos);
  ResultsStore(path("empty.db")).commit({row("e1", "analytical", 2.0)});
  EXPECT_EQ(ResultsStore(path("empty.db")).rows().size(), 1u);
}

TEST_F(ResultsStoreTest, RowsRoundTripAndAKeyWrittenAgainReplacesItsRow) {
  {
    ResultsStore store(path("r.db"));
    store.commit({row("e2", "step", 3.0), row("e1", "analytical", 2.0)});
    store.commit({row("e2", "step", 4.0)});  // the same key: replaced, not added
  }
  ResultsStore store(path("r.db"));
  const std::vector<ResultRow> rows = store.rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key.experiment_hash, "e1");  // by key
  EXPECT_EQ(rows[1].iteration_time_s, 4.0);
  EXPECT_EQ(rows[1].key.seed, 7);
  EXPECT_EQ(rows[1].fits, true);
  EXPECT_EQ(rows[1].mfu, 0.25);
  EXPECT_FALSE(rows[1].tokens_per_s.has_value());  // never set: NULL, not 0
  EXPECT_FALSE(rows[1].error_pct.has_value());
  EXPECT_EQ(rows[1].spec, R"({"model":{"name":"gpt2-small"}})");
  const std::optional<ResultRow> found = store.find(ResultKey{"e1", "00000000000000aa", "analytical", 7});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->iteration_time_s, 2.0);
  EXPECT_FALSE(store.find(ResultKey{"e1", "00000000000000aa", "step", 7}).has_value());
  const ResultTable t =
      store.query("SELECT count(*) AS n FROM results WHERE fits AND iteration_time_s > 2.5");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(std::get<std::int64_t>(t.rows[0][0]), 1);
}

TEST_F(ResultsStoreTest, ANewerSchemaIsRefusedAndLeftAsItWas) {
  ResultsStore(path("r.db")).commit({row("e1", "analytical", 2.0)});
  exec(path("r.db"), "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  const std::string before = bytes(path("r.db"));
  ResultsStore store(path("r.db"));
  EXPECT_EQ(error_of([&] { store.commit({row("e2", "analytical", 1.0)}); }),
            path("r.db") + ": written by a newer strata (store schema 99; this strata reads up to 1)");
  EXPECT_NE(error_of([&] { ResultsStore(path("r.db")).rows(); }).find("newer strata"), std::string::npos);
  EXPECT_EQ(bytes(path("r.db")), before);
}

TEST_F(ResultsStoreTest, NotAStoreNotAFileAndReadOnlyAreOneLineEach) {
  std::ofstream(path("text.db")) << "hello\n";
  EXPECT_NE(
      error_of([&] { ResultsStore(path("text.db")).commit({row("e", "analytical", 1)}); }).find("text.db: "),
      std::string::npos);
  EXPECT_EQ(bytes(path("text.db")), "hello\n");
  exec(path("other.db"), "CREATE TABLE t (x)");
  EXPECT_EQ(error_of([&] { ResultsStore(path("other.db")).commit({row("e", "analytical", 1)}); }),
            path("other.db") + ": not a strata results store (no such table: meta)");
  fs::create_directories(path("folder.db"));
  EXPECT_EQ(error_of([&] { ResultsStore(path("folder.db")).check_writable(); }),
            path("folder.db") + ": not a regular file (a results store is a SQLite file)");
  EXPECT_EQ(error_of([&] { ResultsStore(path("missing/r.db")).check_writable(); }),
            path("missing/r.db") + ": cannot create the results store: no folder " + path("missing"));
  ResultsStore(path("ro.db")).commit({row("e", "analytical", 1)});
  fs::permissions(path("ro.db"), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = bytes(path("ro.db"));
  EXPECT_EQ(error_of([&] { ResultsStore(path("ro.db")).commit({row("f", "analytical", 1)}); }),
            path("ro.db") + ": read-only: cannot write results to it");
  EXPECT_EQ(bytes(path("ro.db")), before);
  EXPECT_EQ(ResultsStore(path("ro.db")).rows().size(), 1u);  // reading it is fine
  EXPECT_EQ(error_of([&] { ResultsStore(path("none.db")).rows(); }),
            path("none.db") + ": no such results store");
  EXPECT_FALSE(fs::exists(path("none.db")));
  EXPECT_EQ(error_of([&] { ResultsStore(path("x.db"), -1); }),
            "--db-wait: not a finite number of seconds >= 0");
}

TEST_F(ResultsStoreTest, AWriterWaitsForALockThenFailsWithTheStoreAsItWas) {
  ResultsStore(path("r.db")).commit({row("e1", "analytical", 2.0)});
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path("r.db").c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  ResultsStore store(path("r.db"), 0.3);
  const std::string error = error_of([&] { store.commit({row("e2", "analytical", 1.0)}); });
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(error.find("r.db: locked by another process"), std::string::npos) << error;
  EXPECT_GE(waited, 0.25);
  ASSERT_EQ(sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(holder);
  EXPECT_EQ(ResultsStore(path("r.db")).rows().size(), 1u);
  ResultsStore again(path("r.db"), 0.3);
  again.commit({row("e2", "analytical", 1.0)});
  EXPECT_EQ(again.rows().size(), 2u);
}

TEST_F(ResultsStoreTest, QueriesAreReadOnlyAndOneStatementAtATime) {
  ResultsStore(path("r.db")).commit({row("e1", "analytical", 2.0)});
  ResultsStore store(path("r.db"));
  EXPECT_EQ(error_of([&] { store.query("DELETE FROM results"); }),
            path("r.db") + ": SQL: a query may only read (SELECT)");
  EXPECT_EQ(error_of([&] { store.query("SELECT 1; SELECT 2"); }),
            path("r.db") + ": SQL: one statement at a time");
  EXPECT_NE(error_of([&] { store.query("SELEC nothing"); }).find("r.db: SQL: near \"SELEC\""),
            std::string::npos);
  EXPECT_EQ(store.rows().size(), 1u);
}

}  // namespace
}  // namespace strata
