// The tuning cache (tuner/Cache): misses on a changed environment, schema guard, never created
// by reading, no default without a home, concurrent importers and writers, a writer killed
// mid-transaction. Needs only kiln_cache, so the sanitizer build runs it too.
#include "tuner/Cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kiln::tuner {
namespace {

std::string tempPath(const std::string &name) {
  std::string dir = testing::TempDir() + "kiln-tuner-" + std::to_string(getpid());
  std::string cmd = "mkdir -p " + dir;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::string p = dir + "/" + name;
  std::remove(p.c_str());
  std::remove((p + "-wal").c_str());
  std::remove((p + "-shm").c_str());
  return p;
}

TEST(Cache, RoundTripAndEnvironmentMiss) {
  std::string path = tempPath("a.db"), err;
  auto c = Cache::open(path, err);
  ASSERT_TRUE(c) << err;
  CacheKey k{"abc", "x:1x3", "precision=fp16", "gpu=A;kiln=0.1.0;"};
  Measurement m{"ok", "", 1.5, 1.7, 1.4, 50, "{}", ""};
  ASSERT_TRUE(c->store(k, m, err)) << err;
  Measurement got;
  ASSERT_TRUE(c->lookup(k, got, err)) << err;
  EXPECT_EQ(got.status, "ok");
  EXPECT_DOUBLE_EQ(got.medianMs, 1.5);
  EXPECT_FALSE(got.created.empty());
  CacheKey other = k;
  other.environment = "gpu=B;kiln=0.1.0;";
  EXPECT_FALSE(c->lookup(other, got, err));
  EXPECT_TRUE(err.empty());
  // Export, import into a second cache, merge back.
  std::vector<CacheRow> rows;
  ASSERT_TRUE(c->rows(rows, err));
  std::vector<CacheRow> back;
  ASSERT_TRUE(rowsFromJsonLines(rowsToJsonLines(rows), back, err)) << err;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].key.route, "precision=fp16");
  std::vector<CacheRow> bad;
  std::string line = rowsToJsonLines(rows);
  line.replace(line.find("\"runs\":50"), 9, "\"runs\":1e300");
  EXPECT_FALSE(rowsFromJsonLines(line, bad, err));
  EXPECT_NE(err.find("line 1: 'runs' is not an integer"), std::string::npos) << err;
  std::string path2 = tempPath("b.db");
  auto c2 = Cache::open(path2, err);
  ASSERT_TRUE(c2->store(other, m, err));
  int64_t added = 0;
  ASSERT_TRUE(c->merge(path2, added, err)) << err;
  EXPECT_EQ(added, 1);
  int64_t deleted = 0;
  ASSERT_TRUE(c->gc("0.1.0", deleted, err));
  EXPECT_EQ(deleted, 0);
  ASSERT_TRUE(c->gc("9.9.9", deleted, err));
  EXPECT_EQ(deleted, 2);
}

TEST(Cache, RefusesNewerSchemasAndOtherFiles) {
  std::string path = tempPath("new.db"), err;
  {
    auto c = Cache::open(path, err);
    ASSERT_TRUE(c);
  }
  std::string cmd = "/usr/bin/python3 -c \"import sqlite3; d = sqlite3.connect('" + path +
                    "'); d.execute(\\\"update kiln_meta set value='99' where key='schema_version'\\\"); d.commit()\"";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "no python3 sqlite3";
  EXPECT_FALSE(Cache::open(path, err));
  EXPECT_NE(err.find("schema version 99, newer than this kiln's 2"), std::string::npos) << err;
  std::string junk = tempPath("junk.db");
  std::ofstream(junk) << "this is not a database, just some text that is long enough to be a header........";
  EXPECT_FALSE(Cache::open(junk, err));
  EXPECT_FALSE(err.empty());
}

