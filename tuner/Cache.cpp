#include "tuner/Cache.h"

#include "compiler/support/Files.h"

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <ctime>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>

namespace kiln::tuner {

namespace {

// RAII for a prepared statement.
struct Stmt {
  sqlite3_stmt *s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

std::string text(sqlite3_stmt *s, int col) {
  const unsigned char *t = sqlite3_column_text(s, col);
  return t ? reinterpret_cast<const char *>(t) : "";
}

bool mkdirs(const std::string &dir) {
  if (dir.empty()) return true;
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !mkdirs(dir.substr(0, slash))) return false;
  return mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

// How long any cache operation waits for another process's lock before it fails.
constexpr int kBusyTimeoutMs = 30000;

const char *kSchema = R"SQL(
CREATE TABLE IF NOT EXISTS kiln_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements(
  model_hash TEXT NOT NULL, shapes TEXT NOT NULL, route TEXT NOT NULL, environment TEXT NOT NULL,
  status TEXT NOT NULL, reason TEXT NOT NULL, median_ms REAL, p90_ms REAL, min_ms REAL, runs INTEGER,
  metrics TEXT NOT NULL, created TEXT NOT NULL, launches TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(model_hash, shapes, route, environment));
)SQL";

}  // namespace

std::string defaultCachePath(std::string &error) {
  const char *xdg = std::getenv("XDG_DATA_HOME");
  const char *home = std::getenv("HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/kiln/tune-cache.db";  // (relative: ignored, per XDG)
  if (home && home[0] == '/') return std::string(home) + "/.local/share/kiln/tune-cache.db";
  error = "no cache folder: neither XDG_DATA_HOME nor HOME is set to an absolute path; pass --cache FILE";
  return "";
}

bool Cache::exec(const char *sql, std::string &error) {
  char *msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) == SQLITE_OK) return true;
  error = path_ + ": " + (msg ? msg : sqlite3_errmsg(db_));
  sqlite3_free(msg);
  return false;
}

