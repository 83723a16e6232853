// The tuning cache: every measurement in SQLite (WAL journal, busy timeout, one transaction per
// result), keyed by everything that could change it — model hash, input shapes, route and the
// environment fingerprint (GPU name, sm, SM count, memory clock, driver, NVRTC and kiln
// versions). A changed environment is a miss, never a wrong hit. Several tuners may share one
// file. The schema is versioned: an older file is migrated, a newer one refused.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct sqlite3;

namespace kiln::tuner {

struct CacheKey {
  // `shapes` holds the --shapes overrides and the hashes of the input data and of the reference
  // outputs the accuracy was measured against ("x:1x3|inputs=…|reference=…").
  std::string modelHash, shapes, route, environment;
};

struct Measurement {
  std::string status;  // ok, build_failed, run_failed, timeout, inaccurate
  std::string reason;  // why, for the failures
  double medianMs = 0, p90Ms = 0, minMs = 0;
  int64_t runs = 0;
  std::string metrics;  // JSON: accuracy per output
  std::string created;  // UTC time of the measurement
  // JSON: each launch timed alone ([{"node": "conv+bn+relu", "ms": 0.012}, ...]) when the
  // candidate was profiled (--search nodes), else "".
  std::string launches;
};

struct CacheRow {
  CacheKey key;
  Measurement m;
};

class Cache {
 public:
  // 2: measurements gained `launches` (a version-1 file is migrated when opened for writing).
  static constexpr int kSchemaVersion = 2;
  enum class Open {
    Create,    // read-write, creating the file (and its folder) when missing: tune, import
    Existing,  // read-write, the file must exist: merge's target, gc
    ReadOnly,  // the file must exist and is not changed (nor migrated): list, show, export, merge's source
  };
  // Null with `error` when it cannot be opened, is missing (but for Create), is not a kiln cache,
  // or has a newer schema. Every wait for another process's lock is bounded by the busy timeout.
  static std::unique_ptr<Cache> open(const std::string &path, std::string &error, Open mode = Open::Create);
  ~Cache();

  bool lookup(const CacheKey &key, Measurement &out, std::string &error);
  // Inserts or replaces the measurement of `key` in its own transaction.
  bool store(const CacheKey &key, const Measurement &m, std::string &error);
  // Inserts or replaces every row in one transaction (BEGIN IMMEDIATE): all of them or none,
  // whatever other processes write at the same time (`kiln cache import`).
  bool storeAll(const std::vector<CacheRow> &rows, std::string &error);
  // Every row (optionally only those whose model hash starts with `modelPrefix`).
  bool rows(std::vector<CacheRow> &out, std::string &error, const std::string &modelPrefix = "");
  // Deletes rows whose environment does not mention `keepKilnVersion` (kiln=VERSION); returns
  // how many went.
  bool gc(const std::string &keepKilnVersion, int64_t &deleted, std::string &error);
  // Deletes the measurements made before `createdBefore` (an ISO 8601 UTC time as the cache
  // writes them, "" for any time) in `environment` ("" for any environment).
  bool prune(const std::string &createdBefore, const std::string &environment, int64_t &deleted, std::string &error);
  // Copies every row of another cache file in (an existing key keeps this cache's row), in one
  // transaction. The other file must exist; it is opened read-only.
  bool merge(const std::string &otherPath, int64_t &added, std::string &error);

  // SQLite's own consistency check of the file ("ok" when sound).
  bool integrityCheck(std::string &result);

  const std::string &path() const { return path_; }

 private:
  Cache() = default;
  bool exec(const char *sql, std::string &error);
  bool deleteWhere(const char *where, const std::vector<std::string> &values, int64_t &deleted, std::string &error);
  bool insert(const CacheRow &row, bool replace, bool &added, std::string &error);
  // The column list of SELECTs: a version-1 file opened read-only has no `launches` column.
  const char *launchesColumn() const { return version_ >= 2 ? "launches" : "''"; }
  sqlite3 *db_ = nullptr;
  std::string path_;
  int version_ = kSchemaVersion;
};

// Rows as JSON lines (one object per row) and back, for export/import between machines.
// One row as the JSON object export writes (one per line) and `kiln cache list --json` lists.
nlohmann::json rowToJson(const CacheRow &row);
std::string rowsToJsonLines(const std::vector<CacheRow> &rows);
bool rowsFromJsonLines(const std::string &text, std::vector<CacheRow> &out, std::string &error);

// The default cache file: $XDG_DATA_HOME/kiln/tune-cache.db, else ~/.local/share/kiln/...; ""
// with `error` when neither variable is set to an absolute path (kiln never falls back to a
// world-writable folder such as /tmp: pass --cache).
std::string defaultCachePath(std::string &error);

}  // namespace kiln::tuner