// A version-1 file (before `launches`) is read as it is when opened read-only, and migrated when
// opened for writing; a profiled measurement's launches survive the cache and its JSON lines.
TEST(Cache, MigratesVersion1AndKeepsLaunches) {
  std::string path = tempPath("v1.db"), err;
  std::string cmd = "/usr/bin/python3 -c \"import sqlite3; d = sqlite3.connect('" + path +
                    "'); d.executescript(\\\"CREATE TABLE kiln_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL); "
                    "INSERT INTO kiln_meta VALUES('schema_version', '1'); CREATE TABLE measurements(model_hash TEXT "
                    "NOT NULL, shapes TEXT NOT NULL, route TEXT NOT NULL, environment TEXT NOT NULL, status TEXT NOT "
                    "NULL, reason TEXT NOT NULL, median_ms REAL, p90_ms REAL, min_ms REAL, runs INTEGER, metrics TEXT "
                    "NOT NULL, created TEXT NOT NULL, PRIMARY KEY(model_hash, shapes, route, environment)); INSERT "
                    "INTO measurements VALUES('m', 's', '', 'e', 'ok', '', 1.0, 1.1, 0.9, 50, '{}', "
                    "'2026-01-01T00:00:00Z');\\\"); d.commit()\"";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "no python3 sqlite3";
  {
    auto ro = Cache::open(path, err, Cache::Open::ReadOnly);
    ASSERT_TRUE(ro) << err;
    std::vector<CacheRow> rows;
    ASSERT_TRUE(ro->rows(rows, err)) << err;
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].m.launches, "");
  }
  auto c = Cache::open(path, err);
  ASSERT_TRUE(c) << err;
  Measurement old;
  ASSERT_TRUE(c->lookup({"m", "s", "", "e"}, old, err)) << err;
  EXPECT_DOUBLE_EQ(old.medianMs, 1.0);
  Measurement m{"ok", "", 1.5, 1.7, 1.4, 50, "{}", "", R"([{"node":"conv+relu","ms":0.25}])"};
  ASSERT_TRUE(c->store({"m", "s", "node.conv.tile=64x64", "e"}, m, err)) << err;
  Measurement got;
  ASSERT_TRUE(c->lookup({"m", "s", "node.conv.tile=64x64", "e"}, got, err)) << err;
  EXPECT_EQ(got.launches, m.launches);
  std::vector<CacheRow> rows, back;
  ASSERT_TRUE(c->rows(rows, err)) << err;
  ASSERT_TRUE(rowsFromJsonLines(rowsToJsonLines(rows), back, err)) << err;
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].m.launches + back[1].m.launches, m.launches);
}

// Reading a cache never creates one: list/show/export and merge's source open read-only and
// need the file; merge's target must exist too.
TEST(Cache, ReadingNeverCreates) {
  std::string path = tempPath("absent.db"), err;
  EXPECT_FALSE(Cache::open(path, err, Cache::Open::ReadOnly));
  EXPECT_NE(err.find("cannot open cache '" + path + "': no such file"), std::string::npos) << err;
  EXPECT_FALSE(Cache::open(path, err, Cache::Open::Existing));
  EXPECT_FALSE(std::ifstream(path).good());
  std::string target = tempPath("target.db");
  auto c = Cache::open(target, err);
  ASSERT_TRUE(c) << err;
  int64_t added = 0;
  EXPECT_FALSE(c->merge(path, added, err));
  EXPECT_NE(err.find("no such file"), std::string::npos) << err;
  EXPECT_FALSE(std::ifstream(path).good());
  // A folder is not a cache.
  EXPECT_FALSE(Cache::open(testing::TempDir(), err, Cache::Open::Create));
  EXPECT_NE(err.find("it is a directory"), std::string::npos) << err;
}