std::unique_ptr<Cache> Cache::open(const std::string &path, std::string &error, Open mode) {
  std::unique_ptr<Cache> c(new Cache());
  c->path_ = path;
  struct stat st;
  if (path.empty()) {
    error = "no cache file given";
    return nullptr;
  }
  if (::stat(path.c_str(), &st) != 0) {
    if (mode != Open::Create) {
      error = "cannot open cache '" + path + "': no such file" +
              (mode == Open::ReadOnly ? "" : " (kiln tune or cache import creates one)");
      return nullptr;
    }
    size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0 && !mkdirs(path.substr(0, slash))) {
      error = "cannot create the folder of cache '" + path + "'";
      return nullptr;
    }
  } else if (!S_ISREG(st.st_mode)) {
    error = "cannot open cache '" + path + "': it is " + support::fileKind(path) + ", not a regular file";
    return nullptr;
  }
  int flags = SQLITE_OPEN_FULLMUTEX |
              (mode == Open::ReadOnly ? SQLITE_OPEN_READONLY
                                      : SQLITE_OPEN_READWRITE | (mode == Open::Create ? SQLITE_OPEN_CREATE : 0));
  if (sqlite3_open_v2(path.c_str(), &c->db_, flags, nullptr) != SQLITE_OK) {
    error = "cannot open cache '" + path + "': " + (c->db_ ? sqlite3_errmsg(c->db_) : "out of memory");
    return nullptr;
  }
  // Other tuners may hold the write lock for a moment: wait rather than fail.
  sqlite3_busy_timeout(c->db_, kBusyTimeoutMs);
  if (mode == Open::ReadOnly) {
    int version = 0;
    Stmt s;
    int rc = sqlite3_prepare_v2(c->db_, "SELECT value FROM kiln_meta WHERE key = 'schema_version'", -1, &s.s, nullptr);
    if (rc == SQLITE_OK && sqlite3_step(s.s) == SQLITE_ROW) version = std::atoi(text(s.s, 0).c_str());
    if (version < 1 || version > kSchemaVersion) {
      error = version > kSchemaVersion ? "cache '" + path + "' has schema version " + std::to_string(version) +
                                             ", newer than this kiln's " + std::to_string(kSchemaVersion)
                                       : "cache '" + path + "' is not a kiln cache (" +
                                             (rc == SQLITE_OK ? "no schema version" : sqlite3_errmsg(c->db_)) + ")";
      return nullptr;
    }
    c->version_ = version;
    return c;
  }
  // Switching a new file to WAL takes an exclusive lock that SQLite's busy handler does not wait
  // for when another process opens the same new file at that moment: retry for the same time.
  std::string e;
  for (int waited = 0;; waited += 50) {
    e.clear();
    if (c->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", e)) break;
    if (sqlite3_errcode(c->db_) != SQLITE_BUSY || waited >= kBusyTimeoutMs) {
      error = "cache '" + path + "' cannot be used (" + e + "): is it a SQLite file?";
      return nullptr;
    }
    sqlite3_sleep(50);
  }
  if (!c->exec("BEGIN IMMEDIATE;", error)) return nullptr;
  int version = 0;
  {
    Stmt s;
    if (sqlite3_prepare_v2(c->db_, "SELECT value FROM kiln_meta WHERE key = 'schema_version'", -1, &s.s, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(s.s) == SQLITE_ROW)
      version = std::atoi(text(s.s, 0).c_str());
  }
  if (version > kSchemaVersion) {
    c->exec("ROLLBACK;", error);
    error = "cache '" + path + "' has schema version " + std::to_string(version) + ", newer than this kiln's " +
            std::to_string(kSchemaVersion) + ": use a newer kiln or another --cache";
    return nullptr;
  }
  // Migrations from older versions (version 1 is the first).
  if (version == 1 && !c->exec("ALTER TABLE measurements ADD COLUMN launches TEXT NOT NULL DEFAULT '';", error)) {
    std::string e2;
    c->exec("ROLLBACK;", e2);
    return nullptr;
  }
  std::string set =
      "INSERT OR REPLACE INTO kiln_meta VALUES('schema_version', '" + std::to_string(kSchemaVersion) + "');";
  if (!c->exec(kSchema, error) || !c->exec(set.c_str(), error) || !c->exec("COMMIT;", error)) {
    std::string e2;
    c->exec("ROLLBACK;", e2);
    return nullptr;
  }
  return c;
}

Cache::~Cache() { sqlite3_close(db_); }

bool Cache::lookup(const CacheKey &key, Measurement &out, std::string &error) {
  Stmt s;
  std::string sql = std::string("SELECT status, reason, median_ms, p90_ms, min_ms, runs, metrics, created, ") +
                    launchesColumn() +
                    " FROM measurements WHERE model_hash = ? AND shapes = ? AND route = ? AND environment = ?";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.s, nullptr) != SQLITE_OK) {
    error = path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  const std::string *k[] = {&key.modelHash, &key.shapes, &key.route, &key.environment};
  for (int i = 0; i < 4; ++i) sqlite3_bind_text(s.s, i + 1, k[i]->c_str(), -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(s.s);
  if (rc == SQLITE_DONE) {
    error.clear();
    return false;
  }
  if (rc != SQLITE_ROW) {
    error = path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  out.status = text(s.s, 0);
  out.reason = text(s.s, 1);
  out.medianMs = sqlite3_column_double(s.s, 2);
  out.p90Ms = sqlite3_column_double(s.s, 3);
  out.minMs = sqlite3_column_double(s.s, 4);
  out.runs = sqlite3_column_int64(s.s, 5);
  out.metrics = text(s.s, 6);
  out.created = text(s.s, 7);
  out.launches = text(s.s, 8);
  return true;
}

// One row, inside the caller's transaction; `added` tells whether it went in (INSERT OR IGNORE
// leaves an existing key alone).
bool Cache::insert(const CacheRow &row, bool replace, bool &added, std::string &error) {
  Measurement v = row.m;
  if (v.created.empty()) {
    char buf[32];
    std::time_t t = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    v.created = buf;
  }
  Stmt s;
  const char *sql = replace ? "INSERT OR REPLACE INTO measurements VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)"
                            : "INSERT OR IGNORE INTO measurements VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)";
  bool ok = sqlite3_prepare_v2(db_, sql, -1, &s.s, nullptr) == SQLITE_OK;
  if (ok) {
    const std::string *t[] = {&row.key.modelHash,   &row.key.shapes, &row.key.route,
                              &row.key.environment, &v.status,       &v.reason};
    for (int i = 0; i < 6; ++i) sqlite3_bind_text(s.s, i + 1, t[i]->c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s.s, 7, v.medianMs);
    sqlite3_bind_double(s.s, 8, v.p90Ms);
    sqlite3_bind_double(s.s, 9, v.minMs);
    sqlite3_bind_int64(s.s, 10, v.runs);
    sqlite3_bind_text(s.s, 11, v.metrics.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s.s, 12, v.created.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s.s, 13, v.launches.c_str(), -1, SQLITE_TRANSIENT);
    ok = sqlite3_step(s.s) == SQLITE_DONE;
  }
  if (!ok) {
    error = path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  added = sqlite3_changes(db_) > 0;
  return true;
}

bool Cache::store(const CacheKey &key, const Measurement &m, std::string &error) { return storeAll({{key, m}}, error); }

bool Cache::storeAll(const std::vector<CacheRow> &rows, std::string &error) {
  if (!exec("BEGIN IMMEDIATE;", error)) return false;
  bool added;
  for (const CacheRow &r : rows)
    if (!insert(r, true, added, error)) {
      std::string e2;
      exec("ROLLBACK;", e2);
      return false;
    }
  return exec("COMMIT;", error);
}

bool Cache::rows(std::vector<CacheRow> &out, std::string &error, const std::string &modelPrefix) {
  Stmt s;
  std::string sql =
      std::string("SELECT model_hash, shapes, route, environment, status, reason, median_ms, p90_ms, min_ms, "
                  "runs, metrics, created, ") +
      launchesColumn() + " FROM measurements WHERE model_hash LIKE ? || '%' ORDER BY model_hash, route";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.s, nullptr) != SQLITE_OK) {
    error = path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  sqlite3_bind_text(s.s, 1, modelPrefix.c_str(), -1, SQLITE_TRANSIENT);
  int rc;
  while ((rc = sqlite3_step(s.s)) == SQLITE_ROW) {
    CacheRow r;
    r.key = {text(s.s, 0), text(s.s, 1), text(s.s, 2), text(s.s, 3)};
    r.m.status = text(s.s, 4);
    r.m.reason = text(s.s, 5);
    r.m.medianMs = sqlite3_column_double(s.s, 6);
    r.m.p90Ms = sqlite3_column_double(s.s, 7);
    r.m.minMs = sqlite3_column_double(s.s, 8);
    r.m.runs = sqlite3_column_int64(s.s, 9);
    r.m.metrics = text(s.s, 10);
    r.m.created = text(s.s, 11);
    r.m.launches = text(s.s, 12);
    out.push_back(r);
  }
  if (rc != SQLITE_DONE) {
    error = path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  return true;
}

// Deletes the rows that `where` selects (its ?1, ?2... bound to `values`) in one transaction.
bool Cache::deleteWhere(const char *where, const std::vector<std::string> &values, int64_t &deleted,
                        std::string &error) {
  Stmt s;
  if (!exec("BEGIN IMMEDIATE;", error)) return false;
  bool ok = sqlite3_prepare_v2(db_, (std::string("DELETE FROM measurements WHERE ") + where).c_str(), -1, &s.s,
                               nullptr) == SQLITE_OK;
  for (size_t k = 0; ok && k < values.size(); ++k)
    sqlite3_bind_text(s.s, int(k + 1), values[k].c_str(), -1, SQLITE_TRANSIENT);
  ok = ok && sqlite3_step(s.s) == SQLITE_DONE;
  if (!ok) {
    error = path_ + ": " + sqlite3_errmsg(db_);
    std::string e2;
    exec("ROLLBACK;", e2);
    return false;
  }
  deleted = sqlite3_changes(db_);
  return exec("COMMIT;", error);
}

bool Cache::gc(const std::string &keepKilnVersion, int64_t &deleted, std::string &error) {
  return deleteWhere("instr(environment, ?1) = 0", {"kiln=" + keepKilnVersion + ";"}, deleted, error);
}

bool Cache::prune(const std::string &createdBefore, const std::string &environment, int64_t &deleted,
                  std::string &error) {
  return deleteWhere("(?1 = '' OR created < ?1) AND (?2 = '' OR environment = ?2)", {createdBefore, environment},
                     deleted, error);
}

bool Cache::merge(const std::string &otherPath, int64_t &added, std::string &error) {
  std::unique_ptr<Cache> other = open(otherPath, error, Open::ReadOnly);  // validates it, changes nothing
  if (!other) return false;
  std::vector<CacheRow> theirs;
  if (!other->rows(theirs, error)) return false;
  added = 0;
  if (!exec("BEGIN IMMEDIATE;", error)) return false;
  for (const CacheRow &r : theirs) {
    bool in = false;
    if (!insert(r, false, in, error)) {
      std::string e2;
      exec("ROLLBACK;", e2);
      return false;
    }
    added += in;
  }
  return exec("COMMIT;", error);
}

bool Cache::integrityCheck(std::string &result) {
  Stmt s;
  if (sqlite3_prepare_v2(db_, "PRAGMA integrity_check", -1, &s.s, nullptr) != SQLITE_OK) {
    result = sqlite3_errmsg(db_);
    return false;
  }
  result.clear();
  while (sqlite3_step(s.s) == SQLITE_ROW) result += text(s.s, 0);
  return result == "ok";
}

nlohmann::json rowToJson(const CacheRow &r) {
  nlohmann::json j = {{"model_hash", r.key.modelHash}, {"shapes", r.key.shapes},
                      {"route", r.key.route},          {"environment", r.key.environment},
                      {"status", r.m.status},          {"reason", r.m.reason},
                      {"median_ms", r.m.medianMs},     {"p90_ms", r.m.p90Ms},
                      {"min_ms", r.m.minMs},           {"runs", r.m.runs},
                      {"metrics", r.m.metrics},        {"created", r.m.created}};
  if (!r.m.launches.empty()) j["launches"] = r.m.launches;
  return j;
}

std::string rowsToJsonLines(const std::vector<CacheRow> &rows) {
  std::string out;
  for (const CacheRow &r : rows) out += rowToJson(r).dump() + "\n";
  return out;
}

bool rowsFromJsonLines(const std::string &text, std::vector<CacheRow> &out, std::string &error) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      nlohmann::json j = nlohmann::json::parse(line);
      CacheRow r;
      r.key = {j.at("model_hash"), j.at("shapes"), j.at("route"), j.at("environment")};
      r.m.status = j.at("status");
      r.m.reason = j.value("reason", "");
      r.m.medianMs = j.value("median_ms", 0.0);
      r.m.p90Ms = j.value("p90_ms", 0.0);
      r.m.minMs = j.value("min_ms", 0.0);
      // (a float where an integer belongs is an error: converting 1e300 to int64 is undefined)
      if (j.contains("runs") && !j.at("runs").is_number_integer())
        throw std::invalid_argument("'runs' is not an integer");
      r.m.runs = j.value("runs", int64_t(0));
      r.m.metrics = j.value("metrics", "");
      r.m.created = j.value("created", "");
      r.m.launches = j.value("launches", "");
      out.push_back(r);
    } catch (const std::exception &e) {
      error = "line " + std::to_string(n) + ": " + e.what();
      return false;
    }
  }
  return true;
}

}  // namespace kiln::tuner