// Without $HOME and $XDG_DATA_HOME there is no default cache: never one under /tmp.
TEST(Cache, NoDefaultWithoutAHome) {
  std::string home = getenv("HOME") ? getenv("HOME") : "", xdg = getenv("XDG_DATA_HOME") ? getenv("XDG_DATA_HOME") : "";
  unsetenv("HOME");
  setenv("XDG_DATA_HOME", "relative/dir", 1);  // (not absolute: ignored, as the XDG spec says)
  std::string err;
  EXPECT_EQ(defaultCachePath(err), "");
  EXPECT_NE(err.find("no cache folder"), std::string::npos) << err;
  EXPECT_NE(err.find("--cache"), std::string::npos) << err;
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(defaultCachePath(err), "/home/someone/.local/share/kiln/tune-cache.db");
  if (!home.empty())
    setenv("HOME", home.c_str(), 1);
  else
    unsetenv("HOME");
  if (!xdg.empty())
    setenv("XDG_DATA_HOME", xdg.c_str(), 1);
  else
    unsetenv("XDG_DATA_HOME");
}

// Two processes importing into one fresh cache at the same moment (`kiln cache import` twice):
// every row of both is there, each import one transaction, in every round.
TEST(Cache, ConcurrentImportsIntoAFreshCache) {
  for (int round = 0; round < 10; ++round) {
    std::string path = tempPath("fresh" + std::to_string(round) + ".db");
    pid_t kids[2];
    for (int w = 0; w < 2; ++w) {
      kids[w] = fork();
      if (kids[w] == 0) {
        std::vector<CacheRow> rows;
        for (int i = 0; i < 50; ++i)
          rows.push_back({{"m", "", "r" + std::to_string(w) + "_" + std::to_string(i), "env"}, {"ok", "", double(i)}});
        std::string e;
        auto c = Cache::open(path, e);
        _exit(c && c->storeAll(rows, e) ? 0 : 1);
      }
    }
    for (pid_t p : kids) {
      int status = 0;
      waitpid(p, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
    }
    std::string err;
    auto c = Cache::open(path, err, Cache::Open::ReadOnly);
    ASSERT_TRUE(c) << err;
    std::vector<CacheRow> rows;
    ASSERT_TRUE(c->rows(rows, err));
    EXPECT_EQ(rows.size(), 100u) << "round " << round;
  }
}

// Two processes writing one file at once: every row of both is there.
TEST(Cache, ConcurrentWriters) {
  std::string path = tempPath("shared.db"), err;
  ASSERT_TRUE(Cache::open(path, err)) << err;
  pid_t kids[2];
  for (int w = 0; w < 2; ++w) {
    kids[w] = fork();
    if (kids[w] == 0) {
      std::string e;
      auto c = Cache::open(path, e);
      for (int i = 0; i < 100 && c; ++i)
        if (!c->store({"m", "", "r" + std::to_string(w) + "_" + std::to_string(i), "env"}, {"ok", "", double(i)}, e))
          _exit(1);
      _exit(c ? 0 : 2);
    }
  }
  for (pid_t p : kids) {
    int status = 0;
    waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto c = Cache::open(path, err);
  std::vector<CacheRow> rows;
  ASSERT_TRUE(c->rows(rows, err));
  EXPECT_EQ(rows.size(), 200u);
}

// A writer killed mid-write leaves a sound file with every committed row.
TEST(Cache, WriterKilledMidWrite) {
  std::string path = tempPath("killed.db"), err;
  ASSERT_TRUE(Cache::open(path, err)) << err;
  pid_t kid = fork();
  if (kid == 0) {
    std::string e;
    auto c = Cache::open(path, e);
    std::string big(200000, 'x');
    for (int i = 0;; ++i) c->store({"m", "", "r" + std::to_string(i), "env"}, {"ok", "", 1.0, 0, 0, 0, big}, e);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  kill(kid, SIGKILL);
  int status;
  waitpid(kid, &status, 0);
  auto c = Cache::open(path, err);
  ASSERT_TRUE(c) << err;
  std::string check;
  EXPECT_TRUE(c->integrityCheck(check)) << check;
  std::vector<CacheRow> rows;
  ASSERT_TRUE(c->rows(rows, err)) << err;
  EXPECT_GT(rows.size(), 0u);
  for (auto &r : rows) EXPECT_EQ(r.m.metrics.size(), 200000u);
  EXPECT_TRUE(c->store({"m", "", "after", "env"}, {"ok"}, err)) << err;
}

}  // namespace
}  // namespace kiln::tuner
